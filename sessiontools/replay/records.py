"""Typed records of a replay: one setting, the compactions it decided, its requests, its run.

`ReplayRun` is what `simulate` returns for one setting; `replay.frames` turns runs into polars rows
(schemas there) and `replay.metrics` into the metrics of the JSON contract.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields
from enum import StrEnum
from operator import attrgetter
from typing import Any, NamedTuple, TypeVar

from sessiontools.policies.base import PolicyName

T = TypeVar("T")


def json_field(key: str | None = None, write: Callable[[Any], Any] | None = None,
               read: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """A record field's metadata for its JSON form: `key` where the contract's key is not the field's
    name, `write` what the JSON shows of its value (rounded, an enum's value), `read` its value back."""
    return {k: v for k, v in (("json_key", key), ("json_write", write), ("json_read", read)) if v is not None}


def json_key(f: Field[Any]) -> str:
    """A record field's key in the replay JSON contract: its name, unless its metadata renames it."""
    return f.metadata.get("json_key", f.name)


class JsonField(NamedTuple):
    """One field of a record as its JSON form has it (`json_field`: None, the value as it is)."""

    name: str
    key: str
    write: Callable[[Any], Any] | None
    read: Callable[[Any], Any] | None


@functools.cache
def json_fields(cls: type) -> tuple[JsonField, ...]:
    """The fields of the record type `cls` in its JSON form, in order (once per type)."""
    return tuple(JsonField(f.name, json_key(f), f.metadata.get("json_write"), f.metadata.get("json_read"))
                 for f in fields(cls))


def _writer(cls: type, leave_out: str | None) -> tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]],
                                                       tuple[tuple[int, Callable[[Any], Any]], ...]]:
    """`write_json`'s keys, a getter of the values and the values' writers by position."""
    fs = [f for f in json_fields(cls) if f.name != leave_out]
    get = attrgetter(*(f.name for f in fs))
    return (tuple(f.key for f in fs), (get if len(fs) > 1 else lambda r: (get(r),)),
            tuple((k, f.write) for k, f in enumerate(fs) if f.write is not None))


#: `_writer` by (record type, field left out), made once: a comprehension over `fields()` for every
#: record written doubled the cost of writing a run's JSON.
_WRITERS: dict[tuple[type, str | None], Any] = {}


def write_json(record: Any, leave_out: str | None = None) -> dict[str, Any]:
    """A record's JSON: its fields in order, under their keys (`leave_out`: a field's name not written)."""
    how = (type(record), leave_out)
    writer = _WRITERS.get(how)
    if writer is None:
        writer = _WRITERS[how] = _writer(*how)
    keys, get, writes = writer
    values = get(record)
    if writes:
        values = list(values)
        for k, write in writes:
            values[k] = write(values[k])
    return dict(zip(keys, values))  # noqa: B905 (one length: both made from the same fields)


def read_json(cls: type[T], d: Mapping[str, Any]) -> T:
    """A record of type `cls` read back from its JSON (`write_json`); a key it lacks, its field's default."""
    return cls(**{f.name: d[f.key] if f.read is None else f.read(d[f.key]) for f in json_fields(cls) if f.key in d})


class CompactionReason(StrEnum):
    """Why the replay compacted."""

    THRESHOLD = "threshold"
    OVERFLOW = "overflow"
    USER = "user"  # a recorded manual or extension-written compaction, applied where it was recorded


class TruthSource(StrEnum):
    """Where a request's truth came from: the recorded usage (the context is the recorded one) or
    the truth model (the replay changed the context)."""

    RECORDED = "recorded"
    MODEL = "model"
    PROVIDER = "provider"  # the provider's own count in an overflow error


@dataclass(frozen=True, slots=True)
class ReplaySettings:
    """One setting of a grid: window W, reserveTokens, keepRecentTokens and the policy."""

    context_window: int
    reserve_tokens: int
    keep_recent_tokens: int
    policy: PolicyName
    #: (base index, window) from which a request's model has another window (the session switched
    #: models); empty when one window holds throughout. `context_window` is the session's model's.
    window_changes: tuple[tuple[int, int], ...] = ()
    #: The policy's own options (`PolicySettings.extra`: Codex's `auto_compact_limit`, Claude Code's
    #: `autocompact_pct`, `max_output_tokens`) and the threshold the policy derives from them (None: Pi's
    #: W - reserve).
    extra: tuple[tuple[str, Any], ...] = ()
    policy_threshold: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "policy", PolicyName(self.policy))

    @property
    def threshold(self) -> int:
        if self.policy_threshold is not None:
            return self.policy_threshold
        return self.context_window - self.reserve_tokens

    def window_at(self, base_index: int) -> int:
        """The window of the model that answers at `base_index`."""
        w = self.window_changes[0][1] if self.window_changes else self.context_window
        for at, window in self.window_changes:
            if at > base_index:
                break
            w = window
        return w

    def label(self) -> str:
        """The setting in words, for messages."""
        return (f"window {self.context_window}, reserve {self.reserve_tokens}, keep {self.keep_recent_tokens}, "
                f"policy {self.policy.value}")

    @property
    def shown_threshold(self) -> int | None:
        """The threshold the record shows: None where it follows each model's window (a session that
        switched models under a rule of W - reserve)."""
        return None if self.policy_threshold is None and self.window_changes else self.threshold

    def value(self, key: str) -> Any:
        """The setting `key` as the record shows it: the window, reserve, keep, `threshold`
        (`shown_threshold`) or one of the policy's own options (None when the policy has none such);
        how `report/` reads a policy's axes (`Policy.axes`: their keys are data)."""
        if key in ("context_window", "reserve_tokens", "keep_recent_tokens"):
            return getattr(self, key)
        if key == "threshold":
            return self.shown_threshold
        if key == "policy":
            return self.policy.value
        return dict(self.extra).get(key)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "context_window": self.context_window,
            "reserve_tokens": self.reserve_tokens,
            "keep_recent_tokens": self.keep_recent_tokens,
            "policy": self.policy.value,
        }
        if self.policy_threshold is None:  # W - reserve; none when the window changes (one per model then)
            out["threshold"] = self.shown_threshold
        if self.window_changes:  # only when the session switched to a model with another window
            out["window_changes"] = [list(c) for c in self.window_changes]
        if self.policy_threshold is not None:  # a policy with its own options (Codex, Claude Code)
            extra = dict(self.extra)
            out["auto_compact_limit"] = extra.pop("auto_compact_limit", None)
            out["threshold"] = self.policy_threshold
            out.update(extra)
        return out


@dataclass(slots=True)
class SimCompaction:
    """A compaction the replay decided on."""

    reason: CompactionReason
    parent_entry_id: str | None
    parent_base_index: int
    first_kept_entry_id: str | None
    first_kept_base_index: int
    tokens_before: int  # Pi's own tokensBefore
    truth_at_trigger: float
    count_at_trigger: float  # the policy's own count at the trigger (JSON: `policy_count_at_trigger`)
    is_split_turn: bool
    messages_summarized: int
    turn_prefix_messages: int
    kept_tokens: float
    summary_tokens: float
    summary_source: TruthSource
    summarization_input_tokens: float
    summarization_output_tokens: float
    matches_recorded: bool
    early: bool = False
    thrash: bool = False
    #: The hook `resummarize` reads (not part of the JSON record, nor of equality): Pi's
    #: `CompactionPreparation` this compaction computed (None for a recorded user compaction, applied
    #: as recorded), and the compaction entry put on the simulated path (the recorded one, or the
    #: replay's placeholder). Typed loosely: they are the policy's own objects (Pi's `Preparation`
    #: and `Entry`), which the record carries and does not read.
    preparation: Any = field(default=None, compare=False, repr=False)
    entry: Any = field(default=None, compare=False, repr=False)
    #: The messages kept verbatim (path indices), where the walk knows them (the transcript walk).
    kept: tuple[int, ...] = ()


class CheckAt(NamedTuple):
    """One check point of a run: where, the policy's count and the truth there, and how many request
    points the run had made (a check point is a request's when it is the first since that request)."""

    at: int  # the last message before it (-1: none)
    count: float
    truth: float
    requests: int

    def outside(self, before: CheckAt | None) -> str | None:
        """Why it is no request's check point (None: it is the first after the newest request)."""
        if self.requests == 0:
            return "before the first request"
        if before is not None and before.requests == self.requests:
            return "again after the same request"
        return None


class RequestPoint(NamedTuple):
    """One simulated request (for the timeline and the cost model). A named tuple: a grid makes one
    per request per setting."""

    base_index: int
    entry_id: str | None
    truth: float
    truth_source: TruthSource
    policy_count: float | None  # the policy's own count at the check point after it, if one (timeline: `pi_view`)
    overflow: bool
    output: int = 0
    timestamp: str | None = None
    epoch: int = 0  # bumped by every compaction: requests of one epoch can share a cached prefix
    recorded_context: bool = False  # its context is the recorded one (its recorded usage and cost apply)


@dataclass(frozen=True, slots=True)
class RecordedMatch:
    """How the replay's compactions compare with the recorded ones."""

    recorded: int
    matched: int

    extra: int

    @property
    def missed(self) -> int:
        return max(0, self.recorded - self.matched)

    def to_dict(self) -> dict[str, int]:
        return {"recorded": self.recorded, "matched": self.matched, "missed": self.missed, "extra": self.extra}


@dataclass(slots=True)
class ReplayRun:
    """Everything one setting produced."""

    settings: ReplaySettings
    compactions: list[SimCompaction] = field(default_factory=list)
    requests: list[RequestPoint] = field(default_factory=list)
    early: int = 0
    late: int = 0
    check_points: int = 0
    #: Every check point, in walk order, one per `check_points` (`CheckAt`): the timeline's policy
    #: counts and check truths. A check point before any request, or a second one after the same
    #: request, has no request point of its own to carry its count (`CheckAt.outside`).
    check_counts: list[CheckAt] = field(default_factory=list)
    check_points_over: int = 0
    mid_run_crossings: int = 0
    overflows: int = 0
    failed_recoveries: int = 0
    thrash: int = 0
    peak_truth: float = 0.0
    billed_input: float = 0.0
    output_tokens: int = 0
    summarization_input: float = 0.0
    summarization_output: float = 0.0
    no_compaction: list[str] = field(default_factory=list)  # reasons Pi declined to compact
    #: Requests the provider rejected in the recording although their truth fits this setting's window
    #: (a server limit below the model's window): not overflows. `provider_limits`: the limits the
    #: errors stated, where they did.
    provider_rejections: int = 0
    provider_limits: list[int] = field(default_factory=list)
    #: Compactions whose summarisation request was larger than the window: rejected, not billed, the
    #: context left as it was (each also counted in `overflows`).
    failed_compactions: list[SimCompaction] = field(default_factory=list)

    def rejected(self, truth: float, window: int, stated_limit: int | None = None) -> None:
        """Count a request the provider rejects, for both walks: an overflow when its truth exceeds the
        setting's window, else a provider rejection (with the limit its error stated); in the peak."""
        if truth > window:
            self.overflows += 1
        else:
            self.provider_rejections += 1
            if stated_limit:
                self.provider_limits.append(stated_limit)
        if truth > self.peak_truth:
            self.peak_truth = truth
    recorded_match: RecordedMatch = field(default_factory=lambda: RecordedMatch(0, 0, 0))
    #: The simulated path at the end of the walk (base entries and the compaction entries, in order);
    #: kept only when asked (`simulate(..., keep_path=True)`, for `resummarize`), else empty.
    path: tuple[Any, ...] = field(default=(), compare=False, repr=False)
