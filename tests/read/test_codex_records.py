"""The Codex reader's records made in C (`read._native.codex_records`, _codex.c, issue 28) against
its Python reference (`read.codex.load._projected`: the same projection, each made into its record by
`_record`) and the ordinary way (every line through orjson): the same records, diagnostics, wrapped
and ordinal counts and, in a lean reading, the same projected item lines. Over every sample rollout
and Codex probe fixture, the synthetic bench rollouts, every odd value in every field of one line of
each kind (wrong types, huge ints, floats, lone surrogates, nulls, empty objects), every truncation
of those lines, and unknown line and event types."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiontools.read.codex import load as codex_load
from sessiontools.read.codex.selective import SELECTIVE_TYPES
from tests.conftest import ROOT, SAMPLES
from tests.read.test_native_project import _native
from tests.robust.mutate import ODD_VALUES, field_paths, mutated

ROLLOUTS = sorted((SAMPLES / "codex").glob("*.jsonl"))
PROBES = sorted((ROOT / "tests" / "fixtures" / "codex_probes").glob("*.jsonl.gz"))


def _view(out: tuple[Any, ...], payloads: bool) -> Any:
    records, diags, wrapped, ordinal = out
    return ([(type(r).__name__, r, getattr(r, "payload", None) if payloads else None, getattr(r, "data", None))
             for r in records], diags, wrapped, ordinal)


def _read(data: bytes, c: bool, lean: dict[int, tuple[int, int]] | None, monkeypatch: Any) -> Any:
    with monkeypatch.context() as m:
        if not c:
            m.setattr(codex_load, "codex_records", None)
        return codex_load._read_lines(data, "r.jsonl", native=True, lean=lean)


def _same(data: bytes, monkeypatch: Any) -> int:
    """C records == the Python reference's (lean and not), and == the ordinary way's (not lean: a
    lean item holds its projection); how many lines the C made into records."""
    _native()  # (a skip only without a C compiler)
    fast = _read(data, True, None, monkeypatch)
    assert _view(fast, True) == _view(_read(data, False, None, monkeypatch), True)
    assert _view(fast, True) == _view(codex_load._read_lines(data, "r.jsonl", native=False), True)
    c_lean: dict[int, tuple[int, int]] = {}
    py_lean: dict[int, tuple[int, int]] = {}
    lean = _read(data, True, c_lean, monkeypatch)
    assert _view(lean, True) == _view(_read(data, False, py_lean, monkeypatch), True)
    assert c_lean == py_lean
    assert _view(lean, False) == _view(fast, False)  # (the same records: items hold less)
    return lean[2]


def _probe(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes())


@pytest.mark.parametrize("path", ROLLOUTS + PROBES, ids=lambda p: p.name)
def test_every_sample_and_probe_reads_the_same(path: Path, monkeypatch: Any) -> None:
    data = _probe(path) if path.suffix == ".gz" else path.read_bytes()
    taken = _same(data, monkeypatch)
    lines = data.count(b"\n")
    assert taken > 0.5 * lines  # (the C path is taken: this test compares something)


def test_bench_rollouts_read_the_same(monkeypatch: Any) -> None:
    import random

    from bench.corpus_codex import session  # (the generator of bench/corpus-codex, with compactions)

    for n in range(3):
        (data,) = session(random.Random(n), n, 400_000).files.values()
        assert _same(data, monkeypatch) > 0.9 * data.count(b"\n")


LEAN_TYPES = SELECTIVE_TYPES | {"response_item"}
HEAD = '{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}'


def _kinds(lines: list[str]) -> list[int]:
    """One line of each (type, payload type) after the first."""
    seen: set[Any] = set()
    out = []
    for i, line in enumerate(lines[1:], 1):
        obj = orjson.loads(line)
        kind = (obj.get("type"), (obj.get("payload") or {}).get("type"))
        if kind not in seen:
            seen.add(kind)
            out.append(i)
    return out


@pytest.mark.parametrize("rollout", [SAMPLES / "codex" / "codex-pair-a.jsonl",
                                     SAMPLES / "codex" / "codex-0.145-capped.jsonl"], ids=lambda p: p.name)
def test_every_odd_value_in_every_field_reads_the_same(rollout: Path, monkeypatch: Any) -> None:
    lines = rollout.read_text().splitlines()
    checked = 0
    for index in _kinds(lines):
        if orjson.loads(lines[index]).get("type") not in LEAN_TYPES:
            continue  # (the other lines go the ordinary way whatever their values)
        one = [HEAD, lines[index]]  # (the line alone after a small first line: the C skips line 1)
        for path in field_paths(orjson.loads(lines[index])):
            if len(path) > 4 or "content" in path[:2]:  # (deeper than any field the C reads; texts)
                continue
            for value in ODD_VALUES:
                _same(("\n".join(mutated(one, 1, path, value)) + "\n").encode(), monkeypatch)
                checked += 1
    assert checked > 300


def test_every_truncation_and_unknown_type_reads_the_same(monkeypatch: Any) -> None:
    lines = (SAMPLES / "codex" / "codex-pair-a.jsonl").read_bytes().splitlines()
    for index in _kinds([x.decode() for x in lines]):
        line = lines[index]
        for cut in range(1, len(line), max(1, len(line) // 40)):
            _same(lines[0] + b"\n" + line[:cut] + b"\n" + line + b"\n", monkeypatch)
            _same(lines[0] + b"\n" + line + b"\n" + line[:cut], monkeypatch)  # (a truncated last line)
    head = lines[0] + b"\n"
    for odd in (b'{"timestamp":"t","type":"mystery","payload":{}}', b'{"type":"event_msg","payload":{"type":7}}',
                b'{"type":"event_msg","payload":{"type":"error","message":{"a":1}}}',
                b'{"type":"event_msg","payload":{"type":"task_complete","model_context_window":1.5}}',
                b'{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":'
                b'{"input_tokens":1.0}}}}',
                b'{"type":"response_item","payload":{"type":null}}', b'{"type":"response_item","payload":[]}',
                b'{"type":"turn_context","payload":{"model":5}}', b'{"payload":{"type":"x"}}'):
        _same(head + odd + b"\n" + odd + b"\n", monkeypatch)
