"""Compaction policies behind one interface: what any agent's auto-compaction rule must say.

A `Policy` answers five questions, over the agent-neutral transcript (`transcript.model`):

1. **name** (`PolicyName`): `pi-0`, `pi-1`; reserved: `claude-code`, `claude-code-reactive`, `codex`.
2. **check points** (`CheckPoint`): where the agent tests its rule.
   - `RUN_END`: after a run's final reply, before the next user prompt (Pi 0.x and 1.x);
   - `BETWEEN_TURNS`: before each request of a run but its first (Pi 1.x's projected estimate;
     Codex's mid-turn check when a follow-up is needed);
   - `BEFORE_SAMPLING`: before a run's first request (Codex, Claude Code).
   A policy with `reactive = True` also compacts after the provider rejects a request as too
   long (Pi: once per run, re-armed by any successful reply; Claude Code reactive: on
   `prompt is too long`). Codex is never reactive.
3. **trigger**: `threshold(settings)` (T) and `count(view)`, the agent's own count at a check point
   from a `CountView` (the last usage it trusts and the messages after it); it compacts when
   `fires(count, T)`. Pi: T = W - reserve, count = last usage total + chars/4 of the trailing
   messages, fires when count > T. Codex: T = min(auto_compact_limit, 0.9 W), count = last
   total_tokens + bytes/4 of later items, fires when count >= T. Claude Code: E = W - min(maxOutput,
   20000), T = E - 13000 (or min(floor(E * P / 100), E - 13000)), count = last usage incl. output +
   ceil(chars/4 * 4/3) of the messages after the reply's first line, fires when count >= T, checked
   before every request (`policies.claude_code`).
4. **what it keeps**: `keep(candidates, budget)` picks the message indices kept verbatim after the
   summary from the candidates of a compaction (Pi: recent messages up to keepRecentTokens, cut at
   a turn boundary; Codex: the initial context and recent user messages up to 20,000 tokens;
   Claude Code: whole rounds from the end of the current turn); `keep_for(reason, ...)` lets a
   policy keep differently by reason (Claude Code's reactive compaction keeps more rounds).
   `checkpoint(path, request, context)` gives that count before a recorded request (what
   estimate-error judges; Pi: `estimateContextTokens` exactly, over Pi's own messages).
5. **tokens before**: `tokens_before(view)`, the number the agent records on the compaction
   (Pi: its `estimateContextTokens` of the path; Codex: the count at the trigger; Claude Code: the
   count without the 4/3 factor).

`PolicySettings` holds the settings a grid varies (window, reserve, keep, and per-agent extras such
as `auto_compact_limit`, `autocompact_pct`, `max_output_tokens`). `replay.walk.simulate_path`
replays any `Policy` over any `TranscriptPath`; a policy may give the walk a per-run `Compactor`
(`Policy.compactor`) running the agent's own code on the agent's own records of the path (Pi's
`prepareCompaction` on the entries a Pi transcript carries, `policies.pi.compactor`): Pi sessions
under Pi's policies too (issue 24: one walk).

This module holds the two interfaces, `Compactor` and `Policy`; the values they exchange are in
`policies.settings` (`Axis`, `CheckPoint`, `PolicySettings`), `policies.views` (`CountView`,
`Candidate`, `Kept`, `CompactionAsk`, `Plan`), `policies.recovery` (`Recovery`) and
`policies.counts` (`text_counter`, `chars4`), all re-exported here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sessiontools.names import PolicyName
from sessiontools.policies.counts import _text_chars4, chars4, text_counter
from sessiontools.policies.recovery import Recovery
from sessiontools.policies.settings import Axis, CheckPoint, PolicySettings
from sessiontools.policies.views import Candidate, CompactionAsk, CountView, GivenSummary, Kept, Plan
from sessiontools.read.agents import Agent

__all__ = ["Agent", "Axis", "Candidate", "CheckPoint", "CompactionAsk", "Compactor", "CountView", "GivenSummary", "Kept",
           "Plan",
           "Policy", "PolicyName", "PolicySettings", "Recovery", "chars4", "count_plus", "count_plus_quarter",
           "count_usage_alone", "text_counter"]


class Compactor(ABC):
    """One run's compaction by the agent's own code (`Policy.compactor`): the walk asks it what a
    compaction keeps, and tells it which compaction was made (its own plan or a recorded one)."""

    @abstractmethod
    def plan(self, ask: CompactionAsk) -> Plan | str:
        """The compaction at `ask`, or why the agent makes none (a reason, in words)."""

    def asked_after(self) -> str | None:
        """The id of the agent's own newest record before the newest `plan`'s compaction (what a
        declined one's note names: `Plan.parent_id`'s rule); None: the context's last message's."""
        return None

    def context_sizes(self, context: Sequence[int], sizes: Sequence[tuple[int, int]]) -> Sequence[tuple[int, int]]:
        """The (chars, bytes) the agent's own count sees for the simulated context (message indices
        `context`, their `sizes`) when no reply since the last compaction brought a usage
        (`CountView.context`): by default the messages' own."""
        return sizes

    def rejected(self, index: int) -> None:  # noqa: B027 (a hook: most compactors keep no record of it)
        """The request the recording shows rejected at message `index` is rejected in this run too: the
        agent's recovery edits after it are on its path from now on (Pi 1.x's omission edits)."""

    def recorded_summary(self, k: int) -> float | None:
        """The truth of recorded compaction k's summary as the agent sends it (Pi 1.x: with the system
        message the compaction entry carries); None: the walk's rule (its summary message's)."""
        return None

    @abstractmethod
    def made(self, plan: Plan | None, recorded: int | None = None, kept: Sequence[int] = (),
             summary: str | None = None) -> None:
        """The walk made `plan` (or applied recorded compaction `recorded`, the user's, keeping the
        messages `kept`) as the newest compaction of the context; `summary`: the text the caller wrote
        for it (`resummarize`), which the agent's own count reads from then on."""

    def keeps_recorded(self, plan: Plan, summary: str) -> bool:
        """Whether a caller's `summary` for `plan` is the recorded compaction's own text (the recorded
        context goes on): by default never."""
        return False

    def simulated_path(self) -> tuple[Any, ...]:
        """The agent's own records on the simulated path at the end of the walk (its base records and
        the compactions made, in order), which `resummarize` writes back; () when it keeps none."""
        return ()


class Policy(ABC):
    """An agent's auto-compaction rule (see the module docstring)."""

    name: PolicyName
    check_points: frozenset[CheckPoint]
    reactive: bool = False
    #: `BEFORE_SAMPLING` is checked before the run's new input (user prompt, context updates) is
    #: recorded (Codex's pre-turn check), not after it.
    pre_turn_excludes_input: bool = False
    #: The count's trailing messages start after the *first* message of the newest reply (Claude Code
    #: counts the reply's own later lines), not after its last one.
    counts_own_reply: bool = False
    #: A summarisation request larger than the window is retried with its oldest items dropped until it
    #: fits (Codex's `compact.rs` on ContextWindowExceeded; Claude Code, whose reactive compaction runs
    #: exactly when the context no longer fits). Otherwise (Pi) the compaction fails.
    trims_summary_request: bool = False
    #: The summarisation request sends the whole context, kept messages included (Codex, Claude Code);
    #: Pi's sends only the messages it summarises (and the previous summary).
    summary_request_sends_kept: bool = True
    #: The agent compacts when its count reaches the threshold (Codex, Claude Code), not only above it
    #: (Pi): `fires`.
    fires_at_threshold: bool = False

    #: A request the provider rejects with the recovery spent stays on the agent's path as an error
    #: reply carrying the usage of its rejected prompt: the newest usage the count sees, and the run's
    #: final check follows it (Pi's error message, as `bench/pi_replay.mjs` replays it). Otherwise
    #: the walk goes on as if it had not been sent.
    failed_reply_counts: bool = False
    #: In the agent's own files, a compaction after a rejected request follows the failed attempt
    #: (Pi's overflow compaction): the recorded compaction's point is that request's, not the last
    #: answered one's (`SessionReplay.recorded_points`).
    recorded_compaction_after_rejection: bool = False
    #: The agent's files record every edit of the context (Pi's context edits): the truth model's sum
    #: is the truth of the recorded context at a check point. Otherwise the newest recorded prompt,
    #: which measured edits the file does not show (cleared tool results), anchors it (`replay.walk`).
    records_context_edits: bool = False

    def reply_ends_run(self, stop_reason: str | None, rejected: bool) -> bool:
        """Whether the agent's loop ends after a reply that stopped for `stop_reason` (`rejected`: the
        provider rejected the request) although no user message follows: its run-end check
        (`CheckPoint.RUN_END`) comes after it. Default: only at the next user message."""
        return False

    def unusable_count(self, view: CountView, reply: Any) -> float:
        """The agent's count at the check after a run's final reply when that reply's usage is not one
        it trusts (`transcript.model.UnusableReply`: aborted, or an error that is no overflow).
        Default: its usual count (the newest trusted usage plus the messages since, that reply among them)."""
        return self.count(view)

    #: The settings a grid of this policy varies, as (key of the run's settings, label), in the order
    #: tables, heatmaps and gate messages show them (Pi: window, reserve, keep).
    axes: tuple[Axis, ...] = (Axis("context_window", "W"), Axis("reserve_tokens", "reserve"),
                              Axis("keep_recent_tokens", "keep"))

    def grid_extras(self, **options: Any) -> list[tuple[tuple[str, Any], ...]]:
        """The policy's own options (`PolicySettings.extra`) of each setting of a grid, from the CLI's
        per-policy options (`limits`: Codex's; `autocompact_pcts`, `max_output_tokens`: Claude Code's)."""
        return [()]

    #: The recorded usage of the first request after a compaction prices its summary with only what the
    #: file records (Pi), so the truth model learns a new summary's size from it; otherwise (Codex,
    #: Claude Code: that request also carries what the agent attached and did not write) from the
    #: model's count of the summary text (`replay.truth_model.summary_size`).
    recorded_summary_priced: bool = False

    def truth_count(self, message: Any) -> int:
        """The agent's own size of a transcript `Message` in tokens, the unit of the truth model's
        fit (`replay.truth_model`): chars/4 of its text (Pi: `estimateTokens`)."""
        return _text_chars4(message)

    def truth_counter(self, tokenizer: str | None = None) -> Any:
        """`Message -> tokens` of the truth model's fit: `truth_count`, or with `tokenizer` (a name of
        `tokens.registry`) that tokenizer's count of the message's text units (`text_counter`)."""
        return self.truth_count if tokenizer is None else text_counter(tokenizer)

    def path_counter(self, path: Any, tokenizer: str | None = None) -> Any:
        """`truth_counter(tokenizer)` for the messages of `path`, which it may measure all at once
        (`PiPolicy.path_counter`); any other message is counted as `truth_counter` counts it."""
        return self.truth_counter(tokenizer)

    def size(self, message: Any) -> tuple[int, int]:
        """(chars, bytes) the agent counts for a transcript `Message` (default: of its text)."""
        text = message.text
        return len(text), len(text.encode("utf-8"))

    def sizer(self, path: Any) -> Any:
        """`Message -> (chars, bytes)` the walk counts on `path` (`replay.path_grid`): `size`, unless
        the agent counts its own records of the path otherwise (`PiPolicy.sizer`)."""
        return self.size

    @abstractmethod
    def threshold(self, settings: PolicySettings) -> int:
        """T: the count above (or at) which the agent compacts."""

    @abstractmethod
    def count(self, view: CountView) -> float:
        """The agent's own count of its context at a check point."""

    def fires(self, count: float, threshold: int) -> bool:
        """Whether the agent compacts at `count`: at or above T with `fires_at_threshold`, else strictly
        above it (Pi). The walk's C span loop does this rule when a policy does not override it."""
        return count >= threshold if self.fires_at_threshold else count > threshold

    def count_columns(self) -> tuple[Callable[[tuple[int, int]], int], Callable[[float, int], float]] | None:
        """(term, combine) when `count` of a view with a usage is `combine(last usage total, the sum of
        term(size) over the trailing messages)` with integer terms, exactly: the walk's bulk path sums
        the terms by prefix sums (`replay.walk_plain`). None (default): only `count` gives it. A combine
        of this module's (`count_plus`, `count_plus_quarter`, `count_usage_alone`) the walk's C span
        loop does too; any other callable leaves those spans to Python."""
        return None

    @abstractmethod
    def keep(self, candidates: Sequence[Candidate], settings: PolicySettings) -> Kept:
        """The candidates kept verbatim after the summary."""

    def keep_for(self, reason: str, candidates: Sequence[Candidate], settings: PolicySettings) -> Kept:
        """What a compaction for `reason` ("threshold", "overflow", "user": a recorded manual one) keeps (default: `keep`)."""
        return self.keep(candidates, settings)

    def new_process(self, prompt: Any) -> bool:
        """Whether the user prompt `prompt` (a transcript Message) was sent by a new agent process that
        reloaded the session from its file (default: no)."""
        return False

    def checkpoint(self, path: Any, request: Any, context: Sequence[Any], resets: Sequence[int] = ()) -> Any:
        """The agent's own count before `request` of `path` (a `TranscriptPath`), over its `context`
        messages, as a `policies.checkpoint.Checkpoint` (the count, its usage part, the trailing
        messages): what estimate-error judges. Default: `count` over `size` of the messages after the
        newest earlier reply (`policies.checkpoint.policy_checkpoint`), the count replay's walk uses.
        `resets`: file lines after which the agent no longer trusts earlier usage."""
        from sessiontools.policies.checkpoint import policy_checkpoint

        return policy_checkpoint(self, path, request, context)

    def tokens_before(self, view: CountView) -> int:
        """What the agent records as the compaction's tokens before."""
        return round(self.count(view))

    def default_window(self) -> int | None:
        """The window the agent assumed when the file does not record one (None: ask the catalogue)."""
        return None

    def recorded_window(self, settings: Mapping[str, Any]) -> int | None:
        """The window the agent was configured with, as its file records it in the transcript's
        `settings` (Codex: `model_context_window` is 95% of the configured one); None: not recorded."""
        return None

    def summary_tokens(self, default: float, recorded: Sequence[tuple[float, float]], history: float) -> float:
        """The tokens of the summary a compaction writes, after `history` tokens of workload, given the
        file's recorded compactions as (workload tokens before it, its summary's tokens), ascending;
        `default`: the truth model's one size (the recorded summaries' median). Default: `default`."""
        return default

    def threshold_off_from(self, path: Any) -> int | None:
        """The message index of `path` (a `TranscriptPath`) from which the recording shows the agent's
        threshold compaction was switched off (a user setting the file does not record, only its
        effect), so the walk's check points there never fire; None: on throughout (default)."""
        return None

    @property
    def count_reads_messages(self) -> bool:
        """Whether `count` reads `CountView.messages` (the walk builds that list only then)."""
        return False

    def compactor(self, path: Any, truth: Any, settings: PolicySettings) -> Compactor | None:
        """A per-run `Compactor` running the agent's own code on its own entries of `path` (a
        `TranscriptPath` whose adapter keeps them, `TranscriptPath.native`), with the truth model
        `truth` for the sizes it reports; None (default): the walk compacts by `keep_for` on the
        neutral messages."""
        return None

    def user_compactions(self, path: Any) -> frozenset[int]:
        """Positions in `path.compactions` (a `TranscriptPath`) that the file records as automatic but
        the agent's rule cannot have made where they lie (no check point of its release there): the
        user's, applied where recorded like a manual one. Default: none."""
        return frozenset()

    def pre_turn_recorded(self, new_input: Sequence[Any], previous: Any = None) -> int:
        """How many of a run's new messages (`new_input`: the transcript Messages recorded since the
        previous reply, up to the run's first request; `previous`: the message the transcript records
        just before them) the agent has in its context at its `BEFORE_SAMPLING` check: none when it checks
        before the run's input is recorded (`pre_turn_excludes_input`), else all of them."""
        return 0 if self.pre_turn_excludes_input else len(new_input)

    def recovery(self) -> Recovery:
        """A fresh state of the agent's recovery from rejected requests, for one replayed run (default:
        a reactive policy compacts and retries after every rejection, any other never)."""
        return Recovery(self.reactive)


def count_plus(last: float, terms: int) -> float:
    """A `count_columns` combine: the newest usage total plus the trailing messages' terms."""
    return last + terms


def count_plus_quarter(last: float, chars: int) -> float:
    """A `count_columns` combine: the newest usage total plus a quarter of the trailing characters."""
    return last + chars / 4


def count_usage_alone(last: float, terms: int) -> float:
    """A `count_columns` combine: the newest usage total alone (the trailing messages do not count)."""
    return float(last)

