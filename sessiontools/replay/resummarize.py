"""Regenerate the summaries of a replay, for every agent, on the one walk (`replay.walk`): each
simulated compaction's own summarisation request, chained, answered by a summariser the caller
passes in, written back in the agent's own format.

`plan` replays an input's transcript over the settings grid of its agent's rule, as `replay` does
(`replay.transcripts.replay_transcript`: its windows, its policy, its truth), and keeps each setting's
run as a `Chain`, with the replay's own `PathGrid` to walk again on. `regenerate` walks
one chain's compactions in order. What a compaction sends, what is kept of the answer, how a summary
is chained into the next request and the file written back are the agent's (its `Rewriter`, in
`policies/`, named by `replay.registry.SUMMARIZERS`); this module knows none of them.

Where compactions fire is the replay's decision, and a regenerated summary's own length moves the
later ones: once compaction n is regenerated, the setting is replayed again with the first n
summaries given (`simulate_path(summary_sizes=...)`, each sized by its output tokens as the endpoint
counted them, or by the truth model when it did not say; the policy's own count reads its text), and
compaction n + 1 is asked at its new place. Compaction n's place depends only on the summaries before
it, so no request is sent for a place that moves later, and each request is asked once. A compaction
the user or an extension made is kept as recorded (its prompt is not the agent's).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sessiontools.errors import InputError
from sessiontools.policies.base import Policy
from sessiontools.replay.neutral import NeutralTruth
from sessiontools.replay.path_grid import PathGrid
from sessiontools.replay.records import ReplayRun, ReplaySettings, SimCompaction
from sessiontools.replay.summarizer import Answer, Rewriter, Summarize, SummarizerError, SummaryGrid
from sessiontools.transcript.model import TranscriptPath


@dataclass(slots=True)
class Chain:
    """One path of one input under one setting, ready to regenerate."""

    session: Any  # the input, as its agent's reader loaded it
    rewriter: Rewriter
    path: TranscriptPath
    policy: Policy
    truth: NeutralTruth
    grid: SummaryGrid
    run: ReplayRun  # the setting's run (the final one after `regenerate`), the agent's own path kept
    native: Any = None  # the rewriter's own reading of the input (`Rewriter.native`)
    walk_grid: PathGrid | None = None  # what the walks of this path share (`replay.path_grid`)

    @property
    def settings(self) -> ReplaySettings:
        return self.run.settings

    @property
    def leaf_id(self) -> str | None:
        return self.path.leaf_id

    @property
    def label(self) -> str:
        return self.rewriter.label(self.settings)


@dataclass(slots=True)
class Regenerated:
    """One compaction of a chain with its regenerated summary (or kept as recorded)."""

    compaction: SimCompaction
    calls: list[tuple[Any, Answer]]
    summary: str
    regenerated: bool = True
    recorded: str | None = None  # the recorded summary at this place (None: a new place)
    record: Any = None  # the rewriter's own record of it (Pi: the compaction entry written)
    plan: Any = None  # the rewriter's own plan of its requests


@dataclass(slots=True)
class ChainResult:
    chain: Chain
    compactions: list[Regenerated] = field(default_factory=list)
    error: str | None = None  # why the chain stopped (the summariser failed); no file then
    lines: list[dict[str, Any]] = field(default_factory=list)  # the new file's records


class _Stop(Exception):
    """The pass regenerated as many compactions as it was asked to."""


class _Failed(Exception):
    """The summariser could not answer (the chain stops; the message says where)."""


class Pass:
    """One pass of a rewriter over a chain: the requests it sends (asked once per chain) and the
    compactions it regenerates, stopping after `limit` of them (the driver replays again)."""

    def __init__(self, result: ChainResult, ask: Callable[[Any], Answer], limit: int | None) -> None:
        self.result, self._ask, self.limit = result, ask, limit
        self.regenerated = 0

    def ask(self, request: Any, n: int) -> Answer:
        """The answer to `request`, compaction `n`'s (numbered in the failure's message)."""
        try:
            return self._ask(request)
        except SummarizerError as exc:
            raise _Failed(f"compaction {n} ({request.kind.value} request): {exc}") from exc

    def done(self, compaction: SimCompaction, calls: list[tuple[Any, Answer]], summary: str, *,
             regenerated: bool = True, recorded: str | None = None, record: Any = None, plan: Any = None) -> None:
        """Compaction `compaction` regenerated as `summary` by `calls` (or kept as recorded)."""
        r = Regenerated(compaction, calls, summary, regenerated, recorded, record, plan)
        self.result.compactions.append(r)
        if r.regenerated:
            self.regenerated += 1
            if self.limit is not None and self.regenerated >= self.limit:
                raise _Stop


def plan(source: Any, rewriter: Rewriter, grid: SummaryGrid) -> list[Chain]:
    """`source` replayed at every setting of `grid` its agent's rule takes: one chain each."""
    from sessiontools.replay.transcripts import replay_transcript
    from sessiontools.transcript.load import transcript_of

    t = transcript_of(source, leaf=grid.leaf)
    if not t.paths or not t.paths[0].messages:
        raise InputError(f"{t.source}: no messages in the file: nothing to resummarize")
    native = rewriter.native(source)
    out = []
    for tr in replay_transcript(t, windows=grid.windows, reserves=grid.reserves, keeps=grid.keeps, policy=grid.policy,
                                limits=grid.limits, summary_tokens=grid.summary_tokens, models=grid.models,
                                keep_path=True):
        shared: PathGrid = tr.walk_grid  # the replay's own: its policy and truth, for the walks again
        for run in tr.runs:
            s = run.settings
            if s.reserve_tokens >= s.context_window:
                raise InputError(f"{t.source}: reserveTokens {s.reserve_tokens:,} is not below the window "
                                 f"{s.context_window:,}")
            out.append(Chain(source, rewriter, tr.path, shared.policy, tr.truth, grid, run, native, shared))
    return out


def regenerate(chain: Chain, summarize: Summarize, prompts: Any = None,
               on_answer: Callable[[], None] | None = None) -> ChainResult:
    """Regenerate `chain`'s compactions in order (see the module docstring); `result.lines` is the
    new file (empty when the summariser failed: `result.error` says where). `chain.run` ends as the
    final run."""
    from sessiontools.replay.walk import simulate_path

    rw = chain.rewriter
    answers: dict[str, Answer] = {}

    def once(req: Any) -> Answer:
        key = json.dumps(rw.request_key(req), sort_keys=True, ensure_ascii=False)
        if key not in answers:
            answers[key] = summarize(req)
            if on_answer is not None:
                on_answer()
        return answers[key]

    n = 1
    while True:
        result = ChainResult(chain)
        p = Pass(result, once, n)
        try:
            result.lines = rw.rewrite(chain, p, prompts)
            return result
        except _Failed as exc:
            result.error = str(exc)
            return result
        except _Stop:
            pass
        # The n-th summary of the walk is its n-th compaction's, the user's among them (a rewriter
        # that keeps those as recorded may not report them): each size by its compaction.
        given = {id(r.compaction): rw.given(r, chain.truth) for r in result.compactions}
        sizes = [given.get(id(sc)) for sc in chain.run.compactions]
        chain.run = simulate_path(chain.path, chain.policy, chain.settings, chain.truth, sizes, grid=chain.walk_grid,
                                  keep_path=True)
        n += 1


class Summarizer:
    """An agent's summariser (`replay.summarizer.Summarizer`): this driver over the agent's `Rewriter`."""

    def __init__(self, rewriter: Rewriter) -> None:
        self.rewriter = rewriter
        self.what = rewriter.what
        self.request_type = rewriter.request_type

    def unsupported(self, source: Any) -> str | None:
        return self.rewriter.unsupported(source)

    def plan(self, source: Any, grid: SummaryGrid) -> list[Chain]:
        return plan(source, self.rewriter, grid)

    def requests_of(self, chain: Chain) -> int:
        return self.rewriter.requests_of(chain)

    def empty_result(self, chain: Chain) -> ChainResult:
        return ChainResult(chain)

    def prompts_key(self, chain: Chain) -> str | None:
        return self.rewriter.prompts_key(chain.settings.policy.value)

    def prompts(self, key: str, initial: str | None, update: str | None) -> Any:
        return self.rewriter.prompts(key, initial, update)

    def regenerate(self, chain: Chain, summarize: Summarize, prompts: Any,
                   on_answer: Callable[[], None] | None) -> ChainResult:
        return regenerate(chain, summarize, prompts, on_answer)

    def records(self, result: ChainResult) -> list[dict[str, Any]]:
        return result.lines

    def reply_text(self, content: list[Any]) -> str:
        return self.rewriter.reply_text(content)


def summarizer(module: str) -> Summarizer:
    """The summariser of the agent whose `Rewriter` is module `module`'s `REWRITER`."""
    from importlib import import_module

    return Summarizer(import_module(module).REWRITER)


__all__ = ["Chain", "ChainResult", "Pass", "Regenerated", "Summarizer", "plan", "regenerate", "summarizer"]
