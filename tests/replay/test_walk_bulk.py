"""The one walk's bulk path (`replay.walk_bulk`: a grid's settings take the events they walk alike
from one trace) gives the same runs, on every field, as the step alone (`walk_bulk.ENABLED` off): on
every Pi sample under both Pi policies and under Codex's and Claude Code's rules, on each agent's
samples under its own and the other agents' policies, on every 12th file of the Codex and Claude Code
bench corpora, and on the shared real Pi sessions; at windows that compact, overflow and never
compact. The bulk side includes the spans of plain requests `replay.walk_plain` answers after a
setting's compactions (shown taken under each kind of rule); further tests show the comparison fails
when the trace or a span's count is wrong, and that each policy's count in column form is its count."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontools.replay import walk_bulk
from sessiontools.replay.records import RequestPoint
from tests.conftest import SAMPLES, shared_sessions

ROOT = Path(__file__).resolve().parents[2]
PI = sorted(SAMPLES.glob("*.jsonl"))
CODEX = sorted((SAMPLES / "codex").glob("*.jsonl"))
CLAUDE = sorted((SAMPLES / "claude-code").glob("*.jsonl"))
CORPUS = [*sorted((ROOT / "bench" / "corpus-codex").glob("*.jsonl"))[::12],
          *sorted((ROOT / "bench" / "corpus-claude-code").glob("*.jsonl"))[::12]]


def _transcript(path: Path, policy: str | None) -> Any:
    if path.parent == SAMPLES or path in shared_sessions():
        from sessiontools.read.sources import load_source
        from sessiontools.transcript.pi.neutral import pi_transcript

        return pi_transcript(load_source(path), pi_version="1" if policy == "pi-1" else "0")
    from sessiontools.transcript.load import load_transcript

    return load_transcript(path)


def _grid(path: Path, policy: str | None, windows: tuple[int, ...], bulk: bool) -> list[Any]:
    from sessiontools.replay.transcripts import replay_transcript

    walk_bulk.ENABLED = bulk
    try:
        prs = replay_transcript(_transcript(path, policy), windows=list(windows), reserves=[1000, 4000],
                              keeps=[500, 20000], policy=policy, limits=[None, 20000, 60000],
                              claude={"autocompact_pcts": [None, 50, 80]})
    finally:
        walk_bulk.ENABLED = True
    return [r for pr in prs for r in pr.runs]


def differences(a: list[Any], b: list[Any]) -> Iterator[str]:
    """Where two grids' runs differ: a field's value, its repr (an int for a float) or a point's type."""
    if len(a) != len(b):
        yield "#runs"
    for n, (x, y) in enumerate(zip(a, b, strict=False)):
        for f in dataclasses.fields(x):
            u, v = getattr(x, f.name), getattr(y, f.name)
            if f.compare and (u != v or repr(u) != repr(v)):
                yield f"run {n} ({x.settings.context_window}, {x.settings.threshold}): {f.name}"
        if any(type(p) is not RequestPoint for p in y.requests):
            yield f"run {n}: a request point that is not a RequestPoint"


def _cases() -> list[tuple[Path, str | None, tuple[int, ...]]]:
    small = (8000, 24000, 200000)
    wide = (16000, 64000, 272000)
    out: list[tuple[Path, str | None, tuple[int, ...]]] = []
    out += [(p, pol, small) for p in PI for pol in ("pi-0", "pi-1", "codex", "claude-code")]
    out += [(p, pol, wide) for p in CODEX for pol in (None, "pi-0", "claude-code")]
    out += [(p, pol, wide) for p in CLAUDE for pol in (None, "claude-code-reactive", "codex", "pi-1")]
    out += [(p, None, (64000, 128000, 272000)) for p in CORPUS]
    out += [(p, pol, (32000, 128000)) for p in shared_sessions() for pol in ("pi-0", "codex")]
    return out


@pytest.mark.parametrize(("path", "policy", "windows"), _cases(),
                         ids=lambda v: v.name if isinstance(v, Path) else str(v) if isinstance(v, str) else "")
def test_bulk_walk_changes_no_run(path: Path, policy: str | None, windows: tuple[int, ...]) -> None:
    assert list(differences(_grid(path, policy, windows, bulk=False), _grid(path, policy, windows, bulk=True))) == []


def test_bulk_walk_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparisons above are not vacuous: the bulk path answers events of a grid's later settings,
    all of them where a setting never compacts, and none of its first setting's."""
    taken: list[int] = []
    forward = walk_bulk.fast_forward
    monkeypatch.setattr(walk_bulk, "fast_forward", lambda w: (taken.append(n := forward(w)), n)[1])
    runs = _grid(SAMPLES / "pi0-threshold-5x.jsonl", "pi-0", (16000, 200000), bulk=True)
    assert len(runs) == 8 and len(taken) == 9  # and the trace's own walk, which takes the step
    assert taken[0] == 0 and all(n > 0 for n in taken[1:])
    assert not runs[-1].compactions  # at 200k: every event of the path from the trace


def test_the_comparison_sees_a_wrong_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: a trace that ignores where a setting's policy fires takes events the
    setting compacts at, and the runs differ (its compactions, counters and request points)."""
    sample = SAMPLES / "pi0-threshold-5x.jsonl"
    step = _grid(sample, "pi-0", (16000, 200000), bulk=False)
    monkeypatch.setattr(walk_bulk.Trace, "stop", lambda self, fires, threshold, window: self.end)
    wrong = _grid(sample, "pi-0", (16000, 200000), bulk=True)
    found = list(differences(step, wrong))
    assert any("compactions" in d for d in found), found
    assert list(differences(step, step)) == []


@pytest.mark.parametrize("sample", [SAMPLES / "pi0-threshold-5x.jsonl", SAMPLES / "pi1-two-overflows.jsonl",
                                    SAMPLES / "codex" / "codex-overflow.jsonl",
                                    SAMPLES / "claude-code" / "claude-manual.jsonl"], ids=lambda p: p.stem)
def test_a_grid_that_does_not_know_its_settings(sample: Path) -> None:
    """A grid made without its settings (`PathGrid(path, policy, truth)`, as a caller walking settings
    one by one makes it): its first walk takes the step, the second walks the whole trace, and every run
    is the step's."""
    from sessiontools.replay.neutral import fit_neutral_truth
    from sessiontools.replay.path_grid import PathGrid
    from sessiontools.replay.registry import make_policy
    from sessiontools.replay.transcripts import policy_for
    from sessiontools.replay.walk import replay_settings, simulate_path

    t = _transcript(sample, None)
    path = t.paths[0]
    policy = make_policy(policy_for(t, None), None, None)
    truth = fit_neutral_truth(path)
    settings = [replay_settings(policy, w, r, 2000) for w in (12000, 24000, 200000) for r in (1000, 4000)]

    def runs(bulk: bool) -> list[Any]:
        walk_bulk.ENABLED = bulk
        try:
            grid = PathGrid(path, policy, truth)
            return [simulate_path(path, policy, s, truth, grid=grid) for s in settings]
        finally:
            walk_bulk.ENABLED = True

    assert list(differences(runs(False), runs(True))) == []


def _spans(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(events answered, compactions before them) of each span `replay.walk_plain` answers from now on."""
    from sessiontools.replay import walk_plain

    spans: list[tuple[int, int]] = []
    run = walk_plain.plain_run  # (by `_span` or the C's loop, `replay.walk_span`)

    def counted(walk: Any, n: int) -> int:
        m = run(walk, n)
        if m > n:
            spans.append((m - n, len(walk.run.compactions)))
        return m

    monkeypatch.setattr(walk_plain, "plain_run", counted)
    return spans


@pytest.mark.parametrize(("sample", "policy"), [("pi0-threshold-5x.jsonl", "pi-0"), ("pi1-threshold-5x.jsonl", "pi-1"),
                                                ("pi0-threshold-5x.jsonl", "claude-code"),
                                                ("codex/codex-0.63-limit.jsonl", None),
                                                ("codex/codex-0.145-capped.jsonl", "claude-code-reactive")])
def test_plain_spans_are_taken_after_compactions(monkeypatch: pytest.MonkeyPatch, sample: str, policy: str) -> None:
    """The comparisons above exercise `replay.walk_plain`: spans of plain requests, check points in them,
    are answered in bulk after a setting's compactions, under Pi's rules (check points after a run and
    between turns), Claude Code's and Codex 0.63's (before sampling and between turns) and a rule with none."""
    spans = _spans(monkeypatch)
    runs = _grid(SAMPLES / sample, policy, (8000, 24000, 200000), bulk=True)
    assert any(r.compactions for r in runs)
    assert sum(n for n, made in spans if made) > 0, spans


def test_the_comparison_sees_a_wrong_span(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail on the spans: a count in column form that leaves out the trailing
    messages (the tool results before Pi 1.x's check between turns) misses compactions the step makes."""
    from sessiontools.policies.pi.policy import PiPolicy

    sample = SAMPLES / "pi1-threshold-5x.jsonl"
    step = _grid(sample, "pi-1", (8000, 24000, 200000), bulk=False)
    monkeypatch.setattr(PiPolicy, "count_columns", lambda self: (lambda size: 0, lambda last, terms: last + terms))
    wrong = _grid(sample, "pi-1", (8000, 24000, 200000), bulk=True)
    found = list(differences(step, wrong))
    assert any("compactions" in d for d in found), found


def _policies() -> list[Any]:
    from sessiontools.policies.registry import make_policy

    out = [make_policy(n) for n in ("pi-0", "pi-1", "codex", "claude-code", "claude-code-reactive")]
    for name, versions in (("codex", ("0.40.0", "0.63.0", "0.64.0", "0.171.0")),
                           ("claude-code", ("1.0.0", "2.0.10", "2.1.20", "2.1.332"))):
        for v in versions:
            out.append(make_policy(name, v))
    return out


@pytest.mark.parametrize("policy", _policies(), ids=lambda p: f"{p.name}-{getattr(getattr(p, 'rule', None), 'version', '')}")
def test_count_columns_are_the_count(policy: Any) -> None:
    """Where a policy gives its count in column form (`Policy.count_columns`), it is `Policy.count` of
    any view with a usage, float for float (the bulk path compares it with the threshold in its place)."""
    import random

    from sessiontools.policies.base import CountView

    cols = policy.count_columns()
    if cols is None or policy.count_reads_messages:
        pytest.skip("no count in column form: the bulk path leaves its check points to the step")
    term, combine = cols
    rng = random.Random(7)
    for _ in range(300):
        trailing = [(rng.randrange(0, 40000), rng.randrange(0, 60000)) for _ in range(rng.randrange(0, 6))]
        last = rng.choice([0.0, float(rng.randrange(1, 300000)), rng.randrange(1, 300000) + 0.5])
        want = policy.count(CountView(last, trailing, trailing, ()))
        got = combine(last, sum(term(s) for s in trailing))
        assert (got, repr(got)) == (want, repr(want)), (last, trailing)
