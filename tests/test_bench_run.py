"""bench/run.py: bench/results.json is written only by a whole run that meets every target not
blocked, and atomically."""

from __future__ import annotations

from pathlib import Path

from bench.run import RESULTS, refuse_write, write_atomically


def test_results_json_only_from_a_whole_run_meeting_every_target(tmp_path: Path) -> None:
    assert refuse_write(RESULTS, partial=False, missed=[]) is None
    assert "missed: dask_running_vs_jobs" in (refuse_write(RESULTS, partial=False, missed=["dask_running_vs_jobs"])
                                             or "")
    assert "--only" in (refuse_write(RESULTS, partial=True, missed=[]) or "")
    elsewhere = tmp_path / "r.json"
    assert refuse_write(elsewhere, partial=True, missed=["x"]) is None  # `--out` elsewhere: the user's file
    assert refuse_write(None, partial=False, missed=[]) is None


def test_results_are_written_atomically(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "results.json"
    write_atomically(out, "{}\n")
    write_atomically(out, '{"a": 1}\n')
    assert out.read_text() == '{"a": 1}\n'
    assert [p.name for p in out.parent.iterdir()] == ["results.json"]  # no temporary file left
