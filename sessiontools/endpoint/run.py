"""One `resummarize` run: replay each session over the grid, regenerate every setting's chain
through the endpoint (chains in parallel up to the concurrency limit, each chain in order), write
one session file per input and setting, and return the JSON records. Each input goes to its agent's
summariser (`replay.registry.summarizer_of`, the `replay.summarizer.Summarizer` interface)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sessiontools.errors import UsageError
from sessiontools.replay.registry import summarizer_of
from sessiontools.replay.summarizer import Summarizer, SummaryGrid
from sessiontools.report.resummarize import output_path, result_record, write_session

#: The grid of a run (`replay.summarizer.SummaryGrid`).
Grid = SummaryGrid


def _summarizer(chain: Any) -> Summarizer:
    s = summarizer_of(chain.session)
    assert s is not None  # a chain is planned by its summariser
    return s


def plan_all(sessions: Sequence[Any], grid: SummaryGrid) -> list[Any]:
    """Every input's chains, each over the axes of its agent's rule (its summariser's `plan`)."""
    chains: list[Any] = []
    for s in sessions:
        summarizer = summarizer_of(s)
        if summarizer is None:
            raise UsageError(f"{getattr(s, 'path', s)}: no summariser for its agent")
        chains += summarizer.plan(s, grid)
    return chains


def check_outputs(chains: Sequence[Any], out_dir: Path) -> None:
    """Two outputs never share a name, and no output is an input (inputs are never touched)."""
    inputs = {Path(c.session.path).resolve() for c in chains}
    seen: dict[Path, str] = {}
    for c in chains:
        p = output_path(out_dir, _summarizer(c).empty_result(c)).resolve()
        if p in inputs:
            raise UsageError(f"-o {out_dir}: {p.name} would overwrite an input; write elsewhere")
        if p in seen and seen[p] != c.session.path:
            raise UsageError(f"-o {out_dir}: {c.session.path} and {seen[p]} would both write {p.name}; "
                             "resummarize them into separate directories")
        seen[p] = c.session.path


def prompt_keys(chains: Sequence[Any]) -> set[tuple[Summarizer, str]]:
    """The prompt sets the chains use: (summariser, key), for those whose prompt can be replaced."""
    out = set()
    for c in chains:
        s = _summarizer(c)
        key = s.prompts_key(c)
        if key is not None:
            out.add((s, key))
    return out


def resummarize(chains: Sequence[Any], summarize: Any, out_dir: Path, *, concurrency: int = 4,
                prompts: Mapping[tuple[Summarizer, str], Any] | None = None, prices: dict[str, float] | None = None,
                on_answer: Callable[[], None] | None = None) -> list[dict[str, Any]]:
    """Regenerate every chain and write its session file; records in the chains' order. `prompts`:
    the prompt set of each (summariser, `Summarizer.prompts_key`) (none given: the agent's own)."""
    check_outputs(chains, out_dir)

    def one(chain: Any) -> dict[str, Any]:
        s = _summarizer(chain)
        key = s.prompts_key(chain)
        res = s.regenerate(chain, summarize, (prompts or {}).get((s, key)) if key is not None else None, on_answer)
        path = None
        if res.error is None:
            path = output_path(out_dir, res)
            write_session(path, s.records(res))
        return result_record(res, path, prices)

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(pool.map(one, chains))


def total_requests(chains: Sequence[Any]) -> int:
    return sum(_summarizer(c).requests_of(c) for c in chains)
