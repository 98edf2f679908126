"""Regenerate the summaries of a replay: each simulated compaction's own summarisation request,
chained, answered by a summariser the caller passes in, written back as a Pi session.

`plan_chains` replays a Pi session over a settings grid (the exact port of Pi's compaction, as
`replay` does) and keeps, for every setting, the simulated path and each compaction's
`Preparation`. `regenerate` walks one setting's compactions in order: it builds the requests Pi
would send (`policies.pi.summarize`) with the previous *regenerated* summary as the previous summary,
so drift accumulates as it would, asks `summarize` (a callable: the network lives above this layer),
and assembles each answer as Pi does. `session_records` gives the new session file's records: the
simulated path with the regenerated compactions at their simulated places, relinked.

Where compactions fire is the replay's decision, and a regenerated summary's own length moves the
later ones: once compaction n is regenerated, the setting is replayed again with the first n
summaries given (`simulate(summaries=...)`, each sized by its output tokens as the endpoint counted
them, or by the truth model when it did not say), so the next check points count the new summary,
not the truth model's guess. The compactions before n are decided before any given summary counts,
so they stay where they were. A compaction the user or an extension made is kept as recorded (its
prompt is not Pi's) and restarts the chain from its recorded summary.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessiontools.errors import InputError, UsageError
from sessiontools.policies.pi.summarize import (
    ModelLimits,
    Prompts,
    RequestKind,
    SummaryPlan,
    SummaryRequest,
    answer_text,
    pi_prompts,
    plan_summary,
    prompts_version,
)
from sessiontools.policies.pi.usage import current_system_message
from sessiontools.read.pi.entries import Entry, Session
from sessiontools.replay.pi_compact import GivenSummary
from sessiontools.replay.records import ReplayRun, ReplaySettings, SimCompaction, TruthSource
from sessiontools.replay.simulate import simulate
from sessiontools.replay.summarizer import Answer, Summarize, SummarizerError, SummaryGrid
from sessiontools.replay.truth import TruthModel, entry_messages, fit_truth
from sessiontools.transcript.pi.tree import SessionTree
from sessiontools.transcript.pi.workload import Workload, build_workload


@dataclass(slots=True)
class Chain:
    """One path of one session under one setting, ready to regenerate."""

    session: Session
    leaf_id: str | None
    settings: ReplaySettings
    run: ReplayRun
    limits: ModelLimits
    workload: Workload | None = None  # what `run` replayed (None: `run` is final, nothing is replayed again)
    truth: TruthModel | None = None

    @property
    def label(self) -> str:
        s = self.settings
        return f"w{s.context_window}-r{s.reserve_tokens}-k{s.keep_recent_tokens}-{s.policy.value}"


@dataclass(slots=True)
class Regenerated:
    """One compaction of a chain with its regenerated summary (or kept as recorded)."""

    compaction: SimCompaction
    plan: SummaryPlan | None  # None: a user's compaction, kept as recorded
    calls: list[tuple[SummaryRequest, Answer]]
    summary: str
    record: dict[str, Any]  # the compaction entry written to the new session

    @property
    def regenerated(self) -> bool:
        return self.plan is not None


@dataclass(slots=True)
class ChainResult:
    chain: Chain
    compactions: list[Regenerated] = field(default_factory=list)
    error: str | None = None  # why the chain stopped (the summariser failed); no file then


def plan_chains(
    session: Session, *, windows: Sequence[int], reserves: Sequence[int], keeps: Sequence[int],
    policy: str | None = None, leaf: str | None = None, summary_tokens: int | None = None,
    model_max_tokens: int | None = None,
) -> list[Chain]:
    """Replay `session`'s path (the leaf Pi resumes, or `leaf`) at every setting of the grid."""
    if not session.entries:
        raise InputError(f"{session.path}: no entries after the header: nothing to resummarize")
    path = SessionTree(session).path(leaf)
    pol = policy or ("pi-1" if session.pi_version == "1" else "pi-0")
    wl = build_workload(path.entries, "1" if pol == "pi-1" else "0")
    truth = fit_truth(wl, summary_tokens=summary_tokens)
    out = []
    for w in windows:
        for r in reserves:
            if r >= w:
                raise InputError(f"{session.path}: reserveTokens {r:,} is not below the window {w:,}")
            for k in keeps:
                s = ReplaySettings(w, r, k, pol)
                run = simulate(wl, truth, s, keep_path=True)
                limits = ModelLimits(w, model_max_tokens) if model_max_tokens else ModelLimits(w)
                out.append(Chain(session, path.leaf_id, s, run, limits, wl, truth))
    return out


def _entry_id(chain: Chain, n: int, taken: set[str]) -> str:
    """A deterministic 8-hex id (Pi's shape) for the n-th new compaction, unused in the session."""
    seed = f"{chain.session.header.id if chain.session.header else chain.session.path}:{chain.label}:{n}"
    k = 0
    while True:
        h = hashlib.sha256(f"{seed}:{k}".encode()).hexdigest()[:8]
        if h not in taken:
            taken.add(h)
            return h
        k += 1


def _usage(calls: list[tuple[SummaryRequest, Answer]]) -> dict[str, Any] | None:
    """Pi 1.x's `usage` of a compaction entry: the summarisation calls' tokens, as the endpoint counted."""
    if not calls or any(a.input_tokens is None or a.output_tokens is None for _, a in calls):
        return None
    inp = sum(a.input_tokens or 0 for _, a in calls)
    out = sum(a.output_tokens or 0 for _, a in calls)
    return {"input": inp, "output": out, "cacheRead": 0, "cacheWrite": 0, "totalTokens": inp + out}


def _system_message(path: Sequence[Entry], upto: int) -> dict[str, Any] | None:
    msgs = [m for e in path[:upto] if e.role == "system" for m in entry_messages(e, "1")]
    return current_system_message(msgs)


def _record(chain: Chain, sc: SimCompaction, summary: str, plan: SummaryPlan,
            calls: list[tuple[SummaryRequest, Answer]], n: int, taken: set[str], at: int,
            path: Sequence[Entry]) -> dict[str, Any]:
    assert sc.entry is not None and sc.preparation is not None
    prep = sc.preparation
    base = dict(sc.entry.data) if sc.summary_source == TruthSource.RECORDED else {}
    rec: dict[str, Any] = {
        "type": "compaction",
        "id": base.get("id") or _entry_id(chain, n, taken),
        "parentId": sc.parent_entry_id,
        "timestamp": base.get("timestamp") or _timestamp_before(path, at),
    }
    rec.update({k: v for k, v in base.items() if k not in rec})
    rec["summary"] = summary
    rec["firstKeptEntryId"] = prep.first_kept_entry_id
    rec["tokensBefore"] = prep.tokens_before
    rec["details"] = plan.details()
    if prep.pi_version == "1":
        usage = _usage(calls)
        if usage is not None:
            rec["usage"] = usage
        else:
            rec.pop("usage", None)
        rec.setdefault("fromHook", False)
        if "systemMessage" not in rec:
            system = _system_message(path, at)
            if system is not None:
                rec["systemMessage"] = system
    return rec


def _timestamp_before(path: Sequence[Entry], at: int) -> Any:
    for e in reversed(path[:at]):
        ts = e.data.get("timestamp")
        if ts is not None:
            return ts
    return None


def regenerate(chain: Chain, summarize: Summarize, prompts: Prompts | None = None,
               on_answer: Callable[[], None] | None = None) -> ChainResult:
    """Regenerate `chain`'s summaries in order, each the next one's previous summary; after each, the
    setting is replayed again with the regenerated summaries so far (its own size moves the next
    compactions). `chain.run` ends as the final run, whose path the new session holds."""
    result = ChainResult(chain)
    taken = {e.id for e in chain.session.entries if e.id}
    given: list[GivenSummary | None] = []
    previous: Any = None
    run = chain.run
    n = k = 0
    while k < len(run.compactions):
        sc = run.compactions[k]
        at = next((i for i, e in enumerate(run.path) if e is sc.entry), len(run.path))
        prep = sc.preparation
        k += 1
        if prep is None:  # the user's own compaction: kept as recorded, the chain restarts from it
            assert sc.entry is not None
            previous = sc.entry.data.get("summary")
            result.compactions.append(Regenerated(sc, None, [], previous or "", dict(sc.entry.data)))
            given.append(None)
            continue
        n += 1
        prev = previous if prep.has_previous_compaction else None
        plan = plan_summary(prep, prev, chain.limits, prompts)
        calls: list[tuple[SummaryRequest, Answer]] = []
        answers: dict[RequestKind, str] = {}
        for req in plan.requests:
            try:
                ans = summarize(req)
            except SummarizerError as exc:
                result.error = f"compaction {n} ({req.kind.value} request): {exc}"
                return result
            calls.append((req, ans))
            answers[req.kind] = ans.text
            if on_answer is not None:
                on_answer()
        history = answers.get(RequestKind.UPDATE, answers.get(RequestKind.INITIAL))
        summary = plan.assemble(history, answers.get(RequestKind.TURN_PREFIX))
        result.compactions.append(
            Regenerated(sc, plan, calls, summary, _record(chain, sc, summary, plan, calls, n, taken, at, run.path)))
        previous = summary
        given.append(GivenSummary(summary, summary_tokens(summary, calls, chain.truth)))
        if chain.workload is not None and chain.truth is not None:
            run = simulate(chain.workload, chain.truth, chain.settings, keep_path=True, summaries=given)
    # The final run holds the same first compactions (decided before any later summary counted):
    # each regenerated record replaces that run's entry.
    for r, sc in zip(result.compactions, run.compactions, strict=False):
        r.compaction = sc
    chain.run = run
    return result


def summary_tokens(summary: str, calls: Sequence[tuple[SummaryRequest, Answer]],
                   truth: TruthModel | None) -> float | None:
    """A regenerated summary's size in the context: the output tokens the endpoint counted for its
    answers, plus the text Pi adds around them (file lists, the turn-prefix merge) at the truth model's
    rate; None (the truth model counts the whole text) when the endpoint did not say."""
    if not calls or any(a.output_tokens is None for _, a in calls):
        return None
    answered = sum(len(a.text) for _, a in calls)
    extra = max(0, len(summary) - answered)
    return float(sum(a.output_tokens or 0 for _, a in calls)) + (truth.text_tokens(extra) if truth else extra / 4)


def requests_of(chain: Chain) -> int:
    """How many summarisation requests regenerating `chain` makes at most (for a progress bar)."""
    n = 0
    for sc in chain.run.compactions:
        if sc.preparation is not None:
            p = sc.preparation
            split = p.is_split_turn and bool(p.turn_prefix_messages)
            n += (1 if not split or p.messages_to_summarize else 0) + (1 if split else 0)
    return n


def session_records(result: ChainResult) -> list[dict[str, Any]]:
    """The new session file: the input's header (version 3), then the simulated path with the
    regenerated compactions in place, each entry's parentId the entry before it."""
    chain = result.chain
    header = dict(chain.session.header.data) if chain.session.header is not None else {"type": "session"}
    header["version"] = 3
    replaced = {id(r.compaction.entry): r.record for r in result.compactions}
    out: list[dict[str, Any]] = [header]
    parent: Any = None
    for e in chain.run.path:
        rec = replaced.get(id(e))
        rec = dict(rec) if rec is not None else dict(e.data)
        rec["parentId"] = parent
        out.append(rec)
        parent = rec.get("id")
    return out


def _windows(session: Session, grid: SummaryGrid) -> list[int]:
    """The grid's windows, else the recorded model's (from the catalogue and `grid.models`)."""
    if grid.windows:
        return list(grid.windows)
    from sessiontools.replay.catalog import load_model_files, lookup

    wl = build_workload(SessionTree(session).path(grid.leaf).entries, session.pi_version)
    info = lookup(wl.provider, wl.model, load_model_files(grid.models))
    if info is None:
        raise UsageError(f"{session.path}: model {wl.provider}/{wl.model} is not in the catalogue; give its window "
                         "with --context-window N")
    return [info.context_window]


class PiSummarizer:
    """Pi's summariser (`replay.summarizer.Summarizer`): the exact port's compactions over window x
    reserve x keep, Pi's summarisation requests (`policies.pi.summarize`), a Pi session written back."""

    what = "Pi session"
    request_type = SummaryRequest

    def unsupported(self, source: Any) -> str | None:
        return None

    def plan(self, source: Session, grid: SummaryGrid) -> list[Chain]:
        return plan_chains(source, windows=_windows(source, grid), reserves=grid.reserves, keeps=grid.keeps,
                           policy=grid.policy, leaf=grid.leaf, summary_tokens=grid.summary_tokens,
                           model_max_tokens=grid.model_max_tokens)

    def requests_of(self, chain: Chain) -> int:
        return requests_of(chain)

    def empty_result(self, chain: Chain) -> ChainResult:
        return ChainResult(chain)

    def prompts_key(self, chain: Chain) -> str | None:
        return prompts_version(chain.settings.policy)

    def prompts(self, key: str, initial: str | None, update: str | None) -> Prompts:
        from dataclasses import replace

        p = pi_prompts(key)
        return replace(p, **{k: v for k, v in (("initial", initial), ("update", update)) if v is not None})

    def regenerate(self, chain: Chain, summarize: Summarize, prompts: Prompts | None,
                   on_answer: Callable[[], None] | None) -> ChainResult:
        return regenerate(chain, summarize, prompts, on_answer)

    def records(self, result: ChainResult) -> list[dict[str, Any]]:
        return session_records(result)

    def reply_text(self, content: list[Any]) -> str:
        return answer_text(content)


SUMMARIZER = PiSummarizer()

__all__ = [
    "SUMMARIZER",
    "Answer",
    "Chain",
    "ChainResult",
    "Regenerated",
    "SummaryRequest",
    "plan_chains",
    "regenerate",
    "requests_of",
    "session_records",
]
