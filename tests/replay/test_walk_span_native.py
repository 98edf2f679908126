"""The C loop of a span of plain requests (`replay.walk_span`, read/_walk_span.c) walks every span as
`replay.walk_plain._span` does: the same runs on every field (types and reprs too) and the same walk
state after every span (anchor, newest usage, running sum, reply, recovery, run start, counters), on
every sample (Pi, Codex, Claude Code) and the shared real Pi sessions under Pi 0.x's, Pi 1.x's,
Codex's and Claude Code's rules, at windows that compact, overflow, cross mid-run and check late; and
on generated odd values (float subclasses, bools, big ints, NaN and infinities, ints where floats
were) in the columns and the walk's state, where it must leave the span, or the event, to `_span`.
The recovery column is each recovery class's own calls, the tables of `fires` and `combine` are the
functions, and without the extension nothing changes."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontools.replay import walk_plain, walk_span
from tests.conftest import SAMPLES, shared_sessions
from tests.replay.test_walk_bulk import _policies, _transcript, differences

pytestmark = pytest.mark.skipif(walk_span._c_span is None, reason="the C extension is not built")

ALL = [*sorted(SAMPLES.glob("*.jsonl")), *sorted((SAMPLES / "codex").glob("*.jsonl")),
       *sorted((SAMPLES / "claude-code").glob("*.jsonl")), *shared_sessions()]
#: Each kind of rule: Pi's (last + chars/4), Codex 0.63's (last + bytes/4) and its newest (no count in
#: column form: spans without check points), Claude Code's newest (a count the C leaves to `_span`),
#: 2.1.20's (last + chars / 4) and 1.0's (the usage alone).
POLICIES = (("pi-0", None), ("pi-1", None), ("codex", None), ("codex", "0.63.0"), ("claude-code", None),
            ("claude-code", "2.1.20"), ("claude-code", "1.0.0"))
SMALL = (8000, 24000, 200000)


def _grid(path: Path, policy: str, version: str | None = None) -> list[Any]:
    """A grid that compacts, overflows and crosses mid-run (`test_walk_bulk._grid`'s, at `version`)."""
    from sessiontools.replay.transcripts import replay_transcript

    prs = replay_transcript(_transcript(path, policy), windows=list(SMALL), reserves=[1000, 4000], keeps=[500, 20000],
                            policy=policy, limits=[None, 20000, 60000], claude={"autocompact_pcts": [None, 50, 80]},
                            version=version)
    return [r for pr in prs for r in pr.runs]


class F(float):
    """A float subclass (its repr shows it)."""

    def __repr__(self) -> str:
        return f"F({float.__repr__(self)})"


def _typed(v: Any) -> Any:
    """`v` with the type of every number in it (an int is no float, a subclass no float)."""
    if isinstance(v, tuple | list):
        return type(v), [_typed(x) for x in v]
    if isinstance(v, float) and math.isnan(v):
        return type(v), "nan"
    return type(v), v


def _state(walk: Any) -> tuple[Any, ...]:
    r = walk.run
    return _typed((walk.anchor, walk.last_usage, walk._ctx_sum, walk.reply, walk.run_start, walk.recovery.tried,
                   walk.pending_thrash is None, r.check_points, r.check_points_over, r.late, r.mid_run_crossings,
                   r.thrash, r.peak_truth, r.billed_input, r.output_tokens, len(r.requests), len(r.check_counts),
                   r.requests[-1:], r.check_counts[-1:]))


def _walked(native: bool, run: Callable[[], list[Any]],
            odd: Callable[[Any, int], None] | None = None) -> tuple[list[Any], list[Any], dict[str, int]]:
    """The runs, the walk's state after every span, and how many spans and events the C took."""
    states: list[Any] = []
    took = {"spans": 0, "events": 0, "left": 0, "handoffs": 0}
    plain, span, python = walk_plain.plain_run, walk_span.Columns.span, walk_plain._span
    inside = [False]

    def counted(walk: Any, n: int) -> int:
        if odd is not None:
            odd(walk, len(states))
        m = plain(walk, n)
        states.append((n, m, _state(walk)))
        return m

    def c_span(self: Any, walk: Any, p: Any, n: int) -> int | None:
        inside[0] = True
        try:
            m = span(self, walk, p, n)
        finally:
            inside[0] = False
        took["spans" if m is not None else "left"] += 1
        took["events"] += (m - n) if m is not None else 0
        return m

    with pytest.MonkeyPatch.context() as m:
        m.setattr(walk_plain, "plain_run", counted)
        m.setattr(walk_span.Columns, "span", c_span)
        m.setattr(walk_plain, "_span", lambda w, p, n: (took.__setitem__("handoffs", took["handoffs"] + inside[0]),
                                                         python(w, p, n))[1])
        m.setattr(walk_span, "ENABLED", native)
        runs = run()
    return runs, states, took


def _typed_differences(a: list[Any], b: list[Any]) -> Iterator[str]:
    yield from differences(a, b)
    for n, (x, y) in enumerate(zip(a, b, strict=False)):
        for f in ("peak_truth", "billed_input", "output_tokens"):
            if type(getattr(x, f)) is not type(getattr(y, f)):
                yield f"run {n}: the type of {f}"
        if _typed(x.requests) != _typed(y.requests) or _typed(x.check_counts) != _typed(y.check_counts):
            yield f"run {n}: the types in its points"


def _compare(run: Callable[[], list[Any]],
             odd: Callable[[Any, int], None] | None = None) -> tuple[list[str], dict[str, int]]:
    py_runs, py_states, _ = _walked(False, run, odd)
    c_runs, c_states, took = _walked(True, run, odd)
    found = list(_typed_differences(py_runs, c_runs))
    if len(py_states) != len(c_states):
        found.append("#spans")
    found += [f"after the span from event {s[0]}" for s, t in zip(py_states, c_states, strict=False) if s != t][:5]
    return found, took


@pytest.mark.parametrize(("path", "policy", "version"), [(p, *pol) for p in ALL for pol in POLICIES],
                         ids=lambda v: f"{v.parent.name}/{v.name}" if isinstance(v, Path) else str(v))
def test_the_c_span_is_the_python_span(path: Path, policy: str, version: str | None) -> None:
    found, _ = _compare(lambda: _grid(path, policy, version))
    assert found == []


def test_the_comparisons_see_every_kind_of_span() -> None:
    """Not vacuous: the C answers spans after compactions, with check points over the threshold
    (late), mid-run crossings and thrash, in grids with overflows, under each kind of rule."""
    seen = {"compactions": 0, "overflows": 0, "late": 0, "mid": 0, "thrash": 0, "events": 0}
    for sample, policy, version in (("pi0-threshold-5x.jsonl", "pi-0", None), ("pi1-two-overflows.jsonl", "pi-1", None),
                                    ("claude-code/claude-manual.jsonl", "claude-code", "2.1.20"),
                                    ("claude-code/claude-manual.jsonl", "claude-code", "1.0.0"),
                                    ("codex/codex-0.63-limit.jsonl", "codex", "0.63.0")):
        runs, _, took = _walked(True, lambda s=sample, p=policy, v=version: _grid(SAMPLES / s, p, v))
        assert took["events"] > 0 and took["left"] == 0, (sample, policy, took)
        seen["events"] += took["events"]
        for r in runs:
            seen["compactions"] += len(r.compactions)
            seen["overflows"] += r.overflows
            seen["late"] += r.late
            seen["mid"] += r.mid_run_crossings
            seen["thrash"] += r.thrash
    assert all(v > 0 for v in seen.values()), seen


def _odd_values(seed: int, sticky: bool = True) -> Callable[[Any, int], None]:
    """Before some spans, a value of the walk's state of another type or an odd value (the same on
    both sides: the runs stay comparable); not `sticky`: none that stays for the rest of the walk."""
    def odd(walk: Any, call: int) -> None:
        rng = random.Random(seed * 1000 + call)
        r, pick = walk.run, rng.randrange(16)
        if not sticky and (pick in (2, 3, 4, 5, 14) or rng.random() < 0.5):
            return
        if pick == 0:
            r.peak_truth = int(r.peak_truth)
        elif pick == 1:
            r.billed_input = F(r.billed_input)
        elif pick == 2:
            r.output_tokens = r.output_tokens + (1 << 63)
        elif pick == 3:
            walk.T = walk.T + 0.5
        elif pick == 4:
            walk.W = walk.W + (1 << 60)
        elif pick == 5:
            walk.T = rng.choice([math.nan, math.inf, -math.inf])
        elif pick == 6 and walk.last_usage is not None:
            walk.last_usage = (walk.last_usage[0], int(walk.last_usage[1]))
        elif pick == 7 and walk.anchor is not None:
            walk.anchor = (walk.anchor[0], F(walk.anchor[1]))
        elif pick == 8:
            walk.summary = int(walk.summary)
        elif pick == 9:
            walk.prefix_truth = F(walk.prefix_truth) if rng.random() < 0.5 else int(walk.prefix_truth)
        elif pick == 10 and walk.last_usage is not None:
            walk.last_usage = (float(walk.last_usage[0]), walk.last_usage[1])
        elif pick == 11:  # a running sum ahead of the span (as the step may leave it): the span sums afresh
            work = walk.work
            walk._ctx_sum = (walk.resume, walk.prefix_truth, len(work),
                             walk.grid.work_sum(walk.resume, len(work), walk.prefix_truth))
        elif pick in (12, 13):  # a recovery tried: only the replies that clear it (or a run's start) do
            walk.recovery.tried = True
        elif pick == 14 and walk.work:  # the threshold switched off from a workload message on
            walk.off_from = walk.work[rng.randrange(len(walk.work))]
        elif pick == 15:  # kept messages that leave at the next prompt: a run's first request is the step's
            walk.prefix_until_prompt = True
    return odd


def _odd_columns(seed: int) -> Callable[[Any, Any], Any]:
    """The grid's columns with odd values at some events (before the C's columns are packed)."""
    columns = walk_span.columns

    def packed(walk: Any, p: Any) -> Any:
        rng = random.Random(seed)
        for j in range(len(p.prompt)):
            pick = rng.randrange(12)
            if pick == 0:
                p.prompt[j] = F(p.prompt[j])
            elif pick == 1:
                p.prompt[j] = rng.choice([math.inf, -0.0, 1e300, 2.0 ** 60 + 0.5])
            elif pick == 2:
                p.output[j] = rng.choice([True, False, 1 << 70, 3.0, -7])
            elif pick in (3, 4, 5):  # replies that keep a recovery's `tried` (Pi's: an error, 1.x's length too)
                p.stop[j] = rng.choice(["error", "length"])
        if seed % 3 == 0 and walk.grid.work_tokens:  # (no infinity: the step's differences of sums would be NaN)
            wt = walk.grid.work_tokens = list(walk.grid.work_tokens)
            k = rng.randrange(len(wt))
            wt[k] = rng.choice([1e300, -0.0, int(wt[k]), F(wt[k])])
        return columns(walk, p)
    return packed


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize(("sample", "policy", "version"), [
    ("pi0-threshold-5x.jsonl", "pi-0", None), ("pi1-threshold-5x.jsonl", "pi-1", None),
    ("pi1-two-overflows.jsonl", "pi-1", None), ("pi0-threshold-5x.jsonl", "claude-code", "2.1.20"),
    ("codex/codex-0.63-limit.jsonl", "codex", "0.63.0"), ("claude-code/claude-manual.jsonl", "claude-code", "1.0.0")])
def test_odd_values_are_left_to_python(sample: str, policy: str, version: str | None, seed: int) -> None:
    """Generated odd values in the walk's state and in the columns: the C leaves what it cannot take
    exactly to `_span` (the runs and states are `_span`'s, every number of its type)."""
    def run() -> list[Any]:
        with pytest.MonkeyPatch.context() as m:
            m.setattr(walk_span, "columns", _odd_columns(seed))
            try:
                return _grid(SAMPLES / sample, policy, version)
            except (OverflowError, ValueError, TypeError) as e:  # the same odd value fails both sides alike
                return [type(e).__name__]
    found, _ = _compare(run, _odd_values(seed))
    assert found == []


def test_odd_values_take_both_paths() -> None:
    """Not vacuous: under odd values the C takes spans, leaves some to `_span` whole (an odd state) and
    hands `_span` the rest of others (an event with an odd value in the columns)."""
    took = {"left": 0, "spans": 0, "handoffs": 0}
    for seed in range(6):
        def run(seed: int = seed) -> list[Any]:
            with pytest.MonkeyPatch.context() as m:
                m.setattr(walk_span, "columns", _odd_columns(seed))
                return _grid(SAMPLES / "pi0-threshold-5x.jsonl", "pi-0")
        for k, v in _walked(True, run, _odd_values(seed, sticky=False))[2].items():
            took[k] = took.get(k, 0) + v
    assert took["left"] > 0 and took["spans"] > 0 and took["handoffs"] > 0, took


def _recoveries() -> list[type]:
    import sessiontools.policies.registry  # noqa: F401  (every policy module)
    from sessiontools.policies.recovery import Recovery

    out, todo = [], [Recovery]
    while todo:
        t = todo.pop()
        out.append(t)
        todo += t.__subclasses__()
    return out


STOPS = (None, "stop", "error", "length", "toolUse", "end_turn", "max_tokens", "aborted", "", 0, "ERROR")


@pytest.mark.parametrize("policy", _policies(), ids=lambda p: f"{p.name}-{getattr(getattr(p, 'rule', None), 'version', '')}")
def test_the_recovery_column_is_its_calls(policy: Any) -> None:
    """Per reply, the column says what the recovery's own `replied` does to `tried` (clears it, else
    leaves it), for every stop reason and either state before; a run's start always clears it."""
    rec = policy.recovery()
    cols = type("C", (), {"stop": list(STOPS), "policy": policy})()
    clears = walk_span.Columns.clears(cols, rec)  # type: ignore[arg-type]
    assert walk_span.span_recovery(type(rec)) and clears is not None
    for j, stop in enumerate(STOPS):
        for before in (True, False):
            rec.tried = before
            rec.replied(stop)
            assert rec.tried == (before and not clears[j]), (stop, before)
            rec.tried = before
            rec.run_started()
            assert rec.tried is False


def test_every_recovery_class_is_known() -> None:
    """Each recovery class of the package is one whose calls the column is, or one the C leaves to
    `_span` (a class it does not know: `clears` gives None)."""
    for t in _recoveries():
        assert walk_span.span_recovery(t), f"{t.__name__}: set `clears_only` in its body if its only state is `tried`"
        assert t.run_started is walk_span._RUN_STARTED and t.__slots__ in (("reactive", "tried"), ("policy",))

    class Other(_recoveries()[0]):  # type: ignore[misc,valid-type]  (a subclass that does not vouch for itself)
        __slots__ = ()
    cols = type("C", (), {"stop": list(STOPS), "policy": None})()
    assert not walk_span.span_recovery(Other) and walk_span.Columns.clears(cols, Other(True)) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("policy", _policies(), ids=lambda p: f"{p.name}-{getattr(getattr(p, 'rule', None), 'version', '')}")
def test_the_tables_are_the_functions(policy: Any) -> None:
    """`fires` and `combine` as the C does them (`walk_span.fires_op`, `_COMBINE`) are the policy's, on floats that
    include NaN, infinities, -0.0 and big values; a combine it does not know leaves the grid to `_span`."""
    cols = policy.count_columns()
    if cols is None:
        pytest.skip("no count in column form")
    _, combine = cols
    ops = {0: lambda last, t: last + float(t), 1: lambda last, t: last + float(t) / 4.0, 2: lambda last, t: last}
    by_combine = walk_span._COMBINE
    ge = walk_span.fires_op(policy)
    assert ge is not None
    rng = random.Random(3)
    lasts = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e300, 2.0 ** 53 + 1, 123456.5]
    for _ in range(400):
        last = rng.choice([*lasts, rng.randrange(0, 1 << 40) + rng.random()])
        t = rng.choice([0, 1, 3, rng.randrange(0, 1 << 52)])
        T = float(rng.choice([0, 1, 100000, 1 << 40]))
        if combine in by_combine:
            got, want = ops[by_combine[combine]](last, t), combine(last, t)
            assert repr(got) == repr(want), (last, t)
        assert policy.fires(last, int(T)) == (last >= T if ge else last > T)


@pytest.mark.parametrize("change", ["fires", "combine", "extension"])
def test_unknown_callables_leave_the_grid_to_python(monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    """A policy whose `fires` or `combine` is not one the C knows, or no extension: `columns` is None
    and every span is `_span`'s (the runs are the same)."""
    from sessiontools.policies.pi.policy import PiPolicy, _chars4_term

    sample = SAMPLES / "pi0-threshold-5x.jsonl"
    want, _, _ = _walked(False, lambda: _grid(sample, "pi-0"))
    if change == "fires":
        monkeypatch.setattr(PiPolicy, "fires", lambda self, count, threshold: count > threshold)
    elif change == "combine":
        monkeypatch.setattr(PiPolicy, "count_columns", lambda self: (_chars4_term, lambda last, t: last + t))
    else:
        monkeypatch.setattr(walk_span, "_c_span", None)
    got, _, took = _walked(True, lambda: _grid(sample, "pi-0"))
    assert took["spans"] == took["left"] == 0 and list(_typed_differences(want, got)) == []


def _error_replies(walk: Any, n: int) -> None:
    """A recovery tried and every reply an error (Pi's keep `tried`: only a run's start clears it)."""
    walk.recovery.tried = True
    walk.plain.stop[:] = ["error"] * len(walk.plain.stop)
    walk.plain.native._by_recovery.clear()


def _switched_off_at(after: int) -> Callable[[Any, int], None]:
    """A threshold every count passes, switched off from the workload message of the span's first
    check point on (`after`: 0 before its first request, 1 after it)."""
    def change(walk: Any, n: int) -> None:
        walk.T = 0.0
        walk.off_from = walk.work[min(walk.plain.k[n] + after, len(walk.work) - 1)]
    return change


def _kept_after(walk: Any, n: int) -> None:
    """A kept message after every usage (no reachable state has one: the span's check points are the step's)."""
    walk.prefix = (*walk.prefix, len(walk.path.messages) + 5)


@pytest.mark.parametrize(("sample", "policy", "version"), [
    ("pi0-threshold-5x.jsonl", "pi-0", None), ("pi1-threshold-5x.jsonl", "pi-1", None),
    ("codex/codex-0.63-limit.jsonl", "codex", "0.63.0"), ("claude-code/claude-manual.jsonl", "claude-code", "2.1.20")])
def test_spans_from_changed_states(sample: str, policy: str, version: str | None) -> None:
    """Span by span, from copies of the walk's state changed where the C decides something the samples
    rarely show, the C's span is `_span`'s: the threshold exactly a count the span meets (its first, or
    its last check point's: `count > T` stays in the span, `count >= T` ends it), a recovery tried with
    replies that keep it, a threshold switched off right at a check point, a kept message after the
    newest usage."""
    import copy

    plain, compared, errors = walk_plain.plain_run, [0, 0], [0, 0]

    def threshold_at(count: float) -> Callable[[Any, int], None]:
        return lambda walk, n: setattr(walk, "T", count)

    def same(walk: Any, n: int, change: Callable[[Any, int], None]) -> bool:
        py, c = copy.deepcopy(walk), copy.deepcopy(walk)
        change(py, n)
        change(c, n)
        got = (walk_plain._span(py, py.plain, n), c.plain.native.span(c, c.plain, n))
        assert got[0] == got[1] and _state(py) == _state(c), (n, change)
        assert _typed(py.run.requests) == _typed(c.run.requests)
        assert _typed(py.run.check_counts) == _typed(c.run.check_counts)
        return got[0] > n

    def changed(walk: Any, n: int) -> int:
        p = walk.plain if walk.plain not in (None, False) else None
        if p is not None and p.native is not None and p.ok[n] and compared[0] < 24:
            probe = copy.deepcopy(walk)
            start = len(probe.run.check_counts)
            walked = walk_plain._span(probe, probe.plain, n) > n
            counts = [c.count for c in probe.run.check_counts[start:]]
            changes = [threshold_at(c) for c in {*counts[:1], *counts[-1:]}]
            for change in [*changes, _switched_off_at(0), _switched_off_at(1), _kept_after] if walked else []:
                compared[0] += 1
                compared[1] += same(walk, n, change)
        if (p is not None and p.native is not None and p.ok[n] and not walk.grid.run_starts[n] and errors[0] < 6
                and errors[1] < 150):
            errors[1] += 1
            errors[0] += same(walk, n, _error_replies)  # (a span without a run's start: nothing clears it)
        return plain(walk, n)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(walk_plain, "plain_run", changed)
        _grid(SAMPLES / sample, policy, version)
    assert compared[0] > 0 and compared[1] > 0, compared
    assert errors[0] > 0 or "pi" not in policy
