"""The Codex reader's selective first pass (`read.codex.selective`, issue 28: the C scanner's
projection, `NATIVE_SPEC`) reads every line into the record and the diagnostics the ordinary way
gives (every line through orjson, which is also what runs where no compiler built the extension):
over every sample rollout, and over every odd value set in every field of every line (where the
projection's marks must refuse what the checks would drop), invalid UTF-8 in a skipped string, and
the JSON a careless scanner and orjson would judge differently."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from sessiontools.read.codex import load as codex_load
from sessiontools.read.codex.selective import NATIVE_SPEC, SELECTIVE_TYPES
from tests.conftest import SAMPLES
from tests.read.test_native_project import _native
from tests.robust.mutate import ODD_VALUES, dumps, field_paths, mutated

ROLLOUTS = sorted((SAMPLES / "codex").glob("*.jsonl"))


def _view(out: tuple[Any, ...]) -> Any:
    records, diags, wrapped, ordinal = out
    return ([(type(r).__name__, r, getattr(r, "payload", None), getattr(r, "data", None)) for r in records],
            diags, wrapped, ordinal)


def _same(data: bytes) -> None:
    """The C scanner's projection (`read._native.project_lines`, built by every install) and the
    ordinary way read `data` into the same records and diagnostics."""
    _native()  # (a skip only without a C compiler)
    slow = _view(codex_load._read_lines(data, "r.jsonl", native=False))
    assert _view(codex_load._read_lines(data, "r.jsonl", native=True)) == slow


def test_every_sample_rollout_reads_the_same_and_most_lines_go_the_selective_way() -> None:
    tried = taken = 0
    for f in ROLLOUTS:
        data = f.read_bytes()
        _same(data)
        for line in data.splitlines()[1:]:
            if orjson.loads(line).get("type") in SELECTIVE_TYPES:
                tried += 1
                taken += _native().project_lines(line, NATIVE_SPEC, 1, 0)[0][2] is not None
    assert tried > 200 and taken > 0.9 * tried  # (the path is taken: this test compares something)


@pytest.mark.parametrize("rollout", ROLLOUTS[:3], ids=lambda p: p.name)
def test_every_odd_value_in_every_field_reads_the_same(rollout: Any) -> None:
    lines = rollout.read_text().splitlines()
    checked = 0
    kinds: set[Any] = set()
    for index, line in enumerate(lines):
        obj = orjson.loads(line)
        kind = (obj.get("type"), (obj.get("payload") or {}).get("type"))
        if index == 0 or obj.get("type") not in SELECTIVE_TYPES or kind in kinds:
            continue
        kinds.add(kind)  # one line of each kind of event
        one = [lines[0], line]  # the line alone after the first (the selective way skips line 1)
        for path in field_paths(orjson.loads(line)):
            for value in ODD_VALUES:
                _same(("\n".join(mutated(one, 1, path, value)) + "\n").encode())
                checked += 1
    assert checked > 300


def test_json_the_two_decoders_judge_differently() -> None:
    head = b'{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}\n'
    event = b'{"timestamp":"2026-01-01T00:00:01Z","type":"event_msg","payload":{"type":"item_completed","item":'
    for odd in (b'{"type":"x","text":"\xff\xfe"}', b'{"n":1e400}', b'{"n":-1e400}', b'{"s":"\\ud800"}',
                b"[" * 3000 + b"]" * 3000, b'{"n":18446744073709551616}', b'{"a":1,"a":2}', b'{"s":"\x7f"}'):
        data = head + event + odd + b"}}\n"
        _same(data)
        _same(data.replace(b"\n", b"\r\n"))
        _same(data[:-1])  # no newline at the end
    assert dumps({"a": "\ud800"}) == '{"a":"\\ud800"}'
