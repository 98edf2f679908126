"""One session path being replayed, whichever walk replayed it: `SessionReplay`.

A session path's replay is its source, agent, leaf, model, the truth model fitted on it, the runs of
its grid, and what the file recorded of its answered requests (`RecordedUsage`): the cache model
learnt from them, their classes and costs (a run's requests in the recorded context keep them), and
the prices (`prices_of`: the catalogue's, else the ones the recorded `usage.cost` implies). Both
builders (`replay.session` on Pi's entries, `replay.transcripts` on any agent's `TranscriptPath`)
turn what they read into `RecordedReply`s and price pairs and make one `SessionReplay` of them
(`session_replay`); `replay.run_document.record_of` prices and records a run of either the same way.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sessiontools.read.values import iso_seconds
from sessiontools.replay.catalog import ModelInfo, recorded_prices
from sessiontools.replay.cost import (
    CacheModel,
    Classes,
    RecordedCall,
    RunCost,
    learn_cache,
    price_run,
)
from sessiontools.replay.records import ReplayRun


@dataclass(frozen=True, slots=True)
class Prices:
    """Dollars per token by class, and where they came from."""

    per_token: dict[str, float] | None
    source: str  # "catalogue", a models.json path, "recorded usage.cost", "agent prices", or "none"


class RecordedReply(NamedTuple):
    """One answered request as the file recorded it, on the runs' index axis (`RequestPoint.base_index`)."""

    index: int
    classes: Classes
    cost_total: float | None  # the recorded usage.cost.total, if any
    timestamp: str | None
    #: Its prompt is known (the cache model learns from it); a reply whose usage lacks the prompt
    #: keeps its classes and cost but teaches nothing.
    learn: bool = True


@dataclass(frozen=True, slots=True)
class RecordedUsage:
    """What the file recorded of its answered requests, by index."""

    classes: dict[int, Classes]
    costs: dict[int, float]  # usage.cost.total, where recorded
    calls: list[RecordedCall]  # to learn the cache model from

    @property
    def total_cost(self) -> float | None:
        """The recorded agent cost (None when the file records no cost)."""
        return sum(self.costs.values()) if self.costs else None


def recorded_usage(replies: Iterable[RecordedReply], breaks: Sequence[int],
                   seconds: dict[str | None, float | None] | None = None) -> RecordedUsage:
    """The recorded classes and costs of each answered request, and the calls to learn the cache from.
    `breaks` (sorted): indices where the recorded prefix broke (a compaction's last message before it,
    a context edit); a call follows a break when one lies in [previous learnt call, this call).
    `seconds`: `iso_seconds` of the timestamps read, filled here (`SessionReplay.seconds`: the runs'
    pricing reads the same request timestamps again)."""
    classes: dict[int, Classes] = {}
    costs: dict[int, float] = {}
    calls = []
    memo: dict[str | None, float | None] = {} if seconds is None else seconds
    n = len(breaks)
    prev = -1
    new, call = tuple.__new__, RecordedCall  # its generated `__new__`'s tuple, in half the time
    for i, cls, cost, ts, learn in replies:
        classes[i] = cls
        if cost is not None:
            costs[i] = cost
        if not learn:
            continue
        t = memo.get(ts, _UNREAD)
        if t is _UNREAD:
            t = memo[ts] = iso_seconds(ts)
        k = bisect_left(breaks, prev) if n else 0
        calls.append(new(call, (t, cls, k < n and breaks[k] < i)))
        prev = i
    return RecordedUsage(classes, costs, calls)


#: Not yet read (`iso_seconds` gives None for a timestamp it cannot read, which is kept).
_UNREAD: Any = object()


def prices_of(info: ModelInfo | None, pairs: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]],
              model_name: str = "") -> Prices:
    """The prices of a session's model: the catalogue's (or a models.json's), else the per-token prices
    its recorded (usage, usage.cost) pairs imply, else the base rates of the price list of the agents
    that record no cost (`transcript.prices.agent_price`) for an id recorded under another provider
    than its own (a gateway's id Claude Code records under `anthropic`, Codex's user-named provider),
    as inspect prices it, when its rates do not change with the time of day; else none."""
    if info is not None and info.prices:
        return Prices(info.prices, "catalogue" if info.source == "bundled" else info.source)
    found = recorded_prices(pairs)
    if found:
        return Prices(found, "recorded usage.cost")
    from sessiontools.transcript.prices import agent_price

    provider, _, model = model_name.partition("/")
    price = agent_price(provider or None, model) if model else None
    # only an id recorded under another provider than its own (a gateway's model behind the Anthropic
    # API, a user's own provider id): a provider's own id the catalogue lacks stays unpriced; and rates
    # by the hour (DeepSeek V4) have no one per-token price
    if price is None or price.provider == provider or price.periods:
        return Prices(None, "none")
    r = price.rates
    return Prices({"input": r.input, "output": r.output, "cache_read": r.cache_read, "cache_write": r.cache_write},
                  "agent prices")


@dataclass(slots=True)
class SessionReplay:
    """Everything replayed for one path of one session, by either walk."""

    source: str
    agent: str
    leaf_id: str | None
    model_name: str  # provider/model
    truth: Any  # the fitted truth model (`replay.truth_model.TruthModel`): .overhead, .record()
    model: ModelInfo | None
    runs: list[ReplayRun]
    cache: CacheModel
    recorded: RecordedUsage
    price: Prices
    #: The last message before each compaction the file records, on the runs' index axis.
    recorded_after: tuple[int, ...]
    #: A recorded compaction's point may be a rejected request's (Pi's overflow compaction follows its
    #: failed attempt); otherwise it is the last answered request's.
    recorded_after_overflow: bool
    path: Any  # what was walked: Pi's `Path` or a `TranscriptPath`
    origin: Any  # the session it came from: a Pi `Session` or a `Transcript`
    #: The path's replies recorded with no usage, a zero usage or a zero prompt (`UnmeteredReply`):
    #: no request points, not billed (Pi's exact walk: the ones Pi itself counts, at their recorded usage).
    unmetered: int = 0
    #: What the runs' walks shared (`replay.path_grid.PathGrid`: the path, the policy, the truth and the
    #: settings); None when the path was fitted only (`deferred`). `resummarize` walks again on it.
    walk_grid: Any = None
    #: `iso_seconds` of the path's request timestamps, read once for all its runs' pricing (`cost_of`).
    seconds: dict[str | None, float | None] = field(default_factory=dict, compare=False, repr=False)

    @property
    def recorded_costs(self) -> dict[int, float]:
        return self.recorded.costs

    def prices(self) -> dict[str, float] | None:
        return self.price.per_token

    def cost_of(self, run: ReplayRun) -> RunCost:
        return price_run(run, self.recorded.classes, self.cache, self.price.per_token, self.truth.overhead,
                         self.recorded.costs, self.seconds)

    def recorded_points(self, run: ReplayRun) -> list[tuple[int, float]]:
        """(the last message before it, the truth there) of every recorded compaction, one point each:
        the truth of the last request before it (a rejected one only where the agent compacts after its
        failed attempt, `recorded_after_overflow`); when every request before it was rejected (a window
        below the recorded context), the last rejected one's; at 0 when no request comes before it (a
        file that starts with a compaction)."""
        out = []
        for after in self.recorded_after:
            before = [p for p in run.requests if p.base_index <= after]
            answered = before if self.recorded_after_overflow else [p for p in before if not p.overflow]
            pick = answered or before
            out.append((after, pick[-1].truth if pick else 0.0))
        return out


def deferred(defer: bool, truth: Any, done: Sequence[SessionReplay]) -> bool:
    """Whether a path is fitted only, not replayed (`defer_prior_dominated`): the session's first path
    decides, by its fit being prior-dominated (`prior_dominated` of either truth model); every later
    path of the session follows it."""
    if not defer:
        return False
    return bool(truth.prior_dominated) if not done else not done[0].runs


def session_replay(*, source: str, agent: str, leaf_id: str | None, model_name: str, truth: Any,
                   model: ModelInfo | None, runs: list[ReplayRun], replies: Iterable[RecordedReply],
                   breaks: Sequence[int], price_pairs: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]],
                   recorded_after: Sequence[int], recorded_after_overflow: bool, path: Any, origin: Any,
                   unmetered: int = 0, walk_grid: Any = None) -> SessionReplay:
    """A `SessionReplay` from what a walk's builder read: the cache model learnt from the recorded replies."""
    seconds: dict[str | None, float | None] = {}
    rec = recorded_usage(replies, breaks, seconds)
    return SessionReplay(source, agent, leaf_id, model_name, truth, model, runs, learn_cache(rec.calls), rec,
                         prices_of(model, price_pairs, model_name), tuple(recorded_after), recorded_after_overflow, path, origin,
                         unmetered, walk_grid, seconds)
