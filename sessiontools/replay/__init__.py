"""Replay Pi's compaction offline over recorded sessions under other settings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sessiontools.errors import InputError
from sessiontools.read.pi.entries import Session
from sessiontools.replay.catalog import ModelInfo, lookup
from sessiontools.replay.metrics import METRICS, run_metrics
from sessiontools.replay.records import ReplayRun, ReplaySettings, TruthSource
from sessiontools.replay.simulate import POLICIES, simulate
from sessiontools.replay.truth import TruthModel, fit_truth
from sessiontools.replay.workload import Workload, build_workload
from sessiontools.transcript.pi.tree import Path, SessionTree


@dataclass(slots=True)
class PathReplay:
    """Everything replayed for one path of one session."""

    session: Session
    path: Path
    workload: Workload
    truth: TruthModel
    model: ModelInfo | None
    runs: list[ReplayRun]

    def prices(self) -> dict[str, float] | None:
        if self.model is not None and self.model.prices:
            return self.model.prices
        return recorded_prices(self.workload)


def recorded_prices(workload: Workload) -> dict[str, float] | None:
    """Per-token prices implied by the costs Pi recorded (when the model is not in the catalogue)."""
    tin = cin = tout = cout = 0.0
    for e in workload.base:
        msg = e.message or {}
        u = msg.get("usage")
        if msg.get("role") != "assistant" or not isinstance(u, dict) or not isinstance(u.get("cost"), dict):
            continue
        c = u["cost"]
        tin += float(u.get("input") or 0) + float(u.get("cacheRead") or 0) + float(u.get("cacheWrite") or 0)
        cin += float(c.get("input") or 0) + float(c.get("cacheRead") or 0) + float(c.get("cacheWrite") or 0)
        tout += float(u.get("output") or 0)
        cout += float(c.get("output") or 0)
    if not tin or not (cin or cout):
        return None
    return {"input": cin / tin, "output": cout / tout if tout else 0.0}


def default_window(workload: Workload, session: Session) -> tuple[int, ModelInfo | None]:
    info = lookup(workload.provider, workload.model)
    if info is None and not workload.model:
        raise InputError(f"{session.path}: no assistant message records a model; "
                         "give the context window with --context-window N")
    if info is None:
        raise InputError(
            f"{session.path}: model {workload.provider}/{workload.model} is not in the bundled catalogue; "
            "give its context window with --context-window N"
        )
    return info.context_window, info


def replay_session(
    session: Session,
    *,
    windows: Sequence[int] | None,
    reserves: Sequence[int],
    keeps: Sequence[int],
    policy: str | None,
    leaf: str | None = None,
    all_leaves: bool = False,
    summary_tokens: int | None = None,
) -> list[PathReplay]:
    """Replay every requested path of a session over the settings grid (window x reserve x keep)."""
    tree = SessionTree(session)
    paths = tree.all_paths() if all_leaves else [tree.path(leaf)]
    out = []
    for p in paths:
        pol = policy or ("pi-1" if session.pi_version == "1" else "pi-0")
        version = "1" if pol == "pi-1" else "0"
        wl = build_workload(p.entries, version)
        info = lookup(wl.provider, wl.model)
        ws = list(windows) if windows else [default_window(wl, session)[0]]
        truth = fit_truth(wl, summary_tokens=summary_tokens)
        runs = [simulate(wl, truth, ReplaySettings(w, r, k, pol)) for w in ws for r in reserves for k in keeps]
        out.append(PathReplay(session, p, wl, truth, info, runs))
    return out


def replay_records(session: Any, **options: Any) -> list[dict[str, Any]]:
    """One session file of any agent replayed, as JSON-ready run records (picklable, for --jobs).

    A Pi session under a Pi policy: `replay_session` (the exact port). Anything else (a Codex rollout,
    another agent's rule over a Pi session, ...): the generic simulator (`replay.transcripts`).
    `limits` (Codex's --auto-compact-limit values) only applies to the latter.
    """
    from sessiontools.replay.registry import PI_POLICIES

    limits = options.pop("limits", None) or [None]
    policy = options.get("policy")
    if getattr(session, "agent", "pi") == "pi" and (policy is None or policy in PI_POLICIES):
        return [run_record(pr, run) for pr in replay_session(session, **options) for run in pr.runs]
    from sessiontools.replay.transcripts import replay_transcript
    from sessiontools.transcript.load import transcript_of

    t = transcript_of(session, leaf=options.get("leaf"), all_leaves=options.get("all_leaves", False))
    return replay_transcript(t, windows=options.get("windows"), reserves=options["reserves"], keeps=options["keeps"],
                             policy=policy, limits=limits, summary_tokens=options.get("summary_tokens"),
                             all_leaves=options.get("all_leaves", False))


def run_record(pr: PathReplay, run: ReplayRun) -> dict[str, Any]:
    """One element of the replay JSON `runs` list."""
    return {
        "session": pr.session.path,
        "leaf_id": pr.path.leaf_id,
        "model": f"{pr.workload.provider}/{pr.workload.model}",
        "settings": run.settings.to_dict(),
        "compactions": [c.to_dict() for c in run.compactions],
        "metrics": run_metrics(run, pr.prices()),
        "recorded_match": run.recorded_match.to_dict(),
        "truth_model": {
            "overhead_tokens": round(pr.truth.overhead),
            "ratio_to_chars4": round(pr.truth.ratio, 4),
            "entries_attributed": pr.truth.attributed,
            "entries_modelled": pr.truth.modelled,
            "summary_tokens": round(pr.truth.summary_tokens),
            "requests_fitted": pr.truth.fit.n if pr.truth.fit else 0,
            "prior_dominated": pr.truth.fit.prior_dominated if pr.truth.fit else True,
            "notes": pr.truth.notes,
        },
        "requests_from_recorded_usage": sum(1 for r in run.requests if r.truth_source == TruthSource.RECORDED),
        "requests_from_model": sum(1 for r in run.requests if r.truth_source != TruthSource.RECORDED),
        "no_compaction": run.no_compaction,
    }


__all__ = [
    "METRICS",
    "POLICIES",
    "PathReplay",
    "ReplayRun",
    "ReplaySettings",
    "TruthModel",
    "Workload",
    "build_workload",
    "fit_truth",
    "replay_records",
    "replay_session",
    "run_record",
    "simulate",
]
