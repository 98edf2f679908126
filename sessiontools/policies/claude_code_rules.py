"""Claude Code's auto-compaction rule per CLI version: the table (data) and `rule_for(version)`.

Every row says how it was established: **read** (the constants and functions of that release's bundled
`cli.js`, `@anthropic-ai/claude-code@V` from npm, found from `isAboveAutoCompactThreshold`) or
**measured** (the real CLI of that version run offline against the lab server, `lab/claude_env.py`
`ensure_claude(V)`, `lab/generate_claude.py`; the samples in `sample_sessions/claude-code/`). Releases
from about 2.1.1xx on ship a native binary only (the JS is compiled in); their rows can only be
measured. The README has the same table for users ("Claude Code's rule per version").

What every row shares (read in all of them): the threshold T = E - 13000, with
`CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=P` (from 2.0.20) T = min(floor(E x P / 100), E - 13000); the effective
window E = W - R, R the output reserve (see `output_reserve`); W the model's window (`context_window`);
the count is compared with `count >= T` before each model request (a turn's first and each one after
tool results); the usage of a response is input + cache creation + cache read + output.

What changed (each a column of `ClaudeCodeRule`):

- **2.0.0 - 2.1.1** (the percentage override from 2.0.20): the count is the usage of the newest response alone; R = min(32000, model max)
  (`CLAUDE_CODE_MAX_OUTPUT_TOKENS` defaults to 32000): T = 200000 - 32000 - 13000 = **155000** on the
  200k claude-*-4-x models. The compaction keeps nothing (the summary alone; lab 2.0.77).
- **2.1.2 - 2.1.20**: the count adds an estimate of the messages after that response: Math.round(len/4)
  per text block and tool-result text (tool_use blocks are not counted, an image 1334).
- **2.1.21 - 2.1.73**: R is capped at 20000: T = 200000 - 20000 - 13000 = **167000**. From 2.1.45
  (2.1.44 not yet) the estimate also counts the attachment lines after the newest response (the
  `<system-reminder>` text Claude Code sends for each, `transcript.claude_attachments`; only a file
  the user edited is rendered: a real 2.1.132 file compacted at 168,212 = usage + 2,143 for one), as
  every later JS row does (2.1.63 also counts an image as 2000).
- **2.1.74**: the estimate also counts tool_use blocks (name + JSON input) and thinking, an image or
  document 2000 (Math.round(len/4) per block).
- **2.1.75 - 2.1.97**: `CLAUDE_CODE_AUTO_COMPACT_WINDOW` (100000 - 1000000; W = min(model window, it)).
- **2.1.98 - 2.1.139** (2.1.112 the last JS release; measured: 2.1.112): the estimate starts after the
  newest response's *first* line (its other lines, one per content block, are counted by the estimate).
  2.1.111 adds a gate behind a remote flag (off by default, never in print mode); the native 2.1.113
  has the same check (read: `autocompact: tokens=` in the JS its binary embeds); 2.1.137 - 2.1.139 gate
  only 1M-window models (a 200k model compacts at T as before: the real 2.1.119 - 2.1.136 files compact
  at 167k - 173k of recorded usage without a configured window).
- **2.1.140 - 2.1.152** (read: the 2.1.140 - 2.1.143, 2.1.150, 2.1.152 binaries; measured: 2.1.150):
  the estimate divides by the model's bytes per token (4 for the families listed in
  `policies.claude_code.FOUR_BYTES_PER_TOKEN`, the same list in 2.1.150 and 2.1.222, else 3):
  Math.round(len / bytes) per block by the 2.1.74 block rules (2.1.139 divides by 4); the gate
  still applies to 1M-window models only, so print mode compacts at T without a window (measured). The
  file-restore constants are those of 2.1.112. No reactive compaction (measured: 2.1.150 and 2.1.152
  against a lab limit of 13,000 answer "Prompt is too long" and exit 1; 2.1.153 compacts and retries).
- **2.1.153 on** (measured on 2.1.332, `policies.claude_code`; the gate and the estimator read in the
  JS embedded in the 2.1.153, 2.1.154, 2.1.160, 2.1.167, 2.1.195, 2.1.210, 2.1.221, 2.1.222 and
  2.1.332 binaries; 2.1.152 has the 1M-only gate): the estimate is ceil(chars / bytes per token),
  4 for the model families the release lists, 3 for the others (the lab's model: ceil(chars/4 x 4/3)), over text,
  tool_use name + JSON input and tool-result text, counted from the *first* line of the newest response;
  `CLAUDE_CODE_AUTO_COMPACT_WINDOW` (at least 100000) sets W; a threshold compaction keeps the last
  round of the turn. The threshold runs only when an auto-compact window is configured (environment
  or `autoCompactWindow` setting, or from 2.1.167 the "model-default" window 2.1.167 - 2.1.222 give
  claude-sonnet-4-6 and claude-opus-4-6 below 1M): `if (notRemote() && !flag() &&
  !configured(window)) return false`, which is why 2.1.222 and 2.1.332 never compacted at the model's
  own window in the lab; without one they compact reactively only (measured on 2.1.153 against a
  lab limit of 13,000: it compacts and retries). The model-default window is `model_default_window`
  (2.1.221 on also for claude-opus-4-8 and claude-opus-5; 2.1.332 decides otherwise, not decoded).

- **reactive** (`reactive`): the JS releases (1.0.89 - 2.1.112) never compact after the API's `prompt
  is too long`: the error ends the turn (written as an assistant line "Prompt is too long") and the
  user runs `/compact` (read: 2.0.2 - 2.1.30 have no reactive compaction; the `tryReactiveCompact`
  hook of 2.1.63 - 2.1.97 is `null` in the published builds, 2.1.110 and 2.1.112 have none; the real
  transcripts show the error, then a manual boundary; measured: 2.1.112 against a lab limit of 13000
  answers "Prompt is too long", exits 1 and writes no boundary, tests/e2e/test_claude_cli.py). 2.1.332
  compacts and retries (measured, `claude-reactive.jsonl`).
- **auto-compact off** (not a column: a user setting). Every release checks `autoCompactEnabled` (the
  global config, read at each check; default true) and the environment (`DISABLE_COMPACT`,
  `DISABLE_AUTO_COMPACT`) before its threshold. The setting is toggled in `/config` and saved at once;
  the transcript records the `/config` command and the dialog's closing line, which names the change
  ("Disabled auto-compact", cli.js 2.0.77) only when the dialog is left from its Config tab (else
  "Status dialog dismissed"); the environment is never recorded. `policies.claude_code_recorded.default_policy`
  takes a file whose requests went past T with no threshold compaction as auto-compact off
  (`auto_compact_off`); a switch *within* a session (a real 2.0.76 file: two threshold
  compactions, then `/config` closed with "Status dialog dismissed" between a request at 154.9k and
  the next at 155.4k, and its remaining 44 requests sent at up to 170k without a compaction) is read
  the same way from the first request after the last threshold compaction sent with the count at or
  above T (`threshold_off_from`, `Policy.threshold_off_from`): the walk's threshold checks from there
  never fire, at any replayed window (the user's setting, not the window, switched it off).
- **kept** (`keeps`): after its summary every JS release re-reads the 5 most recently read files
  (`RESTORE_*`, the same constants in 1.0.89 - 2.1.112) and attaches them; they are never written to
  the transcript, so a process that reloads it (print mode's next prompt, `--continue`) has lost them.

The window (`context_window`): 1,000,000 for a model id with `[1m]` (or the 1M beta on a model that
has it), else 200,000, in every release read (2.0.2 - 2.1.63); 2.1.63 also gives claude-opus-4-6 1M
behind a runtime flag (not decoded) the transcript does not record (not modelled: 200k).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum

from sessiontools.policies.version import parse_version

#: Every release read: the model's window without the 1M option.
DEFAULT_WINDOW = 200_000
#: `[1m]` models (and the 1M context beta).
LONG_WINDOW = 1_000_000
#: `CLAUDE_CODE_MAX_OUTPUT_TOKENS`'s default in every JS release read (2.0.2 - 2.1.63).
DEFAULT_MAX_OUTPUT = 32_000
#: T = E - AUTOCOMPACT_BUFFER in every release.
AUTOCOMPACT_BUFFER = 13_000
#: The smallest `CLAUDE_CODE_AUTO_COMPACT_WINDOW` (2.1.75 on).
MIN_AUTO_COMPACT_WINDOW = 100_000
#: After a compaction the JS releases (1.0.89 - 2.1.112, the same three constants in each; and the JS
#: embedded in the 2.1.132, 2.1.139, 2.1.140, 2.1.143, 2.1.150, 2.1.152 and 2.1.153 binaries: the
#: restore function's file count from its callers, its per-file `maxTokens` and its budget) re-read the
#: RESTORE_FILES most recently read files, each at most RESTORE_FILE_TOKENS (a larger one fails to
#: read and is left out), while the total stays within RESTORE_TOTAL_TOKENS, and attach them after the
#: summary (not written to the transcript).
RESTORE_FILES = 5
RESTORE_FILE_TOKENS = 5_000
RESTORE_TOTAL_TOKENS = 50_000


class Count(StrEnum):
    """What Claude Code compares with T."""

    USAGE = "usage"  # the newest response's usage alone
    USAGE_ROUND4 = "usage+round(chars/4)"  # + Math.round(len/4) per text / tool-result block after it
    #: + Math.round(len/4) per text, tool-result, tool_use (name + JSON input) and thinking block, an
    #: image or document 2000 (2.1.74 - 2.1.112)
    USAGE_ROUND4_ALL = "usage+round(chars/4), calls and thinking too"
    #: + Math.round(len / bytes per token) per block by the 2.1.74 block rules, 4 or 3 bytes by model
    #: (`policies.claude_code.bytes_per_token`; the native 2.1.140 - 2.1.152)
    USAGE_ROUND_BPT_ALL = "usage+round(chars/bytes per token), calls and thinking too"
    USAGE_CEIL4_X4_3 = "usage+ceil(chars/4*4/3)"  # + ceil(chars/4 x 4/3), tool_use included (2.1.332)


class Keeps(StrEnum):
    """What a threshold compaction keeps besides the summary."""

    NOTHING = "nothing"
    READ_FILES = "read files"  # the JS releases: the 5 most recently read files restored (see `RESTORE_*`)
    LAST_ROUND = "last round"


@dataclass(frozen=True, slots=True)
class ClaudeCodeRule:
    """One row of the table: the rule of the releases `first` .. `last` (inclusive)."""

    first: str
    last: str | None  # None: up to the next row
    count: Count
    output_reserve_cap: int | None  # R = min(max output, cap); None: R = max output
    keeps: Keeps
    pct_override: bool  # CLAUDE_AUTOCOMPACT_PCT_OVERRIDE honoured
    auto_compact_window_env: bool  # CLAUDE_CODE_AUTO_COMPACT_WINDOW honoured
    reactive: bool  # compacts and retries after the API's `prompt is too long`
    how: str  # how the row was established (read / measured, where)
    from_first_line: bool = False  # the estimate starts after the newest response's first line (2.1.98 on)
    #: The threshold compaction runs only with a configured auto-compact window (the environment's
    #: `CLAUDE_CODE_AUTO_COMPACT_WINDOW` or the `autoCompactWindow` setting); else only reactively.
    threshold_needs_window: bool = False
    #: The estimate counts the attachment lines after the newest response (the text Claude Code sends
    #: for them, `transcript.claude_attachments`; 2.1.45 - 2.1.152 read).
    counts_attachments: bool = False

    @property
    def counts_own_reply(self) -> bool:
        """The estimate starts after the newest response's *first* line (2.1.98 on), not its last."""
        return self.from_first_line or self.count is Count.USAGE_CEIL4_X4_3

    @property
    def label(self) -> str:
        return f"{self.first}-{self.last}" if self.last else f"{self.first}+"


RULES: tuple[ClaudeCodeRule, ...] = (
    ClaudeCodeRule("2.0.0", "2.0.19", Count.USAGE, None, Keeps.READ_FILES, False, False, False,
                   "read: cli.js of 2.0.2, 2.0.10, 2.0.13, 2.0.15, 2.0.19 (no CLAUDE_AUTOCOMPACT_PCT_OVERRIDE yet) "
                   "and of 1.0.89 (the same rule: older releases get this row)"),
    ClaudeCodeRule("2.0.20", "2.1.1", Count.USAGE, None, Keeps.READ_FILES, True, False, False,
                   "read: cli.js of 2.0.20, 2.0.30, 2.0.50, 2.0.70, 2.0.77, 2.1.0, 2.1.1; "
                   "measured: 2.0.77 and 2.1.1 on the lab"),
    ClaudeCodeRule("2.1.2", "2.1.20", Count.USAGE_ROUND4, None, Keeps.READ_FILES, True, False, False,
                   "read: cli.js of 2.1.2, 2.1.3, 2.1.4, 2.1.5, 2.1.12, 2.1.14, 2.1.19, 2.1.20; "
                   "measured: 2.1.12 on the lab"),
    ClaudeCodeRule("2.1.21", "2.1.44", Count.USAGE_ROUND4, 20_000, Keeps.READ_FILES, True, False, False,
                   "read: cli.js of 2.1.21, 2.1.22, 2.1.23, 2.1.27, 2.1.30 - 2.1.34, 2.1.36 - 2.1.39, 2.1.41, "
                   "2.1.42, 2.1.44 (attachment lines not counted); measured: 2.1.21 on the lab"),
    ClaudeCodeRule("2.1.45", "2.1.73", Count.USAGE_ROUND4, 20_000, Keeps.READ_FILES, True, False, False,
                   "read: cli.js of 2.1.45 (the estimate counts attachment lines: 2.1.44 not yet), 2.1.55, 2.1.63, "
                   "2.1.69, 2.1.72, 2.1.73; measured: 2.1.63 on the lab", counts_attachments=True),
    ClaudeCodeRule("2.1.74", "2.1.74", Count.USAGE_ROUND4_ALL, 20_000, Keeps.READ_FILES, True, False, False,
                   "read: cli.js of 2.1.73 (not yet) and 2.1.74", counts_attachments=True),
    ClaudeCodeRule("2.1.75", "2.1.97", Count.USAGE_ROUND4_ALL, 20_000, Keeps.READ_FILES, True, True, False,
                   "read: cli.js of 2.1.75, 2.1.76, 2.1.84, 2.1.90, 2.1.97", counts_attachments=True),
    ClaudeCodeRule("2.1.98", "2.1.139", Count.USAGE_ROUND4_ALL, 20_000, Keeps.READ_FILES, True, True, False,
                   "read: cli.js of 2.1.98, 2.1.100, 2.1.104, 2.1.105, 2.1.110, 2.1.111, 2.1.112 (the last JS "
                   "release) and the JS in the native binaries of 2.1.113 (the same check), 2.1.137, 2.1.138 and "
                   "2.1.139 (the same estimate; the window gate only for 1M-window models); measured: 2.1.112 "
                   "on the lab; real files 2.1.119 - 2.1.136: 8 of 8 threshold compactions reproduced",
                   from_first_line=True, counts_attachments=True),
    ClaudeCodeRule("2.1.140", "2.1.152", Count.USAGE_ROUND_BPT_ALL, 20_000, Keeps.READ_FILES, True, True, False,
                   "read: the JS in the native binaries of 2.1.140, 2.1.141, 2.1.142, 2.1.143, 2.1.150 and 2.1.152: "
                   "Math.round(len / bytes per token) per block (4 or 3 by model; 2.1.139 divides by 4); the "
                   "window gate only for 1M-window models; the file-restore constants (5 / 5000 / 50000) as "
                   "in 2.1.112; measured: 2.1.150 on the lab (print mode, no window: it compacts at T); 2.1.150 and "
                   "2.1.152 against a lab limit of 13000: \"Prompt is too long\", exit 1, no compaction "
                   "(tests/fixtures/claude_probes; 2.1.153 compacts and retries)", from_first_line=True,
                   counts_attachments=True),
    ClaudeCodeRule("2.1.153", None, Count.USAGE_CEIL4_X4_3, 20_000, Keeps.LAST_ROUND, True, True, True,
                   "measured: 2.1.332 on the lab (356 responses, 35 compactions; policies.claude_code); read: "
                   "the JS embedded in the native binaries of 2.1.153, 2.1.154, 2.1.160, 2.1.167, 2.1.195, "
                   "2.1.210, 2.1.221, 2.1.222 and 2.1.332 (the threshold needs a configured auto-compact "
                   "window: `if (notRemote() && !flag() && !configured(window)) return false`; 2.1.152 gates "
                   "only 1M-window models); what is kept and the reactive retry measured on 2.1.332 only",
                   threshold_needs_window=True),
)
#: The rule when the file records no version (the newest measured one).
NEWEST = RULES[-1]


def rule_for(version: str | None) -> ClaudeCodeRule:
    """The row for a Claude Code version (the newest row at or below it); `NEWEST` when the version is
    unknown or older than every row."""
    v = parse_version(version)
    if v is None:
        return NEWEST
    best = None
    for r in RULES:
        first = parse_version(r.first)
        assert first is not None
        if first <= v:
            best = r
    return best or RULES[0]


#: The "model-default" auto-compact window (the JS embedded in the native binaries): a model whose
#: window is below 1M and whose family a release lists gets W = min(its window, 200000) with the
#: source `model-default`, which counts as configured, so the 2.1.153 row's threshold runs without
#: `CLAUDE_CODE_AUTO_COMPACT_WINDOW`: `if (window < 1e6 && MODELS.has(canonical)) return {window:
#: Math.min(window, 200000), source: "model-default"}`. (first release, the families it lists): read
#: in 2.1.160 (none yet), 2.1.167, 2.1.195, 2.1.210 (two), 2.1.221, 2.1.222 (four). 2.1.332 has no
#: family list (read from its binary's JS): after the env, settings, server client data and
#: experiments, it gives `model-default` (1) 200k when the model's window is above 200k and the
#: account's 1M long-context credits are blocked, or CLAUDE_CODE_DISABLE_1M_CONTEXT is set and the
#: API's window is above 200k; (2) else a window the server serves for the model, or its built-in
#: table's (only `claude-sonnet-5`: 1M, 500k on the remote-cowork and local-agent surfaces), capped by
#: the model's window, on a condition not decoded; (3) else the model's window when it is below the
#: API's un-opted-in one; else none (`auto`). Account state and served data are not in the file, so
#: none is taken here. The releases between two read ones are taken as the older one's.
MODEL_DEFAULT_WINDOW = 200_000
MODEL_DEFAULT_FAMILIES: tuple[tuple[str, frozenset[str]], ...] = (
    ("2.1.167", frozenset({"claude-sonnet-4-6", "claude-opus-4-6"})),
    ("2.1.221", frozenset({"claude-sonnet-4-6", "claude-opus-4-6", "claude-opus-4-8", "claude-opus-5"})),
    ("2.1.332", frozenset()),
)


def model_family(model: str | None) -> str:
    """A model id reduced to its family as Claude Code's tables list it: the provider prefix, `[1m]`, a
    date suffix or `-latest` dropped; `.`/`_` as `-`; a bare `claude-opus-4` / `claude-sonnet-4` is the
    `-0` release."""
    m = (model or "").lower().split("/")[-1].split("[")[0].replace(".", "-").replace("_", "-")
    m = re.sub(r"-\d{8}$", "", m).removesuffix("-latest")
    return m + "-0" if m in ("claude-opus-4", "claude-sonnet-4") else m


def model_default_window(version: str | None, model: str | None, window: int = DEFAULT_WINDOW) -> int | None:
    """The "model-default" auto-compact window `version` gives `model` running at `window`
    (`MODEL_DEFAULT_FAMILIES`), or None (none: the 2.1.153 row then compacts reactively only)."""
    v = parse_version(version)
    if v is None or window >= LONG_WINDOW:
        return None
    families: frozenset[str] = frozenset()
    for first, listed in MODEL_DEFAULT_FAMILIES:
        if (parse_version(first) or ()) <= v:
            families = listed
    return min(window, MODEL_DEFAULT_WINDOW) if model_family(model) in families else None


def context_window(model: str | None) -> int:
    """The window Claude Code assumes for a model: 1M for `[1m]` ids, else 200k (every release read)."""
    return LONG_WINDOW if model and "[1m]" in model.lower() else DEFAULT_WINDOW


def model_max_output(model: str | None) -> int:
    """The model's own output ceiling as the JS releases list it (`claude-3-5-*` 8192, `claude-3-opus` /
    `claude-3-haiku` 4096, `opus-4` / `opus-4-1` 32000, the other 4.x models 64000, unknown 32000)."""
    m = (model or "").lower()
    if "3-5" in m or "claude-3-sonnet" in m:
        return 8192
    if "claude-3-opus" in m or "claude-3-haiku" in m:
        return 4096
    if any(k in m for k in ("opus-4-5", "opus-4-6", "sonnet-4", "haiku-4", "3-7-sonnet")):
        return 64_000
    if "opus-4" in m:
        return 32_000
    return DEFAULT_MAX_OUTPUT


def output_reserve(rule: ClaudeCodeRule, model: str | None, max_output_tokens: int | None = None) -> int:
    """R: the max output tokens (`max_output_tokens`, else min(32000, the model's ceiling)), capped by the
    row's cap."""
    out = max_output_tokens if max_output_tokens is not None else min(DEFAULT_MAX_OUTPUT, model_max_output(model))
    return min(out, rule.output_reserve_cap) if rule.output_reserve_cap is not None else out


def threshold(rule: ClaudeCodeRule, window: int, model: str | None = None, pct: float | None = None,
              max_output_tokens: int | None = None) -> int:
    """T for a row: E = W - R, T = E - 13000, or min(floor(E x P / 100), E - 13000)."""
    if rule.auto_compact_window_env:  # --context-window is then the auto-compact window (>= 100000)
        window = max(window, MIN_AUTO_COMPACT_WINDOW)
    e = window - output_reserve(rule, model, max_output_tokens)
    if pct is None or not rule.pct_override:
        return e - AUTOCOMPACT_BUFFER
    return min(math.floor(e * pct / 100), e - AUTOCOMPACT_BUFFER)  # (JavaScript's Math.floor of the quotient)


def js_round(n: int, d: int) -> int:
    """Math.round(n / d) (halves up)."""
    return (2 * n + d) // (2 * d)
