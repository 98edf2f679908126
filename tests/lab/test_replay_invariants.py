"""`lab.replay_invariants`, the sweep that checks the replay invariants over folders of real sessions (issue
24's count of runs checked): it runs (its import of the run record had gone stale with no test to say
so), replays each file under its own rule and every other agent's over a grid, and counts a broken
invariant and a bug instead of hiding them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab import replay_invariants as sweep
from sessiontools.names import POLICY_ORDER
from tests.conftest import SAMPLES

#: one file of each agent, each of which compacts at W 16k
FILES = [SAMPLES / "pi0-pair-a.jsonl", SAMPLES / "codex" / "codex-pair-a.jsonl",
         SAMPLES / "claude-code" / "claude-threshold-15.jsonl"]
GRID: dict[str, Any] = {"windows": [16000, 24000], "reserves": [3000], "keeps": [2000, 6000], "all_leaves": False}


def test_all_is_the_files_own_rule_and_every_registered_policy() -> None:
    assert sweep._policies("all") == [None, *(p.value for p in POLICY_ORDER)]
    assert sweep._policies("default,codex") == [None, "codex"] and sweep._policies(None) == [None]


def test_every_file_under_every_policy_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three agents' files x (own rule + five policies) over a 2 x 2 grid: every replay ok, runs with
    compactions checked, no violation, exit 0; the log has one line per file and policy."""
    log = tmp_path / "runs.jsonl"
    code = sweep.main([*map(str, FILES), "--policy", "all", "--windows", "16000,24000", "--reserves", "3000",
                       "--keeps", "2000,6000", "--jsonl", str(log)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"files 3, policy all ({3 * (1 + len(POLICY_ORDER))} replays)" in out
    assert f"  ok: {3 * (1 + len(POLICY_ORDER))}\n" in out and "violations 0" in out
    runs = int(out.split("runs checked ")[1].split(",")[0])
    assert runs >= 3 * (1 + len(POLICY_ORDER)) * 2  # at least the two windows of every replay
    assert "runs with a compaction 0," not in out
    assert len(log.read_text().splitlines()) == 3 * (1 + len(POLICY_ORDER))


def test_a_broken_invariant_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep can fail: a rule that every run breaks is reported for every run checked."""
    import sessiontools.replay.invariants as inv

    monkeypatch.setattr(inv, "violations", lambda record: ["peak: injected"])
    path, outcome, n, problems, _ = sweep.check_file((str(FILES[1]), "pi-0", GRID, 60))
    assert outcome == "ok" and n == 4 and problems == ["peak: injected"] * 4


def test_a_bug_is_an_internal_error_not_a_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    import sessiontools.replay.session as session

    def broken(*_: Any, **__: Any) -> Any:
        raise KeyError("boom")

    monkeypatch.setattr(session, "replay_source", broken)
    _, outcome, n, _, _ = sweep.check_file((str(FILES[0]), None, GRID, 60))
    assert outcome.startswith("internal error: KeyError") and n == 0


def test_a_model_without_a_window_is_one_kind_by_its_type() -> None:
    """`_kind` knows a missing model by its error's type (`ModelNotInCatalogue`), not by a word of its
    message: another refusal that names the catalogue is a kind of its own."""
    from sessiontools.errors import InputError, ModelNotInCatalogue

    for model in ("minimax/MiniMax-M2.5", "lab/lab-model"):
        e = ModelNotInCatalogue(f"/x/s.jsonl: model {model} is not in the catalogue (bundled, ...)", model)
        assert sweep._kind(e, "/x/s.jsonl") == "not in the catalogue"
    other = InputError("/x/models.json: cannot read the catalogue file (Permission denied)")
    assert sweep._kind(other, "/x/s.jsonl") == "InputError: /x/models.json: cannot read the catalogue file (Permission denied)"
