"""`sessiontools estimate-error`: formats, grouping, calibration files, plots and the MAPE gate."""

from __future__ import annotations

import math
from pathlib import Path

import orjson
import polars as pl
import pytest

from sessiontools.cli import main
from sessiontools.testing import SessionBuilder
from sessiontools.tokens.chars4 import message_chars
from sessiontools.transcript.pi import SessionTree, build_context
from tests.conftest import shared_sessions


def scripted(session_id: str, *, runs: int = 4, chars_per_token: float = 3.0, overhead: int = 1500) -> bytes:
    """A session whose recorded prompt is overhead + ceil(context chars / chars_per_token)."""
    b = SessionBuilder(session_id)
    for r in range(runs):
        b.user(f"run {r}: " + "refactor the module " * (4 + r))
        for c in range(3):
            ctx = build_context(SessionTree(b.session()).path().entries, "0").messages
            prompt = overhead + math.ceil(sum(message_chars(m, "0") for m in ctx) / chars_per_token)
            last = c == 2
            b.assistant("done" if last else "reading", tool_calls=() if last else [("read", {"path": f"m{r}{c}.py"})],
                        usage=b.usage(prompt, 30))
            if not last:
                b.tool_result("read", "x = compute(y)\n" * (40 + 13 * c + 7 * r))
    return b.jsonl()


@pytest.fixture
def sessions_dir(tmp_path: Path) -> Path:
    d = tmp_path / "sessions"
    d.mkdir()
    for k in range(3):
        (d / f"s{k}.jsonl").write_bytes(scripted(f"sess-{k}", runs=3 + k))
    return d


def test_json_summary_keys_and_fractions(sessions_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """JSON has the documented keys in order, bias/MAPE as fractions, calibrated with mape_in_sample."""
    assert main(["estimate-error", str(sessions_dir), "--format", "json"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    assert list(data)[:4] == ["schema_version", "command", "requests", "skipped_requests"]
    assert data["schema_version"] == 1 and data["command"] == "estimate-error"
    for key in ("estimators", "groups", "calibration", "timing", "sessions", "thresholds", "by"):
        assert key in data
    assert list(data["estimators"]) == ["chars4", "pi", "cl100k", "o200k", "model", "calibrated", "calibrated_hybrid",
                                        "calibrated_session"]
    c4 = data["estimators"]["chars4"]
    assert set(c4) >= {"n", "bias", "mape", "p50_abs", "p95_abs", "max_abs"}
    assert -1 < c4["bias"] < 0 and 0 < c4["mape"] < 1
    assert "mape_in_sample" in data["estimators"]["calibrated"]
    assert data["requests"] == c4["n"] == 3 * (3 + 4 + 5)
    assert data["calibration"]["judged_by"] == "leave-one-session-out"
    assert data["calibration"]["linear"]["models"]["anthropic/claude-sonnet-4-5"]["method"] == "leave-one-session-out"


def test_json_is_byte_identical_across_runs(sessions_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Identical input gives identical bytes."""
    args = ["estimate-error", str(sessions_dir), "--format", "json", "--by", "content"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert main(args) == 0
    assert capsys.readouterr().out == first


def test_csv_and_parquet_have_one_row_per_request(sessions_dir: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """CSV (stdout) and Parquet (file) come from the same per-request frame."""
    assert main(["estimate-error", str(sessions_dir), "--format", "csv", "--estimators", "chars4,pi"]) == 0
    csv_text = capsys.readouterr().out
    lines = csv_text.strip().splitlines()
    assert lines[0].startswith("session,pi_version,entry_id,kind,index,line")
    assert "est_chars4" in lines[0] and "rel_err_pi" in lines[0] and "est_o200k" not in lines[0]
    assert len(lines) == 1 + 36
    pq = tmp_path / "rows.parquet"
    assert main(["estimate-error", str(sessions_dir), "--format", "parquet", "-o", str(pq), "--estimators", "chars4,pi"]) == 0
    df = pl.read_parquet(pq)
    assert df.height == 36 and df["actual"].dtype == pl.Int64
    assert main(["estimate-error", str(sessions_dir), "--format", "parquet"]) == 2


def test_table_output_names_estimators_and_groups(sessions_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The table has estimators as rows and the chosen grouping as columns: per session with
    --per-session, one table with an `all` row in the folder answer."""
    args = ["estimate-error", str(sessions_dir), "--by", "size", "--estimators", "chars4,pi,calibrated",
            "--calibration-x", "chars4"]
    assert main([*args, "--per-session"]) == 0
    out = capsys.readouterr().out
    assert "MAPE and bias by size" in out
    assert "chars4" in out and "calibrated" in out
    assert "<8k" in out or "8k-16k" in out
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "MAPE % (bias %) per size and estimator" in out and "MAPE and bias by size" not in out
    assert any(line.startswith("all ") for line in out.splitlines())


def test_fail_if_gate(sessions_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """--fail-if 'METRIC OP NUMBER' (fractions) exits 1 when tripped, naming the rows in words; 0 otherwise;
    2 when malformed, unknown, or about an estimator that was not computed; --fail-if-mape is gone."""
    base = ["estimate-error", str(sessions_dir), "--estimators", "chars4,pi", "--format", "json"]
    assert main([*base, "--fail-if", "mape.chars4>0.05"]) == 1
    err = capsys.readouterr().err
    assert "gate mape.chars4>0.05 tripped: mape.chars4=" in err
    assert "(all sessions)" in err and "(session s0.jsonl)" in err
    assert main([*base, "--fail-if", "mape.chars4>0.9", "--fail-if", "bias.chars4>0"]) == 0
    assert main([*base, "--fail-if", "bias.chars4<0"]) == 1
    assert main([*base, "--fail-if", "p95.chars4>=0"]) == 1
    assert main([*base, "--fail-if", "chars4>5"]) == 2
    assert main([*base, "--fail-if", "mape.chars4=5"]) == 2
    assert main([*base, "--fail-if", "mape.o200k>0.05"]) == 2
    assert main([*base, "--fail-if-mape", "chars4>5"]) == 2
    full = ["estimate-error", str(sessions_dir), "--format", "json"]
    assert main([*full, "--fail-if", "mape_oos.calibrated>0.9", "--fail-if", "mape_oos.chars4>0.9"]) == 0
    assert main([*full, "--fail-if", "mape_oos.chars4>0.01"]) == 1
    assert "gate mape_oos.chars4>0.01 tripped" in capsys.readouterr().err


def test_save_then_load_calibration(sessions_dir: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """--save-calibration writes the documented file; --calibration uses it for the calibrated estimator."""
    cal = tmp_path / "cal.json"
    assert main(["estimate-error", str(sessions_dir), "--estimators", "chars4", "--calibration-x", "chars4",
                 "--save-calibration", str(cal), "--format", "json"]) == 0
    capsys.readouterr()
    doc = orjson.loads(cal.read_bytes())
    assert doc["kind"] == "calibration" and doc["schema_version"] == 2 and doc["model"] == "features"
    coef = doc["models"]["anthropic/claude-sonnet-4-5"]
    assert all(v >= 0 for v in coef.values())
    assert main(["estimate-error", str(sessions_dir), "--estimators", "chars4,calibrated", "--calibration", str(cal),
                 "--format", "json"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    assert data["calibration"]["source"] == "file"
    assert data["estimators"]["calibrated"]["mape"] < 0.02
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["estimate-error", str(sessions_dir), "--calibration", str(bad)]) == 3
    assert main(["estimate-error", str(sessions_dir), "--calibration", str(tmp_path / "missing.json")]) == 2


def test_plot_and_bad_options(sessions_dir: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """--plot writes a PNG; bad --estimators/--by/--threshold-grid/--plot suffix are usage errors."""
    png = tmp_path / "err.png"
    assert main(["estimate-error", str(sessions_dir), "--estimators", "chars4,pi", "--plot", str(png), "-f", "json"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["estimate-error", str(sessions_dir), "--estimators", "bpe"]) == 2
    assert main(["estimate-error", str(sessions_dir), "--by", "colour"]) == 2
    assert main(["estimate-error", str(sessions_dir), "--threshold-grid", "x"]) == 2
    assert main(["estimate-error", str(sessions_dir), "--estimators", "chars4", "--plot", str(tmp_path / "a.gif")]) == 2


def test_threshold_grid_in_tokens(sessions_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Explicit token thresholds are used as given, per estimator."""
    assert main(["estimate-error", str(sessions_dir), "--estimators", "chars4", "--threshold-grid", "3000,5k",
                 "-f", "json"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    assert [t["tokens"] for t in data["thresholds"]] == [3000, 5000]
    assert [(t["estimator"], t["threshold"]) for t in data["timing"]] == [("chars4", 3000), ("chars4", 5000)]
    assert all(t["early"] == 0 for t in data["timing"])  # chars/4 underestimates here: never early


def test_missing_input_exits_3(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """No readable input is exit code 3."""
    assert main(["estimate-error", str(tmp_path / "nope.jsonl")]) == 3


def test_shared_sessions_end_to_end(capsys) -> None:  # type: ignore[no-untyped-def]
    """On the real sessions: chars4 median A/E 1.3-1.4, calibrated MAPE per session below chars4's."""
    files = shared_sessions()
    if not files:
        pytest.skip("../shared/sessions/pi is absent")
    assert main(["estimate-error", str(files[0].parent), "--format", "json"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    assert 1.3 <= data["estimators"]["chars4"]["median_ratio"] <= 1.4
    assert len(data["sessions"]) == len(files)
    for s in data["sessions"]:
        assert s["estimators"]["calibrated"]["mape"] < s["estimators"]["chars4"]["mape"]
