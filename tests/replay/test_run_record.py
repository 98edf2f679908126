"""The typed run record (`replay.run_document.RunRecord`) and its one JSON form.

- typed -> JSON is today's JSON: every run of the golden replay documents (every sample of every
  agent, at the recorded settings and under the demo grid, every branch) read back with
  `RunRecord.from_dict` writes the same bytes (`RunRecord.to_dict`: key order included);
- a replay of every sample (each agent's files, its own rule, with the first run's timeline) gives
  records whose JSON reads back to the same JSON, and `run_record` (one run's JSON) is that JSON;
- the records are picklable (what `--jobs` workers return).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import orjson
import pytest

from sessiontools.read.sources import load_source
from sessiontools.replay import replay_records, replay_source, run_record
from sessiontools.replay.run_document import RunRecord, record_of
from tests.conftest import SAMPLES

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "out"
DOCS = sorted(GOLDEN.glob("replay-*.json"))
FILES = sorted(SAMPLES.rglob("*.jsonl"))
#: Every sample replays at this setting (Pi's lab model has no catalogued window).
SETTING = dict(windows=[24000], reserves=[3000], keeps=[4000], policy=None, leaf=None, all_leaves=True,
               summary_tokens=None)


def _bytes(d: object) -> bytes:
    return orjson.dumps(d)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.stem)
def test_the_golden_json_reads_back_to_the_same_bytes(doc: Path) -> None:
    runs = orjson.loads(doc.read_bytes())["runs"]
    assert runs
    for r in runs:
        assert _bytes(RunRecord.from_dict(r).to_dict()) == _bytes(r), r["session"]


def test_the_golden_documents_hold_every_agent() -> None:
    agents = {r["agent"] for doc in DOCS for r in orjson.loads(doc.read_bytes())["runs"]}
    assert agents == {"pi", "codex", "claude-code"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_every_samples_records_round_trip(path: Path) -> None:
    src = load_source(path)
    records = replay_records(src, timeline=True, **SETTING)
    assert records and all(isinstance(r, RunRecord) for r in records)
    assert records[0].timeline is not None
    for r in records:
        d = r.to_dict(timeline=True)
        back = RunRecord.from_dict(d)
        assert _bytes(back.to_dict(timeline=True)) == _bytes(d)
        assert back.to_dict() == {k: v for k, v in d.items() if k != "timeline"}
    assert pickle.loads(pickle.dumps(records)) == records


def test_run_record_is_the_records_json() -> None:
    """`run_record(pr, run)` (one run's JSON) is `record_of(pr, run).to_dict()`: one JSON writer."""
    (pr,) = replay_source(load_source(SAMPLES / "pi0-overflow.jsonl"), **SETTING)
    for run in pr.runs:
        assert _bytes(run_record(pr, run)) == _bytes(record_of(pr, run).to_dict())
