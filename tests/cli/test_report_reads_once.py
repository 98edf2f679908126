"""`sessiontools report` reads each file once: every section (inspect, replay, estimate-error, drift)
is made from the one read, and a prior-dominated session is replayed again from memory, not re-read
(by `replay` too).

Before this, the report read every file four to ten times (once per section, and again for the
prior refit): the opens-per-file counts of the samples were 4, 5, 8 and 10; `replay` read the
prior-dominated sample twice.
"""

from __future__ import annotations

import builtins
import collections
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontools.cli import main
from tests.conftest import SAMPLES

GRID = ["--context-window", "16k", "--reserve", "3000", "--keep-recent", "4000", "--jobs", "1"]


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> Iterator[collections.Counter[str]]:
    """How many times each sample file is opened for reading (`open`, `io.open`, `Path.read_bytes`)."""
    counts: collections.Counter[str] = collections.Counter()
    real, root = builtins.open, os.path.realpath(SAMPLES)

    def counting(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | os.PathLike) and "r" in mode:
            p = os.path.realpath(os.fspath(file))
            if p.startswith(root) and p.endswith(".jsonl"):
                counts[p] += 1
        return real(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting)
    monkeypatch.setattr(io, "open", counting)
    yield counts


def _inspect_opens(opens: collections.Counter[str], tmp_path: Path) -> dict[str, int]:
    assert main(["inspect", str(SAMPLES), "--format", "json", "-o", str(tmp_path / "i.json"), "--jobs", "1"]) == 0
    got = dict(opens)
    opens.clear()
    return got


def test_report_opens_each_file_as_often_as_one_inspect(opens: collections.Counter[str], tmp_path: Path) -> None:
    """One read per file: the report opens each sample exactly as often as `inspect` does: once,
    whichever agent wrote it (a Codex or Claude Code file is sniffed and read through one handle)."""
    one_pass = _inspect_opens(opens, tmp_path)
    assert main(["report", str(SAMPLES), "-o", str(tmp_path / "r.html"), *GRID]) == 0
    assert len(one_pass) >= 30 and set(opens) == set(one_pass)
    assert dict(opens) == one_pass == dict.fromkeys(one_pass, 1)


def test_replay_opens_each_file_as_often_as_one_inspect(opens: collections.Counter[str], tmp_path: Path) -> None:
    """The prior refit of `replay` replays the kept source: no file is read a second time."""
    one_pass = _inspect_opens(opens, tmp_path)
    assert main(["replay", str(SAMPLES), "--format", "json", "-o", str(tmp_path / "r.json"), *GRID]) == 0
    assert dict(opens) == one_pass


def test_prior_refit_replays_the_kept_source_as_a_fresh_read_would() -> None:
    """A session replayed again under a learnt prior gives the same records from the kept source as
    from a second read (the first replay leaves no state behind in the source)."""
    from sessiontools.cli.documents import _replay_fn
    from sessiontools.cli.priors import Replayed, refit_kept, replay_keeping
    from sessiontools.read.sources import expand_sources, load_source

    fn = _replay_fn([16000], [3000], [4000])
    kept = [replay_keeping(fn, load_source(f)) for f in expand_sources([SAMPLES])]
    assert any(r.source is not None for r in kept), "no prior-dominated sample: the test would prove nothing"
    reread = [Replayed(r) for r in kept]
    assert refit_kept(kept, fn) == refit_kept(reread, fn)


def test_a_failing_section_keeps_the_file_in_the_others(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """One read serves four sections: when one of them fails on a file (a user error such as a model
    missing from the catalogue), the others still show it, the error is said once, and the exit is 3."""
    import sessiontools.replay as replay
    from sessiontools.errors import InputError

    real = replay.replay_records
    bad = "pi0-tiny.jsonl"

    def failing(source: Any, *args: Any, **kwargs: Any) -> Any:
        if str(source.path).endswith(bad):
            raise InputError(f"{source.path}: no such model")
        return real(source, *args, **kwargs)

    monkeypatch.setattr(replay, "replay_records", failing)
    out = tmp_path / "r.html"
    assert main(["report", str(SAMPLES), "-o", str(out), *GRID]) == 3
    err = capsys.readouterr().err
    assert err.count(f"{bad}: no such model") == 1
    html = out.read_text(encoding="utf-8")
    inspect_part = html[html.index('<section id="inspect">'):html.index('<section id="replay">')]
    assert "pi0-tiny" in inspect_part


def test_export_reads_each_file_once(opens: collections.Counter[str], tmp_path: Path) -> None:
    """`export --replay-*` makes every table, the replay rows included, and the file's hash (the
    dataset's identity of a file, its full sha256) from one read of each file: no pass that only
    hashes (before, every file was read once more to hash it, and a Codex or Claude Code file was
    opened a third time to sniff it; it is now sniffed through the handle that reads it). A second export of the same, unchanged files opens none of them
    (path, size and mtime as the manifest recorded)."""
    one_pass = _inspect_opens(opens, tmp_path)
    argv = ["export", str(SAMPLES), "-o", str(tmp_path / "ds"), "--jobs", "1", "--replay-window", "16k",
            "--replay-reserve", "3000", "--replay-keep", "4000"]
    assert main(argv) == 0
    assert set(opens) == set(one_pass) and len(opens) >= 30
    assert dict(opens) == dict.fromkeys(one_pass, 1)
    opens.clear()
    assert main(argv) == 0
    assert dict(opens) == {}


@pytest.fixture
def runs_seen(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """The `ReplayRun` objects that became JSON records and timelines, and the runs of each walk of a
    file (kept alive here, so that their ids stay unique)."""

    import sessiontools.replay.run_document as run_document
    import sessiontools.replay.session as session

    seen: dict[str, list[Any]] = {"record": [], "timeline": [], "replayed": []}
    real_record, real_timeline, real_source = session.record_of, run_document.timeline_of, session.replay_source

    def record(pr: Any, run: Any, timeline: bool = False) -> Any:
        seen["record"].append(run)
        return real_record(pr, run, timeline=timeline)

    def timeline(pr: Any, run: Any) -> Any:
        seen["timeline"].append(run)
        return real_timeline(pr, run)

    def source(s: Any, **options: Any) -> Any:
        out = real_source(s, **options)
        seen["replayed"] += [run for pr in out for run in pr.runs]
        return out

    monkeypatch.setattr(session, "record_of", record)
    monkeypatch.setattr(run_document, "timeline_of", timeline)
    monkeypatch.setattr(session, "replay_source", source)
    return seen


@pytest.mark.parametrize("command", ["replay", "report"])
def test_each_timeline_is_of_a_run_the_table_shows(command: str, runs_seen: dict[str, list[Any]],
                                                   tmp_path: Path) -> None:
    """`replay --plot` (one setting) and `report`: every timeline is drawn from a `ReplayRun` that is
    also a row of the table (the same object, not a second replay), and no setting of a file is walked
    twice (a prior-dominated session's first pass fits it only)."""
    f = SAMPLES / "codex" / "codex-pair-a.jsonl" if command == "replay" else SAMPLES
    out = tmp_path / ("r.json" if command == "replay" else "r.html")
    argv = ([command, str(f), "-f", "json", "-o", str(out), "--plot", str(tmp_path / "t.png"), "--jobs", "1"]
            if command == "replay" else [command, str(f), "-o", str(out), *GRID])
    assert main(argv) == 0
    ids = {k: [id(r) for r in v] for k, v in runs_seen.items()}
    assert ids["timeline"] and set(ids["timeline"]) <= set(ids["record"])
    assert len(ids["record"]) == len(set(ids["record"])) and set(ids["record"]) == set(ids["replayed"])


@pytest.mark.parametrize(("sample", "policy"), [
    ("pi0-pair-a.jsonl", None), ("pi0-pair-a.jsonl", "claude-code"), ("codex/codex-pair-a.jsonl", None),
    ("codex/codex-pair-a.jsonl", "pi-1"), ("claude-code/claude-threshold-15.jsonl", None),
    ("claude-code/claude-threshold-15.jsonl", "codex")])
def test_replay_plot_reads_each_agents_file_once(sample: str, policy: str | None, opens: collections.Counter[str],
                                                 tmp_path: Path) -> None:
    """`replay FILE --plot` of one setting (the timeline) and of a grid (the heatmap), under the file's
    own rule and another agent's: the file is opened as often as one `inspect` opens it (a prior
    refit or the figure does not read it again)."""
    f = SAMPLES / sample
    assert main(["inspect", str(f), "--format", "json", "-o", str(tmp_path / "i.json")]) == 0
    one_pass = dict(opens)
    opens.clear()
    assert one_pass and set(one_pass.values()) == {1}
    for windows, plot in (("100000", "t.png"), ("100000,120000", "h.svg")):
        assert main(["replay", str(f), *(["--policy", policy] if policy else []), "--context-window", windows,
                     "-f", "json", "-o", str(tmp_path / "r.json"), "--jobs", "1", "--plot", str(tmp_path / plot)]) == 0
        assert (tmp_path / plot).stat().st_size > 1000
        assert dict(opens) == one_pass, plot
        opens.clear()
