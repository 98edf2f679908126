"""The run record's JSON keys are its dataclasses' fields (`replay.run_document`, `replay.metrics`,
`replay.cost.CacheModel`, `replay.records.RecordedMatch`).

- `RunMetrics`, `CompactionRecord` and `CacheModel` write and read their JSON from `dataclasses.fields()`
  (a renamed key in the field's metadata, `records.json_field`): a field added to one (here, to a
  subclass made by `dataclasses.make_dataclass`) is in its `to_dict`, last, and reads back with
  `from_dict`;
- every record type of a run (the golden documents' runs read back, and a replayed run with its
  timeline) writes exactly its fields' keys: no field is left out of a hand-written `to_dict`, and
  no key is written that is no field (but `RecordedMatch.missed`, derived, and `TruthRecord`'s
  `counter` / `counter_choice` and `RunRecord.timeline`, left out when None; a failed compaction has
  no `cache_bust_cost`; `CounterChoice.counter` is its `TruthRecord`'s). `ReplaySettings` is not 1:1 (the policy's own
  options are keys of their own) and has its own tests (`tests/replay/test_run_record.py`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiontools.read.sources import load_source
from sessiontools.replay import replay_records
from sessiontools.replay.cost import CacheModel
from sessiontools.replay.counter_choice import CounterChoice
from sessiontools.replay.metrics import RunMetrics
from sessiontools.replay.records import RecordedMatch, ReplaySettings, json_field, json_key
from sessiontools.replay.run_document import CompactionRecord, RunRecord, TruthRecord
from tests.conftest import SAMPLES

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "out"
RUNS = [r for doc in sorted(GOLDEN.glob("replay-*.json")) for r in orjson.loads(doc.read_bytes())["runs"]]
#: Keys a record writes that are no field of its own (derived).
DERIVED = {RecordedMatch: {"missed"}}
#: Fields a record leaves out of its JSON when they are None.
OMITTED_WHEN_NONE = {TruthRecord: {"counter", "counter_choice"}, RunRecord: {"timeline"}}
#: Fields a record leaves to the one that holds it (`TruthRecord.counter` is the counter chosen).
HOLDERS = {CounterChoice: {"counter"}}


def _records() -> list[RunRecord]:
    replayed = replay_records(load_source(SAMPLES / "pi0-overflow.jsonl"), windows=[24000], reserves=[3000],
                              keeps=[4000], policy=None, leaf=None, all_leaves=True, summary_tokens=None,
                              timeline=True)
    assert replayed[0].timeline is not None
    return [RunRecord.from_dict(r) for r in RUNS] + list(replayed)


def _expected_keys(record: Any) -> set[str]:
    t = type(record)
    omitted = {n for n in OMITTED_WHEN_NONE.get(t, ()) if getattr(record, n) is None}
    return {json_key(f) for f in dataclasses.fields(record)} - omitted - HOLDERS.get(t, set()) | DERIVED.get(t, set())


def _check(record: Any, d: dict[str, Any], where: str) -> int:
    """Assert `d` (its `to_dict`) has exactly `record`'s keys, and so for the records it holds."""
    assert set(d) == _expected_keys(record), (where, type(record).__name__)
    checked = 1
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, ReplaySettings) and hasattr(value, "to_dict"):
            checked += _check(value, d[json_key(f)], f"{where}.{f.name}")
        elif isinstance(value, tuple) and value and isinstance(value[0], CompactionRecord):
            for c, cd in zip(value, d[json_key(f)], strict=True):
                checked += _check(c, {**cd, **({} if "cache_bust_cost" in cd else {"cache_bust_cost": None})},
                                  f"{where}.{f.name}")
    return checked


def test_every_record_writes_exactly_its_fields() -> None:
    records = _records()
    assert any(r.compactions for r in records) and any(r.timeline for r in records)
    n = sum(_check(r, r.to_dict(timeline=True), r.session) for r in records)
    assert n > len(records) * 5


def _plus_one(cls: type, instance: Any, value: Any, **field_kw: Any) -> Any:
    """`instance` as an instance of a subclass of `cls` with one more field, `added`, set to `value`."""
    sub = dataclasses.make_dataclass(f"{cls.__name__}Plus", [("added", type(value), dataclasses.field(**field_kw))],
                                     bases=(cls,), frozen=True, slots=True)
    return sub, sub(**{f.name: getattr(instance, f.name) for f in dataclasses.fields(cls)}, added=value)


def _first(pred: Any) -> RunRecord:
    return next(r for r in map(RunRecord.from_dict, RUNS) if pred(r))


@pytest.mark.parametrize("kind", ["metrics", "compaction", "cache_model"])
def test_a_new_field_is_written_and_read_back(kind: str) -> None:
    r = _first(lambda r: r.compactions and r.cache_model.pairs)
    instance, cls = {"metrics": (r.metrics, RunMetrics), "compaction": (r.compactions[0], CompactionRecord),
                     "cache_model": (r.cache_model, CacheModel)}[kind]
    sub, plus = _plus_one(cls, instance, 17, default=0)
    d = plus.to_dict()
    assert list(d) == [*instance.to_dict(), "added"] and d["added"] == 17
    assert sub.from_dict(d) == plus
    assert sub.from_dict(d).to_dict() == d


def test_a_renamed_field_is_written_under_its_key() -> None:
    """A field whose JSON key is not its name (`json_field(key)`, as `CacheModel.after_bust` is
    `after_bust_tokens`) is written and read under that key."""
    r = _first(lambda r: r.cache_model.pairs)
    sub, plus = _plus_one(CacheModel, r.cache_model, 3, default=0, metadata=json_field("added_tokens"))
    d = plus.to_dict()
    assert "added" not in d and d["added_tokens"] == 3
    assert sub.from_dict(d) == plus
    assert {"after_bust_tokens", "input_floor_tokens"} <= set(r.cache_model.to_dict())
