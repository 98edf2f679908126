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


def test_every_judged_ratio_states_how_it_is_measured() -> None:
    """Each target's ratio has its clock, warm or cold, rounds and floor (or why it has none) stated
    (METHOD), and a floor named there is a key some benchmark returns (so it is printed beside the
    ratio, not a dangling name)."""
    import re

    from bench.run import METHOD, TARGETS

    assert set(METHOD) == set(TARGETS)
    for key, (how, floor) in METHOD.items():
        assert re.search(r"\bwall\b|\bCPU\b", how), (key, "which clock")
        assert re.search(r"\bwarm\b|\bcold\b", how), (key, "warm or cold")
        assert re.search(r"(best|median) of \d+", how), (key, "how many rounds, and best or median")
        assert floor or "no floor" in how, (key, "a floor, or why there is none")
        if floor:
            sources = "".join(p.read_text() for p in (Path(__file__).parent.parent / "bench").glob("*.py")
                              if p.name != "run.py")  # (run.py names them in METHOD)
            built = re.fullmatch(r"inspect_cpu_vs_ccusage_(pi|claude_code|codex)_floor", floor)
            assert f'"{floor}"' in sources or (built and 'f"inspect_cpu_vs_ccusage_{agent}_floor"' in sources), key
