"""The shortcuts Pi's compactor takes at every compaction of a grid (`policies.pi.path_layout`,
`prepare.PathHints`, `EntrySums.add_ops`' flat merge, the kept tail by bisection) give the rule's
answers: the slices give `PathLayout.loop_positions`' positions, the hints give the port's own
preparation, the merge gives each entry's operations merged in turn, the kept tail the filter. Checked
at every compaction of the Pi samples and real sessions under grids that compact, overflow and retry,
and on generated layouts."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from sessiontools.policies.base import CompactionAsk
from sessiontools.policies.pi import compactor as C
from sessiontools.policies.pi import prepare as P
from sessiontools.policies.pi.path_layout import PathLayout
from sessiontools.policies.pi.serialize import FileOps
from sessiontools.policies.pi.sums import EntrySums
from sessiontools.read.pi.entries import Entry
from sessiontools.read.sources import load_source
from sessiontools.replay.transcripts import replay_transcript
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.load import transcript_of
from tests.conftest import SAMPLES, shared_sessions

PI_FILES = sorted(SAMPLES.glob("pi*.jsonl")) + sorted(SAMPLES.glob("v1*.jsonl"))


def _loop(layout: PathLayout, context: tuple[int, ...], kept_from: int, before_call: bool,
          skip: frozenset[int]) -> list[int]:
    """The rule: `loop_positions` and the positions up to the next call, one at a time."""
    out, prev = layout.loop_positions(context, kept_from, skip)
    of = layout.of
    if before_call and context and context[-1] + 1 < len(of) and prev not in layout.group_end:
        out += [q for q in range(prev + 1, of[context[-1] + 1]) if q not in layout.with_message and q not in skip]
    return out


class _Checks:
    """Wraps the compactor's steps for one replay: each shortcut compared with its rule, counted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.n = {"plans": 0, "ordered": 0, "hinted": 0, "merged": 0}
        plan, prepare, add_ops = C.PiCompactor._plan, C.prepare_compaction, EntrySums.add_ops

        def checked_plan(comp: C.PiCompactor, ask: CompactionAsk, path: list[Entry], *memos: Any) -> Any:
            self.n["plans"] += 1
            lay = comp.layout
            for i, (e, q) in enumerate(zip(path, comp.path_pos, strict=True)):
                if q < 0:
                    assert e is comp.comp
                    continue
                assert e is lay.all[q] or (comp.copied is not None and e.message is comp.copied[1] and e.id == lay.all[q].id)
                if comp.v == "0":  # the message 0.x summarises of it (a custom message's is rebuilt at each call)
                    m, rule = comp.path_messages[i], P.message_for_compaction_v0(e)
                    assert m is rule or (e.type != "message" and m == rule), (i, e)
                    t = comp.path_tokens[i]
                    assert t == (estimate_tokens(e.message or {}, "0") if e.type == "message" else None), (i, e)
            want = _loop(lay, ask.context, comp.kept_from, ask.before_call, comp.skip)
            assert comp.positions(ask) == want
            self.n["ordered"] += comp.ordered
            got = plan(comp, ask, path, *memos)
            if not isinstance(got, str):
                fk = comp.position[got.first_kept_id]
                assert got.kept == tuple(i for i in ask.context if comp.of_message[i] >= fk)
            return got

        def checked_prepare(path: Any, settings: Any, version: str, **kw: Any) -> Any:
            got = prepare(path, settings, version, **kw)
            if kw.get("hints") is not None:
                self.n["hinted"] += 1
                hints = kw.pop("hints")
                assert hints.newest_compaction == max((i for i, e in enumerate(path) if e.type == "compaction"), default=-1)
                rule = prepare(path, settings, version, **kw)
                assert got == rule
                if isinstance(rule, P.Preparation):  # (and the file operations in the same order)
                    assert [list(d) for d in (got.file_ops.read, got.file_ops.written, got.file_ops.edited)] == [
                        list(d) for d in (rule.file_ops.read, rule.file_ops.written, rule.file_ops.edited)]
            return got

        def checked_add_ops(sums: EntrySums, messages: Any, ops: FileOps) -> bool:
            before = FileOps(dict(ops.read), dict(ops.written), dict(ops.edited))
            took = add_ops(sums, messages, ops)
            if took and messages:
                self.n["merged"] += 1
                lo, hi = sums.where[id(messages[0])], sums.where[id(messages[-1])]
                for k, q in enumerate(sums.ops_at):  # the rule: each entry's operations merged in turn
                    if lo <= q <= hi:
                        for into, one in zip((before.read, before.written, before.edited),
                                             (sums.ops[k].read, sums.ops[k].written, sums.ops[k].edited), strict=True):
                            into.update(one)
                assert [list(d) for d in (ops.read, ops.written, ops.edited)] == [
                    list(d) for d in (before.read, before.written, before.edited)]
            return took

        monkeypatch.setattr(C.PiCompactor, "_plan", checked_plan)
        monkeypatch.setattr(C, "prepare_compaction", checked_prepare)
        monkeypatch.setattr(EntrySums, "add_ops", checked_add_ops)


def _replay(f: Path, policy: str) -> None:
    t = transcript_of(load_source(f))
    replay_transcript(t, policy=policy, windows=[12_000, 24_000, 60_000, 200_000], reserves=[2_000, 8_000, 16_384],
                      keeps=[1_000, 6_000, 20_000], truth_tokenizer="chars4")


@pytest.mark.parametrize("f", PI_FILES + shared_sessions(), ids=lambda p: p.name)
def test_every_shortcut_gives_the_rules_answer_at_every_compaction(f: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checks = _Checks(monkeypatch)
    for policy in ("pi-0", "pi-1"):
        _replay(f, policy)
    assert checks.n["plans"] > 0, checks.n


def test_the_shortcuts_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the samples most compactions take them (a test of the rule alone would pass with none)."""
    checks = _Checks(monkeypatch)
    for f in PI_FILES:
        _replay(f, "pi-0")
    n = checks.n
    assert n["ordered"] > 0.9 * n["plans"] and n["hinted"] > n["plans"] // 2 and n["merged"] > 0, n


def _entry(rng: random.Random, q: int) -> Entry:
    kind = rng.choice(["message", "message", "message", "model_change", "compaction", "custom_message", "context_edit"])
    data: dict[str, Any] = {"type": kind, "id": f"e{q}"}
    if kind == "message":
        data["message"] = {"role": rng.choice(["user", "assistant", "toolResult"]), "content": "x" * rng.randrange(9)}
    return Entry(kind, f"e{q}", f"e{q - 1}" if q else None, q + 1, q + 1, data)


@pytest.mark.parametrize("seed", range(300))
def test_generated_layouts_slice_as_the_loop_walks(seed: int) -> None:
    rng = random.Random(seed)
    entries = [_entry(rng, q) for q in range(rng.randrange(1, 40))]
    with_msg = [q for q, e in enumerate(entries) if e.type in ("message", "compaction", "custom_message")]
    if not with_msg:
        return
    # each message's entry (two messages may share one), in order, or now and then out of order
    of = sorted(rng.choice(with_msg) for _ in range(rng.randrange(1, 2 * len(with_msg) + 1)))
    if rng.random() < 0.1:
        rng.shuffle(of)
    lay = PathLayout(entries, of, rng.choice("01"))
    skips = [lay.skip, lay.skip - {rng.choice(sorted(lay.skip))} if lay.skip else lay.skip,
             frozenset(rng.sample(range(len(entries)), rng.randrange(len(entries) + 1)))]
    for _ in range(40):
        a = rng.randrange(len(of))
        b = rng.randrange(a, len(of))
        context = tuple(range(a, b + 1))
        if rng.random() < 0.5:  # runs with gaps between (some next to each other), or no run: a repeat, descending
            cut = sorted(rng.sample(range(len(context) + 1), min(len(context) + 1, rng.randrange(1, 12))))
            context = tuple(i for k, i in enumerate(context) if any(x <= k < y for x, y in zip(cut[::2], cut[1::2], strict=False)))
            context = rng.choice([context] * 3 + [context + context[-1:], context[::-1]]) or (a,)
        skip = rng.choice(skips)
        kept_from, before = rng.randrange(len(entries) + 1), rng.random() < 0.5
        got = lay.positions(context, kept_from, before, skip)
        assert got.at == _loop(lay, context, kept_from, before, skip), (seed, context, kept_from, before)
        if got.ordered:
            assert got.entries == [entries[q] for q in got.at]
            assert got.messages == [lay.message_of[q] for q in got.at]
            assert got.tokens == [lay.entry_tokens[q] for q in got.at]
        assert lay.positions(list(context), kept_from, before, skip).ordered is False  # (only a tuple is sliced)
