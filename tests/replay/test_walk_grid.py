"""The transcript walk's grid fast path (`replay.path_grid.PathGrid`, shared by the settings of a grid, and
the running sums of `_Walk.truth_at` and `_Walk.view`) gives the same runs, request by request and
float for float, as the walk it replaced: a fresh per-setting state that sums the whole context at
every check point. Over every Codex and Claude Code sample under its own rule and Pi's, and the Pi
samples under Codex's and Claude Code's rules, at windows that compact, overflow and fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontools.policies.base import CountView
from sessiontools.read.sources import load_source
from sessiontools.replay import walk
from sessiontools.replay.session import replay_source, run_record
from tests.conftest import SAMPLES


class _WholeSums(walk._Walk):
    """The walk before the fast path: its own state per setting, every sum over the whole context."""

    def __init__(self, path, policy, settings, truth, grid=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(path, policy, settings, truth, None)

    def context(self, upto: int) -> list[int]:
        return [*self.prefix, *self.work[self.resume:upto]]

    def truth_at(self, upto: int, index: int | None = None) -> float:
        a = self.anchor
        at = index if index is not None else (self.work[upto - 1] if upto else 0)
        if a is not None and a[0] <= upto and self.truth.anchored and not self.diverged(at):
            return a[1] + sum(map(self.tokens_of, self.work[a[0]:upto]))
        return self.truth.overhead + self.summary + sum(map(self.tokens_of, self.context(upto)))

    def view(self, upto: int) -> CountView:
        ctx = self.context(upto)
        size = list(map(self.size_of, ctx))
        if self.last_usage is None:
            return CountView(None, (), size)
        after = [k for k, i in enumerate(ctx) if i > self.last_usage[0]]
        return CountView(self.last_usage[1], [size[k] for k in after], size)


def _cases() -> list[tuple[Path, str | None]]:
    out: list[tuple[Path, str | None]] = []
    for f in sorted((SAMPLES / "codex").glob("*.jsonl")) + sorted((SAMPLES / "claude-code").glob("*.jsonl")):
        out += [(f, None), (f, "pi-0")]
    for name in ("pi0-two-overflows", "pi1-threshold-5x", "pi1-branches"):
        out += [(SAMPLES / f"{name}.jsonl", "codex"), (SAMPLES / f"{name}.jsonl", "claude-code")]
    return out


def _records(f: Path, policy: str | None) -> list[dict]:  # type: ignore[type-arg]
    src = load_source(f)
    out = []
    pi = f.parent == SAMPLES  # a Pi sample's lab model is in no catalogue: windows given only
    for windows in ([12000, 24000, 48000],) if pi else (None, [12000, 24000, 48000]):
        prs = replay_source(src, windows=windows, reserves=[2000, 6000], keeps=[1000, 8000], policy=policy,
                            leaf=None, all_leaves=True, summary_tokens=None, limits=[None, 9000],
                            claude={"autocompact_pcts": [None, 40]})
        out += [(run, run_record(pr, run)) for pr in prs for run in pr.runs]
    return out


@pytest.mark.parametrize(("f", "policy"), _cases(), ids=lambda x: x.name if isinstance(x, Path) else str(x))
def test_grid_fast_path_changes_no_run(f: Path, policy: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _records(f, policy)
    monkeypatch.setattr(walk, "_Walk", _WholeSums)
    slow = _records(f, policy)
    assert len(fast) == len(slow) > 0
    assert [r for r, _ in fast] == [r for r, _ in slow]
    assert [d for _, d in fast] == [d for _, d in slow]


def test_the_cases_compact() -> None:
    """The grid reaches compactions (threshold and reactive) on the samples, so the sums are exercised."""
    n = sum(len(r.compactions) for f, p in _cases()[:6] for r, _ in _records(f, p))
    assert n > 0


def test_the_off_switch_pass_runs_once_per_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """`Policy.threshold_off_from` reads the recording once per path, not once per setting, and its
    memo (`claude_code_recorded.recorded_counts`) goes with the path."""
    import gc

    from sessiontools.policies import claude_code_recorded

    calls: list[int] = []
    real = claude_code_recorded._recorded_counts
    monkeypatch.setattr(claude_code_recorded, "_recorded_counts", lambda p, pol: (calls.append(1), real(p, pol))[1])
    prs = replay_source(load_source(SAMPLES / "claude-code" / "claude-2.1.20.jsonl"), windows=[60000, 90000],
                        reserves=[0], keeps=[0], policy=None, leaf=None, all_leaves=False, summary_tokens=None,
                        claude={"autocompact_pcts": [None, 40]})
    assert [len(pr.runs) for pr in prs] == [4]
    assert len(calls) == 1
    key = id(prs[0].path)
    assert key in claude_code_recorded._COUNTS
    del prs
    gc.collect()
    assert key not in claude_code_recorded._COUNTS
