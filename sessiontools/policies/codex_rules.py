"""Codex's auto-compaction rule per CLI version: the table (data) and `rule_for(version)`.

Every row was **measured**: the real CLI of that version (`@openai/codex@V` from npm, `lab/codex_env.py`
`ensure_codex(V)`) run offline against the lab server (`lab/codex_rules_probe.py`, which records the
probes below and replays them under this table), and checked against the codex-rs source where a stored
copy could be read (the release tags themselves could not be fetched: the repository is too large).
The README has the same table for users ("Codex's rule per version"). The probes:

- **C**: `model_context_window = 30000`, `model_auto_compact_token_limit = 28500` (90% = 27000), 40
  prompts: a release that caps the explicit limit compacts from 27000 on, one that does not from 28500;
- **D**: the same with no limit: 90% of the configured window (27000) for `lab-model`, or none at all;
- **K**: `model = "gpt-5.1-codex"`, no window, no limit, the lab adding 232,800 hidden tokens to every
  request: compacts from 244,800 = 90% of the 272,000 codex-rs gives gpt-5* models (0.63, 0.77, 0.121,
  0.171);
- **P**: window 64000, limit 20000, 24 prompts (mid-turn compactions with large tool outputs);
- **R**: P's settings, 16 prompts, each response opening with 4,000 characters of encrypted reasoning;
- **G1 - G4**: one prompt, `model = "gpt-5-codex"`, no window, no limit, 216,000 / 240,000 / 246,000 /
  346,000 hidden tokens (last totals just over 220,000, 244,800, 250,000, 350,000: the limits before 0.63);
- every check point of those recordings replayed with each combination of the columns below: the
  combination that reproduces every recorded compaction with none extra is the release's.

35 releases measured (0.40, 0.42, 0.44, 0.45, 0.47, 0.49, 0.50, 0.63, 0.64, 0.65, 0.66, 0.72, 0.73, 0.74, 0.75, 0.77, 0.80, 0.87, 0.90, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99, 0.100, 0.105,
0.110, 0.116, 0.121, 0.145, 0.150, 0.155, 0.163, 0.171), 73 probe recordings (C, D, K, P, R), 274
compactions: this table reproduces all 274 with none extra (and all 32 of the 10 samples in
`sample_sessions/codex/`); of G1 - G3's 12 recordings and 3 compactions, all, none extra.

What every row from 0.49 shares: `token_count.model_context_window` reports 95% of the configured
window (`effective_context_window_percent`, 95 in every release read; before 0.49 the whole window); the default limit is 90% of the
window (`context_window * 9 / 10`); the check is `count >= limit`, after each model response that
needs a follow-up (mid-turn); no release is reactive (`context_length_exceeded` fails the turn).

What changed (each a column of `CodexRule`):

- **0.63** (codex-rs `codex.rs` `run_task` of that time: `total_token_usage.tokens_in_context_window()`
  of the last response, checked after every response; `config.rs`: the explicit limit, else the model
  family's): the count is the last response's `total_tokens` alone, checked after a final answer too;
  an explicit limit is used as given, even above 90% of the window; with none, a model codex-rs knows
  gets 90% of *its own* window (244,800 for gpt-5*), an unknown one never auto-compacts (it runs out of
  room). `compacted` lines have no `replacement_history`.
- **0.77** (`model_family.rs` `auto_compact_token_limit()`: `.or(context_window.map(90%))`, the
  configured window included): no explicit limit -> 90% of the configured window for any model; only
  mid-turn checks (measured 0.77, 0.80, 0.87, 0.90).
- **0.94**: a check before a turn again; a resumed turn (`codex exec resume`) writes its initial
  context again *before* that check, the prompt after it (`context_before_pre_turn_check`: 0.94,
  0.99, 0.100; codex-rs `run_task` of that time checks before recording the user input);
  **0.95**: the count adds ceil(bytes/4) of the items after the newest model-generated item, and
  the re-written context comes after the check (0.95 - 0.98); **0.99**: before it again, so it is
  counted; **0.100**: the explicit limit is capped at 90% of the window
  (`ModelInfo::auto_compact_token_limit()` min(config, 90%)); **0.110**: `compacted` carries the
  replacement history, and the pre-turn check runs before the turn's context is written (codex-rs
  `run_turn`: "Pre-turn compaction runs before context updates and the new user message are
  recorded"); **0.150**: an item counts as its whole serialisation, `id` and
  `internal_chat_message_metadata_passthrough` included (the P probe's second compaction fires at a
  last total of 19,285 against 20,000 only so: 1 of 6 reproduced without it, 6 of 6 with it; 0.155
  fits both); **0.163**: a tool output counts len(call_id) + its text bytes (measured on 0.171 with
  `RUST_LOG=codex_core=trace`), not its `serde_json` item.

**Real rollouts** (public `~/.codex` backups, 0.40 - 0.114, GPT-5.x at 272,000): the count also holds
the estimate of the encrypted reasoning before the newest user-role message (`counts_past_reasoning`;
codex-rs `get_non_last_reasoning_items_tokens`, added by b519267 "Account for encrypted reasoning for
auto compaction"): 6 of 6 automatic compactions from 0.64 on fire only so (0.64, 0.77 twice, 0.105,
0.114 twice), none extra. 0.40's one fires at its last total alone.

**The R probe** (the lab opens every response with an encrypted reasoning item, which later requests'
input tokens leave out, as the API does) dates it: 0.63.0 compacts only without the term (2 of 2), 0.64.0,
0.65.0, 0.66.0, 0.72.0, 0.75.0, 0.77.0 and 0.171.0 only with it. Where the estimate stops: at the newest
user-role message of any kind up to 0.116 (`role == "user"`: Codex's initial context and its shell
`apply_patch` warning too), at the newest one that is not initial context from 0.117
(`is_user_turn_boundary`, codex-rs 267499bed, whose new `hook_prompt` string is in the 0.117.0, 0.118.0,
0.120.0 and 0.121.0 binaries and not 0.116.0's; `reasoning_scope_any_user`). The warning counts in both:
without it the R probe on 0.77.0 gave 0 of 4.

**Between 0.64 and 0.77** (real CLIs 0.64.0, 0.65.0, 0.66.0, 0.72.0, 0.73.0, 0.74.0, 0.75.0, probes C, D, K, P, R):
0.66 gives a model codex-rs does not know 90% of the configured window when no limit is set (probe D:
3 of 3; 0.65.0 never compacts it, as 0.63); 0.74 checks only mid-turn (probes K and P on 0.74.0 and
0.75.0: with a pre-turn check 1 of 2 and 0 of 3, with extra ones; 0.72.0 and 0.73.0 fit both).

**Before 0.63** (real CLIs 0.40.0, 0.42.0, 0.44.0, 0.45.0, 0.47.0, 0.49.0, 0.50.0; probes G1 - G4, one prompt each, as
`exec resume` does not run the lab's later prompts there; codex-rs `openai_model_info.rs`): with no
explicit limit only `gpt-5-codex` had a limit of its own (`own_limits`), every other model none;
220,000 from 2451b19d1, 250,000 from b90eeabd7, 350,000 from db4aa6f91 (all September 2025). 0.42.0,
0.44.0, 0.45.0 and 0.47.0 do not compact gpt-5-codex at last totals of 220,214 - 250,767 and do at 350,214:
350,000. 049a61bcf ("Auto compact at ~90%") made it 90% of the model's window and the reported window
95% of it: 0.49.0 and 0.50.0 compact at 245,042 and report 258,400, 0.47.0 reports the whole 272,000
(`reported_window_fraction` 1.0; the recorded window is read with the writing release's fraction).
0.40.0: G1 compacts after a last total of 220,315 and not at 219,913: 220,000 (its real rollout
compacts at 258,201 after 211,580; the lab does not know 0.40's compaction prompt, so its "summary" is
the turn's answer and the reader drops that answer as the summarisation call: G1 replays 0 of 1 for
that reason only). (G4's contexts exceed
the 272,000 window, so they replay as overflows at the recorded window; at a 1,000,000 window all four
are reproduced.) Releases before 0.40 are not measured: the 0.40 row stands for them.

**Remote compaction** (read; the compaction request goes to the provider's compact endpoint and an
encrypted `compaction` item replaces the history): behind the `remote_compaction` feature, for ChatGPT
sign-in only, from codex-rs 75f38f16d (the feature's name is in the 0.60.1 - 0.95.0 binaries, not
0.58.0's), for API-key users too from b3ddd50ee, always for the OpenAI provider from dd80e332c (0.99.0's
binary has no such feature). The trigger is the same either way; the rollout records which happened
(`compacted.replacement_history` with the encrypted item).

The windows (`context_window`): the catalogue each release embeds (`models.json`, `lab/codex_catalogue.py`
reads it from the binary; 0.77 on; `auto_compact_token_limit` is null for every model of every
release read) by exact slug, else codex-rs's prefix rules (`model_family.rs`): gpt-5*, gpt-6* and codex-*
272,000; o3, o4-mini, codex-mini-latest 200,000; gpt-4.1 1,047,576; gpt-4o 128,000; gpt-oss 96,000;
gpt-3.5 16,385. A rollout that records `model_context_window` is taken at its word (configured =
reported / 0.95); these apply only when it records none.
"""

from __future__ import annotations

from dataclasses import dataclass

from sessiontools.policies.version import parse_version

#: codex-rs `CONTEXT_WINDOW_272K`: the gpt-5 and codex- families' window in every release read.
GPT5_WINDOW = 272_000


@dataclass(frozen=True, slots=True)
class CodexRule:
    """One row: the rule of the releases from `first` on (up to the next row)."""

    first: str
    count_trailing: bool  # count = last total_tokens + bytes/4 of the items after the newest model item
    explicit_capped: bool  # an explicit model_auto_compact_token_limit is capped at 90% of the window
    default_any_model: bool  # no explicit limit: 90% of the configured window for any model (else known ones)
    replacement_history: bool  # `compacted` lines carry the history that replaced the old one
    pre_turn_check: bool  # also checked before a turn (else only after a response that needs a follow-up)
    json_tool_outputs: bool  # a tool output's estimate is its item's serde_json length (else call_id + text)
    how: str
    #: A resumed turn's initial context, written again, is recorded before the pre-turn check (which
    #: then sees it, and counts it where the count adds the newer items); the prompt after it.
    context_before_pre_turn_check: bool = False
    #: An item counts as its whole `serde_json` serialisation, `id` and the internal metadata included.
    whole_item: bool = False
    #: The count adds the estimate of the encrypted reasoning items before the newest user turn
    #: (`get_non_last_reasoning_items_tokens`: the API drops them from a later turn's input tokens).
    counts_past_reasoning: bool = True
    #: That estimate stops at the newest user-role message of any kind (`role == "user"`: the initial
    #: context Codex writes as user messages too), not only at a real prompt (`is_user_turn_boundary`).
    reasoning_scope_any_user: bool = False
    limit_fraction: float = 0.9  # the default limit as a share of the window
    reported_window_fraction: float = 0.95  # token_count.model_context_window / configured window
    #: Before codex-rs 049a61bcf ("Auto compact at ~90%"): with no explicit limit, the model's own limit
    #: by slug prefix (`openai_model_info.rs` `auto_compact_token_limit`), none for any other model
    #: (None: 90% of the model's own window, as from 0.49 on).
    own_limits: tuple[tuple[str, int], ...] | None = None


RULES: tuple[CodexRule, ...] = (
    # first, count_trailing, explicit_capped, default_any_model, replacement_history, pre_turn_check,
    # json_tool_outputs, how
    CodexRule("0.0.0", False, False, False, False, True, False,
              "measured 0.40.0 (G1: gpt-5-codex compacts after a last total of 220315, not at 219913; G2; "
              "272000 reported) and its real rollout (at 258201 after 211580); read: openai_model_info.rs "
              "2451b19d1 gives gpt-5-codex 220000, no other model a limit",
              counts_past_reasoning=False, reported_window_fraction=1.0, own_limits=(("gpt-5-codex", 220_000),)),
    CodexRule("0.42.0", False, False, False, False, True, False,
              "measured 0.45.0, 0.47.0 (probes G2, G4: gpt-5-codex does not compact at 245000 - 250767, "
              "does at 350214; 272000 reported); read: openai_model_info.rs db4aa6f91 350000",
              counts_past_reasoning=False, reported_window_fraction=1.0, own_limits=(("gpt-5-codex", 350_000),)),
    CodexRule("0.49.0", False, False, False, False, True, False,
              "measured 0.49.0, 0.50.0 (G2: compacts at 245042, 258400 reported) and 0.63.0: explicit 14000 / "
              "28500 at windows 64000 / 30000 (not capped, count = last total), no limit: lab-model never, "
              "gpt-5.1-codex at 244800; read: 049a61bcf 'Auto compact at ~90%', codex.rs run_task, config.rs",
              counts_past_reasoning=False),
    CodexRule("0.64.0", False, False, False, False, True, False,
              "measured 0.64.0: as 0.63.0 (probes C, D, K, P), and the R probe (encrypted reasoning) "
              "compacts only with the past reasoning counted (0.63.0 only without); read: codex-rs "
              "b519267 'Account for encrypted reasoning for auto compaction' (after 0.63.0)",
              reasoning_scope_any_user=True),
    CodexRule("0.66.0", False, False, True, False, True, False,
              "measured 0.66.0, 0.72.0: with no limit 90% of the configured window for any model (probe D: "
              "3 of 3 only so; 0.65.0 still never compacts lab-model); read: model_family.rs "
              "auto_compact_token_limit() .or(context_window.map(90%))",
              reasoning_scope_any_user=True),
    CodexRule("0.74.0", False, False, True, False, False, False,
              "measured 0.74.0, 0.75.0 (probes K, P: a pre-turn check gives 1 of 2 and 0 of 3 with extra ones; "
              "only mid-turn checks; 0.73.0 fits both), 0.77.0 (no limit: 90% of 30000 and 244800 for gpt-5.1-codex), 0.80.0, "
              "0.87.0 (28500 not capped)",
              reasoning_scope_any_user=True),
    CodexRule("0.94.0", False, False, True, False, True, False,
              "measured 0.94.0: a pre-turn check again, on a resumed turn after Codex re-records its "
              "initial context, before the prompt; 28500 not capped, count = last total",
              context_before_pre_turn_check=True, reasoning_scope_any_user=True),
    CodexRule("0.95.0", True, False, True, False, True, True,
              "measured 0.95.0 - 0.98.0: the count adds bytes/4 of the newer items; 28500 still not "
              "capped; a resumed turn's initial context is written after the pre-turn check",
              reasoning_scope_any_user=True),
    CodexRule("0.99.0", True, False, True, False, True, True,
              "measured 0.99.0: as 0.95.0, but a resumed turn's initial context is written before the "
              "pre-turn check, which counts it", context_before_pre_turn_check=True,
              reasoning_scope_any_user=True),
    CodexRule("0.100.0", True, True, True, False, True, True,
              "measured 0.100.0: 28500 capped at 27000 (90% of 30000); the pre-turn check on a resumed "
              "turn after its re-recorded initial context, counted", context_before_pre_turn_check=True,
              reasoning_scope_any_user=True),
    CodexRule("0.110.0", True, True, True, True, True, True,
              "measured 0.110.0, 0.116.0: replacement_history recorded; pre-turn check before the turn's "
              "context; a tool output estimated as its serde_json item (read)",
              reasoning_scope_any_user=True),
    CodexRule("0.117.0", True, True, True, True, True, True,
              "measured 0.121.0, 0.145.0: as 0.110.0; read: the reasoning estimate stops at a real "
              "prompt (is_user_turn_boundary) from codex-rs 267499bed, whose new hook_prompt string the "
              "binaries of 0.117.0, 0.118.0, 0.120.0, 0.121.0 hold and 0.116.0's does not"),
    CodexRule("0.150.0", True, True, True, True, True, True,
              "measured 0.150.0 (6 of 6 only so) and 0.155.0: an item counts as its whole serde_json "
              "serialisation, id and internal_chat_message_metadata_passthrough included",
              whole_item=True),
    CodexRule("0.163.0", True, True, True, True, True, False,
              "measured 0.163.0 and 0.171.0 (RUST_LOG trace of every check): a tool output counts "
              "len(call_id) + its text bytes"),
)
#: The rule when the rollout records no version (the newest measured one).
NEWEST = RULES[-1]

#: `models.json` embedded in each release binary: slug -> context_window, for the slugs whose window is
#: not the prefix rule's (`lab/codex_catalogue.py` over the installed CLIs; 0.77 - 0.145 list only
#: gpt-5* at 272000, codex-mini-latest at 200000 and gpt-oss at 128000).
CATALOGUES: tuple[tuple[str, dict[str, int]], ...] = (
    ("0.121.0", {"gpt-oss-120b": 128_000, "gpt-oss-20b": 128_000}),
    ("0.171.0", {"gpt-6.1-sol": 500_000, "gpt-6.1-terra": 500_000, "gpt-6.2-sol": 500_000,
                 "gpt-daybreak-red-latest": 372_000}),
)
#: codex-rs `find_family_for_model` / `find_model_info_for_slug`: prefix -> window (first match wins).
PREFIX_WINDOWS: tuple[tuple[str, int], ...] = (
    ("o3", 200_000), ("o4-mini", 200_000), ("codex-mini-latest", 200_000), ("gpt-4.1", 1_047_576),
    ("gpt-oss", 96_000), ("openai/gpt-oss", 96_000), ("gpt-4o", 128_000), ("gpt-3.5", 16_385),
    ("gpt-5", GPT5_WINDOW), ("gpt-6", GPT5_WINDOW), ("codex-", GPT5_WINDOW), ("exp-", GPT5_WINDOW),
)


#: From 0.99 a slug codex-rs does not know gets `model_info_from_slug`'s fallback window (codex-rs
#: a1abd53b6 "Remove offline fallback for models"; its "will use fallback model metadata" warning is in
#: 0.99.0's binary, not 0.98.0's); before, such a model had no window at all (no auto-compaction).
FALLBACK_FROM = "0.99.0"
FALLBACK_WINDOW = GPT5_WINDOW


def _newest_at_or_below(version: str | None, firsts: list[str]) -> int | None:
    """Index of the newest `firsts` entry at or below `version` (None: below all or unparsable)."""
    v = parse_version(version)
    if v is None:
        return None
    best = None
    for i, f in enumerate(firsts):
        pf = parse_version(f)
        if pf is not None and pf <= v:
            best = i
    return best


def rule_for(version: str | None) -> CodexRule:
    """The row for a Codex version (the newest row at or below it); `NEWEST` when it is unknown."""
    i = _newest_at_or_below(version, [r.first for r in RULES])
    return NEWEST if i is None else RULES[i]


def context_window(model: str | None, version: str | None = None) -> int | None:
    """The configured window codex-rs assumes for `model` under `version` when the rollout records none
    (None: a model codex-rs does not know)."""
    m = (model or "").lower()
    if not m:
        return None
    i = _newest_at_or_below(version, [c[0] for c in CATALOGUES])
    catalogues = CATALOGUES[: i + 1] if i is not None else (CATALOGUES if parse_version(version) is None else ())
    for _, table in reversed(catalogues):
        if m in table:
            return table[m]
    known = next((w for prefix, w in PREFIX_WINDOWS if m.startswith(prefix)), None)
    v, since = parse_version(version), parse_version(FALLBACK_FROM)
    fallback = v is None or (since is not None and v >= since)
    return known if known is not None or not fallback else FALLBACK_WINDOW
