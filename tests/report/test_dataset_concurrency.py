"""The dataset survives concurrency and kills (issue 27): two overlapping exports at once serialise
on the directory's lock (no duplicate keys, one manifest row per file); an export SIGKILLed after
some part files were written leaves nothing a reader of the manifest counts, and the next run cleans
up and completes it (DuckDB's counts equal an uninterrupted export's and inspect's)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES

duckdb = pytest.importorskip("duckdb")

TABLES = ("sessions", "requests", "compactions", "summaries")


def _files(tmp: Path, names: list[str], sub: str) -> Path:
    d = tmp / sub
    d.mkdir()
    for n in names:
        shutil.copy(SAMPLES / n, d / n)
    return d


def _export(*args: str, pre: str = "") -> subprocess.Popen[str]:
    code = f"{pre}import sys; from sessiontools.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen([sys.executable, "-c", code, "export", *args, "--jobs", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={k: v for k, v in os.environ.items() if k != "SESSIONTOOLS_DEBUG"})


def _counts(ds: Path) -> dict[str, int]:
    """Rows per table, as a careful reader reads them: only the parts of runs the manifest names."""
    runs = f"(select run_id from read_parquet('{ds}/_files/*.parquet'))"
    out = {}
    if not list(ds.glob("_files/*.parquet")):
        return dict.fromkeys((*TABLES, "_files"), 0)
    for t in TABLES:
        if not list(ds.glob(f"{t}/**/*.parquet")):
            out[t] = 0
            continue
        q = (f"select count(*) from read_parquet('{ds}/{t}/**/*.parquet', hive_partitioning=true, filename=true) "
             f"where regexp_extract(filename, 'part-([0-9a-f]+)[.]parquet', 1) in {runs}")
        out[t] = duckdb.sql(q).fetchall()[0][0]
    out["_files"] = duckdb.sql(f"select count(*) from read_parquet('{ds}/_files/*.parquet')").fetchall()[0][0]
    return out


def _raw_counts(ds: Path) -> dict[str, int]:
    """Rows per table counting every part file on disk (what a naive reader sees)."""
    return {t: duckdb.sql(f"select count(*) from read_parquet('{ds}/{t}/**/*.parquet')").fetchall()[0][0]
            if list(ds.glob(f"{t}/**/*.parquet")) else 0 for t in TABLES}


PI = sorted(p.name for p in SAMPLES.glob("pi*.jsonl"))


def test_two_overlapping_exports_at_once(tmp_path: Path) -> None:
    a = _files(tmp_path, PI[:10], "a")
    b = _files(tmp_path, PI[5:15], "b")  # 5 files in both (same bytes, other paths)
    ds = tmp_path / "ds"
    procs = [_export(str(a), "-o", str(ds)), _export(str(b), "-o", str(ds))]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    clean = tmp_path / "clean"
    p = _export(str(a), str(b), "-o", str(clean))
    assert p.communicate(timeout=300) and p.returncode == 0
    got = _counts(ds)
    assert got == _counts(clean)
    assert got["_files"] == 15
    assert _raw_counts(ds) == {t: got[t] for t in TABLES}
    dup = duckdb.sql(f"select count(*) - count(distinct (content_hash, path_index, n)) "
                     f"from read_parquet('{ds}/requests/**/*.parquet')").fetchall()[0][0]
    assert dup == 0


_KILL_AFTER_TWO_PARTS = (
    "import os, signal, sessiontools.report.dataset as d\n"
    "orig, n = d._write_parquet, [0]\n"
    "def write(frame, path):\n"
    "    orig(frame, path); n[0] += 1\n"
    "    if n[0] == 2: os.kill(os.getpid(), signal.SIGKILL)\n"
    "d._write_parquet = write\n"
)


@pytest.mark.parametrize("first", [True, False], ids=["first-export", "append"])
def test_export_killed_mid_write_then_rerun(tmp_path: Path, first: bool) -> None:
    files = _files(tmp_path, PI[:8], "in")
    ds = tmp_path / "ds"
    if not first:  # an earlier export of other files, then a killed append
        earlier = _files(tmp_path, PI[8:12], "earlier")
        p = _export(str(earlier), "-o", str(ds))
        assert p.communicate(timeout=300) and p.returncode == 0
    before = _counts(ds) if not first else dict.fromkeys((*TABLES, "_files"), 0)
    p = _export(str(files), "-o", str(ds), pre=_KILL_AFTER_TWO_PARTS)
    p.communicate(timeout=300)
    assert p.returncode == -9  # SIGKILL, with two part files on disk and no manifest row for them
    assert _counts(ds) == before  # a reader of the manifest counts nothing of the killed run
    p = _export(str(files), "-o", str(ds))
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert "removed 2 file(s) an interrupted export left" in err
    clean = tmp_path / "clean"
    srcs = [str(files)] + ([] if first else [str(tmp_path / "earlier")])
    p = _export(*srcs, "-o", str(clean))
    assert p.communicate(timeout=300) and p.returncode == 0
    got = _counts(ds)
    assert got == _counts(clean)
    assert _raw_counts(ds) == {t: got[t] for t in TABLES}  # no orphan left either
    inspect = subprocess.run([sys.executable, "-m", "sessiontools", "inspect", *srcs, "--format", "json"],
                             capture_output=True, text=True, timeout=300)
    assert got["_files"] == len(json.loads(inspect.stdout)["sessions"])
