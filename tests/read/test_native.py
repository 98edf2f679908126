"""The reader's C extension (`read._native.scan_fields`, issue 28) against its pure-Python reference
(`read.values.scan_fields_reference`): the same result for every object of every sample and bad
fixture under every check table of the readers, for generated objects of odd values, and the same
sessions, records and diagnostics when whole files are read either way (samples and mutated ones)."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontools.read import values
from sessiontools.read.claude_code import checks as claude_checks
from sessiontools.read.codex import checks as codex_checks
from sessiontools.read.codex import load as codex_load
from sessiontools.read.pi import checks as pi_checks
from sessiontools.read.sources import SNIFF_BYTES, reader_for
from tests.conftest import BAD, SAMPLES
from tests.read.test_native_project import _native as native_module
from tests.robust.mutate import BASES, ODD_VALUES, dumps, field_paths, mutated

CHECK_MODULES = (pi_checks, claude_checks, codex_checks)


def _tables() -> list[dict[str, Any]]:
    """Every check table of the readers (field -> check), Pi's per-type ones included."""
    out: dict[int, dict[str, Any]] = {}
    for mod in CHECK_MODULES:
        for v in vars(mod).values():
            if not isinstance(v, dict) or not v:
                continue
            tables = list(v.values()) if all(isinstance(x, dict) for x in v.values()) else [v]
            for t in tables:
                if all(callable(c) for c in t.values()):
                    out[id(t)] = t
    return list(out.values())


TABLES = _tables()


def _native() -> Any:
    return native_module()  # built by every install (setup.py); a skip only where no C compiler is


def _same(obj: dict[str, Any], table: dict[str, Any]) -> None:
    a, b = copy.deepcopy(obj), copy.deepcopy(obj)
    got, want = _native().scan_fields(a, table), values.scan_fields_reference(b, table)
    if want is None:
        assert got is None
        return
    assert got is not None and len(got) == len(want)
    for (k1, v1, w1), (k2, v2, w2) in zip(got, want, strict=True):
        assert k1 == k2 and w1 == w2 and repr(v1) == repr(v2)
        assert (v1 is a[k1]) == (v2 is b[k2])  # a value kept as it is, or rewritten, the same way


def _dicts(v: Any) -> list[dict[str, Any]]:
    if isinstance(v, dict):
        return [v, *(d for x in v.values() for d in _dicts(x))]
    if isinstance(v, list):
        return [d for x in v for d in _dicts(x)]
    return []


def test_the_extension_is_built_and_used() -> None:
    assert values.scan_fields is _native().scan_fields
    assert claude_checks.check_tree is codex_checks.check_tree is _native().check_tree
    assert pi_checks.check_trees is _native().check_trees and codex_load.project_lines is _native().project_lines
    assert len(TABLES) >= 12


def _sample_files() -> list[Path]:
    return sorted(SAMPLES.rglob("*.jsonl")) + sorted(BAD.glob("*.jsonl"))


def test_same_as_the_reference_on_every_sample_object() -> None:
    n = 0
    for f in _sample_files():
        for line in f.read_bytes().splitlines()[:60]:
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            for d in _dicts(obj):
                for table in TABLES:
                    _same(d, table)
                    n += 1
    assert n > 10_000


KEYS = sorted({k for t in TABLES for k in t} | {"other", ""})
EDGES = [*ODD_VALUES, math.nan, math.inf, -math.inf, 1677.0, -0.0, values.MAX_REQUEST_TOKENS + 1,
         values.MAX_COST + 0.5, values.MAX_EPOCH_MS + 1, "2026-01-01T00:00:00Z", "2026-13-01"]
OBJECTS = st.dictionaries(st.sampled_from(KEYS), st.one_of(st.sampled_from(EDGES), st.integers(), st.floats(),
                                                          st.text(max_size=4)), max_size=8)


@settings(max_examples=400, deadline=None)
@given(OBJECTS, st.integers(0, 10_000))
def test_same_as_the_reference_on_odd_objects(obj: dict[str, Any], k: int) -> None:
    _same(obj, TABLES[k % len(TABLES)])


def read_source_bytes(data: bytes, path: str) -> Any:
    return reader_for(data[:SNIFF_BYTES]).from_bytes(data, path)


def _read_both(data: bytes, path: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """`data` read with the extension, and with none of it: the reference `scan_fields`, every check
    run in Python (no `check_tree(s)`), every Codex line the ordinary way instead of the C scanner's."""
    fast = read_source_bytes(data, path)
    with monkeypatch.context() as m:
        m.setattr(values, "scan_fields", values.scan_fields_reference)
        for mod in CHECK_MODULES:
            m.setattr(mod, "scan_fields", values.scan_fields_reference)
            m.setattr(mod, "check_tree" if hasattr(mod, "check_tree") else "check_trees", None)
        m.setattr(codex_load, "project_lines", None)
        slow = read_source_bytes(data, path)
    return fast, slow


def _view(source: Any) -> Any:
    items = getattr(source, "entries", None) or getattr(source, "records", None) or getattr(source, "lines", None)
    return repr(source.diagnostics), repr([(type(x).__name__, vars(x) if hasattr(x, "__dict__") else x,
                                             getattr(x, "data", None), getattr(x, "payload", None)) for x in items or ()])


def test_every_sample_reads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    for f in _sample_files():
        fast, slow = _read_both(f.read_bytes(), str(f), monkeypatch)
        assert _view(fast) == _view(slow), f


@pytest.mark.parametrize("agent", sorted(BASES))
def test_mutated_files_read_the_same(agent: str, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = BASES[agent].read_text().splitlines()
    checked = 0
    for index in range(1, len(lines), max(6, len(lines) // 5)):
        obj = orjson.loads(lines[index])
        for path in list(field_paths(obj))[:12]:
            for value in ODD_VALUES[::4]:
                data = "\n".join(mutated(lines, index, path, value)).encode() + b"\n"
                fast, slow = _read_both(data, "m.jsonl", monkeypatch)
                assert _view(fast) == _view(slow), (agent, index, path, value)
                checked += 1
    assert checked > 50
    assert dumps  # (the mutator's writer: lone surrogates as escapes, 1e400 as a number)


@pytest.mark.parametrize("agent", sorted(BASES))
def test_every_odd_value_in_every_checked_field_reads_the_same(agent: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The C checks (`check_tree(s)`: a line whose checked fields all pass their fast marks is not
    checked in Python) and the Python checks drop, rewrite and name the same fields: every odd value
    in every field of a few lines of each kind, nested ones (usage, content blocks, costs) too."""
    lines = BASES[agent].read_text().splitlines()
    kinds: set[Any] = set()
    checked = 0
    for index in range(1, len(lines)):
        obj = orjson.loads(lines[index])
        kind = (obj.get("type"), str((obj.get("message") or obj.get("payload") or {}).get("role")))
        if kind in kinds:
            continue
        kinds.add(kind)
        one = [lines[0], lines[index]]  # the line alone after the header (fast: thousands of reads)
        paths = list(field_paths(obj))
        for k, path in enumerate(paths[::max(1, len(paths) // 24)]):  # (at most ~24 fields of a line)
            for value in ODD_VALUES[k % 3::3]:
                data = "\n".join(mutated(one, 1, path, value)).encode() + b"\n"
                fast, slow = _read_both(data, "m.jsonl", monkeypatch)
                assert _view(fast) == _view(slow), (agent, index, path, value)
                checked += 1
    assert checked > 200


def test_a_null_tool_list_is_kept() -> None:
    """A Pi 1.x system message's `toolsAdded: null` is kept like every null field (it raised a
    TypeError before the checks were walked in C)."""
    assert pi_checks.check_entry({"type": "message", "id": "a", "message": {"role": "system", "toolsAdded": None,
                                                                          "toolsRemoved": [{"name": 5}]}}) == [
        "message.toolsRemoved[0].name: not a string (int); dropped"]
