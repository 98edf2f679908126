"""One `resummarize` run: replay each session over the grid, regenerate every setting's chain
through the endpoint (chains in parallel up to the concurrency limit, each chain in order), write
one session file per input and setting, and return the JSON records."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessiontools.errors import UsageError
from sessiontools.policies.pi.summarize import Prompts, prompts_version
from sessiontools.read.pi.entries import Session
from sessiontools.replay.resummarize import (
    Chain,
    ChainResult,
    plan_chains,
    regenerate,
    requests_of,
)
from sessiontools.replay.resummarize_codex import (
    CodexChain,
    CodexChainResult,
    plan_codex_chains,
    regenerate_codex,
    requests_of_codex,
)
from sessiontools.report.resummarize import output_path, result_record, write_session


@dataclass(frozen=True, slots=True)
class Grid:
    windows: Sequence[int] | None
    reserves: Sequence[int]
    keeps: Sequence[int]
    policy: str | None = None
    leaf: str | None = None
    summary_tokens: int | None = None
    model_max_tokens: int | None = None
    limits: Sequence[int | None] = (None,)  # Codex: model_auto_compact_token_limit (None: Codex's default)


def _windows(session: Session, grid: Grid, models: Sequence[str]) -> list[int]:
    if grid.windows:
        return list(grid.windows)
    from sessiontools.replay.catalog import load_model_files, lookup
    from sessiontools.transcript.pi.tree import SessionTree
    from sessiontools.transcript.pi.workload import build_workload

    wl = build_workload(SessionTree(session).path(grid.leaf).entries, session.pi_version)
    info = lookup(wl.provider, wl.model, load_model_files(models))
    if info is None:
        raise UsageError(f"{session.path}: model {wl.provider}/{wl.model} is not in the catalogue; give its window "
                         "with --context-window N")
    return [info.context_window]


def plan_all(sessions: Sequence[Any], grid: Grid, models: Sequence[str] = ()) -> list[Chain | CodexChain]:
    """Every input's chains: a Pi session's over window x reserve x keep, a Codex rollout's over
    window x auto-compact limit."""
    from sessiontools.read.codex.load import rollout_objects
    from sessiontools.read.codex.records import Rollout

    chains: list[Chain | CodexChain] = []
    for s in sessions:
        if isinstance(s, Rollout):
            chains += plan_codex_chains(s, rollout_objects(s.path), windows=grid.windows, limits=grid.limits)
            continue
        chains += plan_chains(s, windows=_windows(s, grid, models), reserves=grid.reserves, keeps=grid.keeps,
                              policy=grid.policy, leaf=grid.leaf, summary_tokens=grid.summary_tokens,
                              model_max_tokens=grid.model_max_tokens)
    return chains


def _result(chain: Chain | CodexChain) -> ChainResult | CodexChainResult:
    return CodexChainResult(chain) if isinstance(chain, CodexChain) else ChainResult(chain)


def check_outputs(chains: Sequence[Chain | CodexChain], out_dir: Path) -> None:
    """Two outputs never share a name, and no output is an input (inputs are never touched)."""
    inputs = {Path(c.session.path).resolve() for c in chains}
    seen: dict[Path, str] = {}
    for c in chains:
        p = output_path(out_dir, _result(c)).resolve()
        if p in inputs:
            raise UsageError(f"-o {out_dir}: {p.name} would overwrite an input; write elsewhere")
        if p in seen and seen[p] != c.session.path:
            raise UsageError(f"-o {out_dir}: {c.session.path} and {seen[p]} would both write {p.name}; "
                             "resummarize them into separate directories")
        seen[p] = c.session.path


def resummarize(chains: Sequence[Chain | CodexChain], summarize: Any, out_dir: Path, *, concurrency: int = 4,
                prompts: Mapping[str, Prompts] | None = None, prices: dict[str, float] | None = None,
                on_answer: Callable[[], None] | None = None) -> list[dict[str, Any]]:
    """Regenerate every chain and write its session file; records in the chains' order."""
    check_outputs(chains, out_dir)

    def one(chain: Chain | CodexChain) -> dict[str, Any]:
        res: ChainResult | CodexChainResult
        if isinstance(chain, CodexChain):
            res = regenerate_codex(chain, summarize, on_answer)
        else:
            res = regenerate(chain, summarize, (prompts or {}).get(prompts_version(chain.settings.policy)), on_answer)
        path = None
        if res.error is None:
            path = output_path(out_dir, res)
            write_session(path, res)
        return result_record(res, path, prices)

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(pool.map(one, chains))


def total_requests(chains: Sequence[Chain | CodexChain]) -> int:
    return sum(requests_of_codex(c) if isinstance(c, CodexChain) else requests_of(c) for c in chains)
