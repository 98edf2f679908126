"""The one-pass forms of a path's replay bookkeeping (`replay.path_grid`, `replay.transcripts`,
`replay.replayed`, `TruthModel.units_tokens`, `PiPolicy.sizer`'s `many`) give what the per-message
rules they replaced give, on generated shapes (unsorted, negative and out-of-range places included)
and on every sample session and a slice of the bench corpus."""

from __future__ import annotations

import random
from bisect import bisect_left, bisect_right
from pathlib import Path
from types import SimpleNamespace

import pytest

from sessiontools.read.sources import load_source
from sessiontools.read.values import iso_seconds
from sessiontools.replay.cost import Classes, RecordedCall
from sessiontools.replay.neutral import fit_neutral_truth
from sessiontools.replay.path_grid import PathGrid, _ends_run, _last_before, _run_starts
from sessiontools.replay.replayed import RecordedReply, recorded_usage
from sessiontools.replay.transcripts import (
    _grid,
    _model_id,
    _price_pairs,
    _recorded,
    _recorded_after,
    _recorded_replies,
    cli_version,
    make_policy,
    own_policy,
    policy_for,
)
from sessiontools.transcript.load import transcript_of
from sessiontools.transcript.model import Overflow, Request, Role
from tests.conftest import SAMPLES

CORPUS = Path(__file__).resolve().parents[2] / "bench" / "corpus"
# the samples of every agent, and a slice of the bench corpus where it has been made (bench/corpus.py)
FILES = [*sorted(SAMPLES.glob("*.jsonl")), *sorted(SAMPLES.glob("claude-code/*.jsonl"))[:15],
         *sorted(SAMPLES.glob("codex/*.jsonl"))[:15], *sorted(CORPUS.glob("s00[0-4]*.jsonl"))[:12]]


def _slow_run_starts(msgs, reqs, work):  # type: ignore[no-untyped-def]
    users = [i for i in work if msgs[i].role == Role.USER]
    out, prev = [], -1
    for r in reqs:
        out.append(prev < 0 or bisect_right(users, prev) < bisect_left(users, r.index))
        prev = r.index
    return out


def _slow_recorded_after(path):  # type: ignore[no-untyped-def]
    msgs = path.messages
    return [max((m.index for m in msgs[:c.index] if m.role != Role.SUMMARY), default=-1) for c in path.compactions]


def _msg(i, role):  # type: ignore[no-untyped-def]
    return SimpleNamespace(index=i, role=role)


@pytest.mark.parametrize("seed", range(300))
def test_generated_shapes(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randrange(0, 40)
    roles = [Role.USER, Role.ASSISTANT, Role.TOOL, Role.SUMMARY]
    # message indices: usually positions, sometimes shuffled or negative (bad input)
    idx = list(range(n))
    if seed % 5 == 0:
        rng.shuffle(idx)
    if seed % 7 == 0 and idx:
        idx[rng.randrange(len(idx))] = -rng.randrange(1, 5)
    msgs = [_msg(i, rng.choice(roles)) for i in idx]
    work = sorted(rng.sample(range(n), rng.randrange(0, n + 1))) if n else []
    if seed % 6 == 0:
        rng.shuffle(work)
    at = sorted(rng.sample(range(-2 if seed % 4 == 0 else 0, n + 1), min(n + 1, rng.randrange(0, 12))))
    if seed % 9 == 0:
        rng.shuffle(at)
    reqs = [SimpleNamespace(index=i) for i in at]
    path = SimpleNamespace(messages=msgs)
    if all(0 <= i < n for i in work):
        assert _run_starts(path, reqs, work) == _slow_run_starts(msgs, reqs, work)
    places = [rng.randrange(-3, n + 3) for _ in range(rng.randrange(0, 5))]
    assert _last_before(work, places) == [max((i for i in work if i < c), default=-1) for c in places]
    comps = [SimpleNamespace(index=c) for c in places]
    p = SimpleNamespace(messages=tuple(msgs), compactions=comps)
    assert _recorded_after(p) == _slow_recorded_after(p)


def test_no_event() -> None:
    """A path with no model call (an --all-leaves branch that ends before any reply)."""
    assert _ends_run(make_policy("pi-0"), [], []) == [] and _run_starts(SimpleNamespace(messages=()), [], []) == []
    assert _last_before([], []) == [] and _last_before([], [3]) == [-1]


def _paths():  # type: ignore[no-untyped-def]
    for f in FILES:
        t = transcript_of(load_source(f))
        for path in t.paths:
            if path.requests:
                yield f.name, t, path


@pytest.mark.parametrize("name,t,path", list(_paths()), ids=lambda v: v if isinstance(v, str) else "")
def test_real_paths(name: str, t, path) -> None:  # type: ignore[no-untyped-def]
    own = own_policy(t, path)
    truth = fit_neutral_truth(path, None, None, own, tokenizer="chars4")
    pname = policy_for(t, None)
    pol = make_policy(pname, cli_version(pname, t, None), _model_id(path))
    grid = PathGrid(path, pol, truth, _grid(pol, [200000], [16384], [20000], (None,), {}))
    msgs = path.messages
    # the grid's columns, as the per-message rules give them
    assert grid.run_starts == _slow_run_starts(msgs, grid.events, grid.work)
    assert grid.ends == [grid.reply_end(e.index) if isinstance(e, Request) else e.index for e in grid.events]
    n, starts = len(grid.events), grid.run_starts
    assert grid.ends_run == [j + 1 == n or starts[j + 1] or pol.reply_ends_run(
        None if isinstance(e, Overflow) else e.stop_reason, isinstance(e, Overflow)) for j, e in enumerate(grid.events)]
    assert grid.recorded == [max((i for i in grid.work if i < c.index), default=-1) for c in path.compactions]
    assert grid.pos_of == {ix: k for k, ix in enumerate(grid.work)}
    assert grid.work_tokens == [truth.message_tokens(msgs[i]) for i in grid.work]
    size = pol.sizer(path)
    assert grid.work_sizes == [size(msgs[i]) for i in grid.work]
    assert [grid.tokens_of(i) for i in range(len(msgs))] == [truth.message_tokens(m) for m in msgs]
    assert [grid.size_of(i) for i in range(len(msgs))] == [size(m) for m in msgs]
    # `many` on messages not the path's own (copies) falls back to `size` of each
    if hasattr(size, "many"):
        import copy

        others = [copy.copy(m) for m in msgs[:5]]
        assert size.many(others) == [size(m) for m in others]
    assert _recorded_after(path) == _slow_recorded_after(path)
    # the recorded replies and price pairs, as their named-tuple constructors and dicts make them
    slow = [RecordedReply(i, Classes(float(u.input), float(u.cache_read), float(u.cache_write), float(u.output)),
                          None if u.cost is None else float(u.cost.total), ts, learn) for i, u, ts, learn in _recorded(path)]
    fast = _recorded_replies(path)
    assert fast == slow and all(type(a) is RecordedReply and type(a.classes) is Classes for a in fast)
    assert list(_price_pairs(path)) == [
        ({"input": u.input, "output": u.output, "cacheRead": u.cache_read, "cacheWrite": u.cache_write},
         {"input": u.cost.input, "output": u.cost.output, "cacheRead": u.cost.cache_read,
          "cacheWrite": u.cost.cache_write}) for _, u, _, _ in _recorded(path) if u.cost is not None]
    # the recorded usage reads each timestamp once into the memo it is given
    breaks = sorted(c.index for c in path.compactions)
    seconds: dict = {}
    rec = recorded_usage(fast, breaks, seconds)
    calls, prev = [], -1
    for r in fast:
        if r.learn:
            k = bisect_left(breaks, prev) if breaks else 0
            calls.append(RecordedCall(iso_seconds(r.timestamp), r.classes, k < len(breaks) and breaks[k] < r.index))
            prev = r.index
    assert rec.calls == calls and all(type(c) is RecordedCall for c in rec.calls)
    assert seconds == {r.timestamp: iso_seconds(r.timestamp) for r in fast if r.learn}


def test_units_tokens_is_unit_tokens_of_each() -> None:
    """Attributed, counted and uncounted units alike (`count` called for those `counted` lacks)."""
    name, t, path = next(iter(_paths()))
    truth = fit_neutral_truth(path, None, None, own_policy(t, path), tokenizer="chars4")
    msgs = list(path.messages)
    assert truth.units_tokens(msgs) == [truth.unit_tokens(m) for m in msgs]
    from dataclasses import replace

    thin = replace(truth, tokens={k: v for j, (k, v) in enumerate(truth.tokens.items()) if j % 2},
                   counted={k: v for j, (k, v) in enumerate(truth.counted.items()) if j % 3})
    assert thin.units_tokens(iter(msgs)) == [thin.unit_tokens(m) for m in msgs]
