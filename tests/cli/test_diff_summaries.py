"""`sessiontools diff-summaries`: formats, gates, exit codes, plots, and the real recorded sessions."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from sessiontools.cli import main
from sessiontools.testing import SessionBuilder


def _summary(done: list[str], *, read: list[str] = ()) -> str:  # type: ignore[assignment]
    text = "\n".join([
        "## Goal", "- Make the parser fast", "", "## Constraints & Preferences", "- (none)", "",
        "## Progress", "### Done", *[f"- [x] {d}" for d in done], "", "### In Progress", "- [ ] (none)", "",
        "### Blocked", "- (none)", "", "## Key Decisions", "- **Use a table**: faster", "", "## Next Steps",
        "1. Benchmark", "", "## Critical Context", "- Baseline 1450 ms",
    ])
    if read:
        text += "\n\n<read-files>\n" + "\n".join(read) + "\n</read-files>"
    return text


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    """Three compactions: S1 -> S2 drops `bench.py` (item, literal, file list); S2 -> S3 adds one."""
    b = SessionBuilder()
    for k, (done, read) in enumerate([
        (["Read `src/parse.py`", "Wrote `bench.py`"], ["src/parse.py", "bench.py"]),
        (["Read `src/parse.py`"], ["src/parse.py"]),
        (["Read `src/parse.py`", "Added a cache"], ["src/parse.py"]),
    ]):
        u = b.user(f"task {k}")
        b.assistant("done")
        b.compaction(_summary(done, read=read), u, 1000 + k)
    f = tmp_path / "s.jsonl"
    f.write_bytes(b.jsonl())
    return f


def run(args: list[str], capsys) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = main(["diff-summaries", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_shape_and_counts(session_file: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """JSON has the envelope, one chain of three summaries, two pairs with integer counts and the dropped items listed."""
    code, out, _ = run([str(session_file), "--format", "json", "--tokenizer", "chars4"], capsys)
    assert code == 0
    j = orjson.loads(out)
    assert (j["schema_version"], j["command"], j["tokenizer"]) == (1, "diff-summaries", "chars4")
    chain = j["chains"][0]
    assert [s["entry_id"] for s in chain["summaries"]] == ["e0003", "e0006", "e0009"]
    assert chain["summaries"][0]["sections_missing"] == []
    p1, p2 = chain["pairs"]
    assert (p1["from"], p1["to"], p1["relation"]) == ("e0003", "e0006", "update")
    assert p1["items"]["dropped"] == 1 and p1["items_detail"]["dropped"] == [{"section": "Progress/Done", "text": "Wrote `bench.py`"}]
    assert p1["literals"]["dropped"] == 1 and p1["literals_detail"]["dropped"] == [{"kind": "path", "value": "bench.py"}]
    assert p1["file_list_violations"] == [{"list": "read-files", "file": "bench.py", "now_in": "neither"}]
    assert p2["items"]["added"] == 1 and p2["items"]["dropped"] == 0
    assert j["metrics"]["dropped_items"] == 1 and j["gates"] == []


def test_json_is_byte_identical_across_runs(session_file: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Two runs over the same input write the same bytes."""
    _, a, _ = run([str(session_file), "-f", "json"], capsys)
    _, b, _ = run([str(session_file), "-f", "json"], capsys)
    assert a == b


def test_gate_trips_with_exit_1_and_says_why(session_file: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A tripped gate exits 1 and names the gate and value on stderr; gates that hold exit 0."""
    code, _, err = run([str(session_file), "-f", "json", "--fail-if", "dropped_literals>0"], capsys)
    assert code == 1 and "gate dropped_literals>0 tripped: dropped_literals=1 (1 path(s) in 1 session(s))" in err
    code, out, _ = run([str(session_file), "-f", "json", "--fail-if", "missing_sections>0",
                        "--fail-if", "dropped_items>=2"], capsys)
    assert code == 0
    assert [g["tripped"] for g in orjson.loads(out)["gates"]] == [False, False]
    code, _, err = run([str(session_file), "--fail-if", "file_list_violations>0", "--fail-if", "resurrections>0"], capsys)
    assert code == 1 and "file_list_violations>0" in err and "resurrections" not in err.split("gate tripped")[-1]


@pytest.mark.parametrize(
    ("expr", "message"),
    [("dropped_stuff>0", "unknown metric 'dropped_stuff'"), ("dropped_items=>1", "expected METRIC OP NUMBER")],
)
def test_bad_gate_is_usage_error(session_file: Path, capsys, expr: str, message: str) -> None:  # type: ignore[no-untyped-def]
    """An unknown metric or a malformed expression exits 2 with a clear message."""
    code, _, err = run([str(session_file), "--fail-if", expr], capsys)
    assert code == 2 and message in err


def test_usage_errors(session_file: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """--leaf with --all-leaves, a --pair beyond the chain, and a --plot that is not .png/.svg exit 2."""
    assert run([str(session_file), "--leaf", "e0001", "--all-leaves"], capsys)[0] == 2
    code, _, err = run([str(session_file), "--pair", "3"], capsys)
    assert code == 2 and "at most 2 pair" in err
    assert run([str(session_file), "--plot", str(tmp_path / "x.pdf")], capsys)[0] == 2
    assert run([str(session_file), "--leaf", "nope"], capsys)[0] == 2


def test_pair_option_keeps_one_pair(session_file: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """--pair 2 shows only the second pair in JSON and in the table view."""
    code, out, _ = run([str(session_file), "-f", "json", "--pair", "2"], capsys)
    assert code == 0
    pairs = orjson.loads(out)["chains"][0]["pairs"]
    assert [p["position"] for p in pairs] == [2]
    code, out, _ = run([str(session_file), "--pair", "2"], capsys)
    assert code == 0 and "pair 2: S2" in out and "pair 1: S1" not in out


def test_table_and_markdown_outputs(session_file: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The table view shows the diff; markdown is a PR comment with gates, a pairs table and details."""
    code, out, _ = run([str(session_file)], capsys)
    assert code == 0 and "Wrote `bench.py`" in out and "literals dropped (1): bench.py" in out
    md = tmp_path / "drift.md"
    code, out, _ = run([str(session_file), "-f", "markdown", "-o", str(md), "--fail-if", "dropped_items>0"], capsys)
    assert code == 1 and out == ""
    text = md.read_text(encoding="utf-8")
    assert text.startswith("## Summary drift")
    assert "❌ tripped: `dropped_items>0` (value 1)" in text
    assert "| 1 | S1 → S2 | update | " in text and "<details>" in text


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot_files(session_file: Path, tmp_path: Path, capsys, suffix: str) -> None:  # type: ignore[no-untyped-def]
    """--plot writes the decay curves as PNG or SVG, the same bytes on a second run."""
    f = tmp_path / f"decay{suffix}"
    assert run([str(session_file), "-f", "json", "--plot", str(f)], capsys)[0] == 0
    first = f.read_bytes()
    assert first.startswith(b"\x89PNG" if suffix == ".png" else b"<?xml")
    assert run([str(session_file), "-f", "json", "--plot", str(f)], capsys)[0] == 0
    assert f.read_bytes() == first


def test_session_without_summaries(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A session with no compaction is analysed without error: an empty chain, exit 0."""
    b = SessionBuilder()
    b.user("hi")
    b.assistant("hello")
    f = tmp_path / "plain.jsonl"
    f.write_bytes(b.jsonl())
    code, out, _ = run([str(f), "-f", "json"], capsys)
    assert code == 0 and orjson.loads(out)["chains"][0]["summaries"] == []
    code, out, _ = run([str(f)], capsys)
    assert code == 0 and "no summaries on this path" in out


def test_unreadable_input_exits_3(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A missing file exits 3, and that wins over a tripped gate."""
    assert run([str(tmp_path / "missing.jsonl"), "--fail-if", "summaries>=0"], capsys)[0] == 3


def test_help_lists_metrics(capsys) -> None:  # type: ignore[no-untyped-def]
    """--help documents the command and the gate metrics."""
    assert main(["diff-summaries", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--fail-if" in out and "dropped_literals" in out and "--pair" in out


# --------------------------------------------------------------------------- real recorded sessions


def test_real_free_form_summaries(shared_pi: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """before-compaction.jsonl: two free-form compactions, one update pair, goal unchanged, no errors."""
    code, out, err = run([str(shared_pi / "before-compaction.jsonl"), "-f", "json"], capsys)
    assert code == 0, err
    chain = orjson.loads(out)["chains"][0]
    assert [s["entry_id"] for s in chain["summaries"]] == ["v1-359", "v1-628"]
    assert all(s["format"] == "partial" and s["items"] > 10 for s in chain["summaries"])
    (p,) = chain["pairs"]
    assert (p["from"], p["to"], p["relation"]) == ("v1-359", "v1-628", "update")
    assert p["goal_similarity"] == 1.0
    assert p["items"]["kept"] >= 3 and p["items"]["dropped"] > 0 and p["literals"]["kept"] > 0
    assert "v0.27" not in out


def test_every_real_session_runs(shared_pi: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """All of ../shared/sessions/pi in every format: exit 0, the split-turn parts found, no internal error."""
    for fmt in ("json", "table", "markdown"):
        code, out, err = run([str(shared_pi), "-f", fmt, "--all-leaves"], capsys)
        assert code == 0, err
        assert "internal error" not in err
    code, out, _ = run([str(shared_pi), "-f", "json"], capsys)
    chains = {Path(c["session"]).name: c for c in orjson.loads(out)["chains"]}
    assert len(chains["compact.jsonl"]["summaries"]) == 2  # the second one is on the recovered glued line
    assert chains["compact.jsonl"]["summaries"][0]["split_turn"] is True
    assert chains["session.jsonl"]["summaries"][0]["split_turn"] is True
    assert chains["large-session.jsonl"]["summaries"] == []


def test_retention_gates_and_fact_json(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """`--fail-if 'retention.files<0.8'` trips when a summary omits the span's files; JSON has facts and survival."""
    b = SessionBuilder()
    b.user("go")
    b.assistant(None, tool_calls=[("read", {"path": "src/x/one.py"}), ("read", {"path": "src/x/two.py"})])
    b.tool_result("read", "x", call_id=b.last_call_id())
    u = b.user("next")
    b.compaction(_summary(["Read `src/x/one.py`"]), u, 1000)
    f = tmp_path / "r.jsonl"
    f.write_bytes(b.jsonl())
    code, out, err = run([str(f), "-f", "json", "--fail-if", "retention.files<0.8", "--fail-if", "retention.errors<1"],
                         capsys)
    assert code == 1 and "gate retention.files<0.8 tripped: retention.files=0.5" in err
    assert "retention.errors" not in err.split("tripped")[-1]  # no errors in the span: the gate cannot trip
    doc = orjson.loads(out)
    s1 = doc["chains"][0]["summaries"][0]
    assert s1["facts"]["files"] == {"in_span": 2, "retained": 1, "retention": 0.5, "lost": ["src/x/two.py"]}
    assert doc["chains"][0]["fact_survival"]["files"] == [0.5]
    assert doc["metrics"]["retention.errors"] is None
    assert [g["tripped"] for g in doc["gates"]] == [True, False]


@pytest.mark.parametrize("table,first", [("summaries", "session,leaf_id,agent,position"), ("pairs", "session,leaf_id,pair"),
                                         ("facts", "session,leaf_id,position,entry_id,category"),
                                         ("chains", "session,leaf_id,agent,summaries")])
def test_csv_tables(session_file: Path, capsys, table: str, first: str) -> None:  # type: ignore[no-untyped-def]
    """`--format csv` writes the rows of the chosen frame: one per summary, pair, compaction x category, chain."""
    code, out, _ = run([str(session_file), "-f", "csv", "--csv-table", table], capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith(first)
    assert len(lines) - 1 == {"summaries": 3, "pairs": 2, "facts": 12, "chains": 1}[table]
