"""`sessiontools export`: the samples as a Parquet dataset, read back by DuckDB and polars with the
counts `inspect` and `estimate-error` report; incremental re-export; the README's queries run."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import duckdb  # in the `test` extra (a missing one fails, it is not skipped)
import pytest

from sessiontools.analysis.dataset import SCHEMA_VERSION, month_of
from sessiontools.analysis.dataset_frames import COLUMNS, FILES_COLUMNS
from sessiontools.cli import main
from tests.conftest import ROOT, SAMPLES

REPLAY = ["--replay-window", "16000", "--replay-reserve", "2000,3000", "--replay-keep", "4000"]


def _export(out: Path, *paths: object, extra: list[str] | None = None) -> int:
    return main(["export", *map(str, paths), "-o", str(out), "--jobs", "1", *(extra or [])])


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ds") / "dataset"
    assert _export(out, SAMPLES, extra=REPLAY) == 0
    return out


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:  # type: ignore[type-arg]
    """inspect and estimate-error JSON over the samples, by file."""
    d = tmp_path_factory.mktemp("reports")
    assert main(["inspect", str(SAMPLES), "--format", "json", "-o", str(d / "i.json"), "--jobs", "1"]) == 0
    main(["estimate-error", str(SAMPLES), "--format", "csv", "-o", str(d / "e.csv"), "--jobs", "1"])
    inspect = {s["path"]: s for s in json.loads((d / "i.json").read_text())["sessions"]}
    import polars as pl

    rows = pl.read_csv(d / "e.csv").filter(pl.col("kind") == "request")  # overflow-error rows are not requests
    ee = {f: {"requests": n} for f, n in rows.group_by("session").len().iter_rows()}
    return inspect, ee


def _q(ds: Path, sql: str) -> list[tuple]:  # type: ignore[type-arg]
    def table(name: str) -> str:
        return f"read_parquet('{ds}/{name}/**/*.parquet', hive_partitioning = true)"
    return duckdb.sql(re.sub(r"\{(\w+)\}", lambda m: table(m.group(1)), sql)).fetchall()


def test_layout_is_hive_partitioned_by_agent_and_month(dataset: Path) -> None:
    meta = json.loads((dataset / "_dataset.json").read_text())
    assert meta["schema_version"] == SCHEMA_VERSION and meta["partitions"] == ["agent", "month"]
    agents = {p.name for p in (dataset / "sessions").iterdir()}
    assert agents == {"agent=pi", "agent=codex", "agent=claude-code"}
    for part in (dataset / "requests").glob("agent=*/month=*/part-*.parquet"):
        assert re.fullmatch(r"month=(\d{4}-\d{2}|unknown)", part.parent.name)
    rows = _q(dataset, "SELECT DISTINCT schema_version FROM {sessions}")
    assert rows == [(SCHEMA_VERSION,)]


def test_counts_match_inspect_and_estimate_error(dataset: Path, reports: tuple[dict, dict]) -> None:  # type: ignore[type-arg]
    inspect, ee = reports
    files = {f for (f,) in _q(dataset, "SELECT DISTINCT file FROM {sessions}")}
    assert files == set(inspect), "every readable sample is exported once"
    req = dict(_q(dataset, "SELECT file, count(*) FROM {requests} GROUP BY file"))
    path0 = {f: (r, c, s) for f, r, c, s in _q(
        dataset, "SELECT file, requests, compactions, skipped_replies FROM {sessions} WHERE path_index = 0")}
    comp = dict(_q(dataset, "SELECT file, count(*) FROM {compactions} GROUP BY file"))
    checked_ee = 0
    for f, s in inspect.items():
        assert path0[f][1] == len(s["compactions"]), f
        assert comp.get(f, 0) == len(s["compactions"]) + len(s["other_branch_compactions"]), f
        skipped = _q(dataset, f"SELECT sum(skipped_replies) FROM {{sessions}} WHERE file = '{f}'")[0][0]
        if not skipped:  # inspect counts Pi's requests by Pi's usage rule (pseudo-replies included)
            assert req.get(f, 0) == s["requests"], f
        if f in ee:
            assert path0[f][0] == ee[f]["requests"], f
            checked_ee += 1
    assert checked_ee >= 15


def test_polars_reads_the_same(dataset: Path) -> None:
    import polars as pl

    lf = pl.scan_parquet(str(dataset / "requests" / "**" / "*.parquet"), hive_partitioning=True)
    got = lf.group_by("agent").agg(pl.len().alias("n")).sort("agent").collect()
    duck = _q(dataset, "SELECT agent, count(*) FROM {requests} GROUP BY agent ORDER BY agent")
    assert [tuple(r) for r in got.iter_rows()] == duck
    assert {"agent", "month", "prompt_tokens", "content_kind"} <= set(lf.collect_schema().names())


def test_request_rows_are_consistent(dataset: Path) -> None:
    bad = _q(dataset, """SELECT count(*) FROM {requests} WHERE prompt_tokens != input_tokens + cache_read_tokens
                         + cache_write_tokens OR chars4_error != chars4_estimate - prompt_tokens
                         OR cjk_share NOT BETWEEN 0 AND 1 OR code_share NOT BETWEEN 0 AND 1""")
    assert bad == [(0,)]
    kinds = {k for (k,) in _q(dataset, "SELECT DISTINCT content_kind FROM {requests}")}
    assert "cjk" in kinds and kinds <= {"cjk", "code", "tool_result", "prose", "empty"}  # pi0-chinese is CJK
    sessions = _q(dataset, """SELECT s.file, s.requests, count(r.n) FROM {sessions} s LEFT JOIN {requests} r
                              ON r.file = s.file AND r.path_index = 0 WHERE s.path_index = 0 GROUP BY ALL""")
    assert all(a == b for _, a, b in sessions)


def test_summaries_and_replay_tables(dataset: Path) -> None:
    n_summ, n_comp = _q(dataset, "SELECT (SELECT count(*) FROM {summaries}), "
                                 "(SELECT count(*) FROM {compactions} WHERE summary_chars > 0)")[0]
    assert n_summ == n_comp > 0
    assert _q(dataset, "SELECT min(sections) FROM {summaries} WHERE summary_format LIKE 'pi-%'")[0][0] >= 1
    runs = _q(dataset, "SELECT DISTINCT agent, reserve_tokens FROM {replay_runs} ORDER BY ALL")
    # every agent's files get replay rows under their own policy (Codex and Claude Code have no reserve)
    assert runs == [("claude-code", 0), ("codex", 0), ("pi", 2000), ("pi", 3000)]
    axes = _q(dataset, "SELECT DISTINCT agent, policy, threshold IS NOT NULL FROM {replay_runs} "
                       "WHERE agent <> 'pi' ORDER BY ALL")
    assert {a for a, _, _ in axes} == {"claude-code", "codex"} and all(t for _, _, t in axes)
    assert _q(dataset, "SELECT count(*) FROM {replay_compactions}")[0][0] > 0


def test_replay_rows_depend_on_their_file_alone(dataset: Path) -> None:
    """Each file's replay rows are that file replayed alone (the default prior, not the run's learnt
    one: appending stays incremental), and `truth_prior_dominated` says which fits leaned on it."""
    from sessiontools.read.sources import load_source
    from sessiontools.replay import replay_records

    rows = _q(dataset, "SELECT DISTINCT file, truth_prior_dominated, truth_ratio_to_chars4 FROM {replay_runs}")
    assert len({f for f, _, _ in rows}) == len(rows), "one fit per file"
    assert {d for _, d, _ in rows} == {True, False}, "the samples hold both kinds"
    for file, dominated, ratio in rows:
        (alone, *_) = replay_records(load_source(Path(file)), windows=[16000], reserves=[2000], keeps=[4000],
                                     policy=None)
        assert (dominated, ratio) == (alone.truth_model.prior_dominated, alone.truth_model.ratio_to_chars4)


def test_reexport_skips_files_already_exported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ds"
    one = SAMPLES / "pi0-threshold-5x.jsonl"
    assert _export(out, one) == 0
    assert _export(out, SAMPLES) == 0
    parts = sorted(out.rglob("*.parquet"))
    capsys.readouterr()
    assert _export(out, SAMPLES) == 0
    assert "nothing new" in capsys.readouterr().err
    assert sorted(out.rglob("*.parquet")) == parts, "a re-export writes nothing"
    hashes = _q(out, "SELECT content_hash, count(*) FROM {_files} GROUP BY ALL HAVING count(*) > 1")
    assert hashes == []
    once = tmp_path / "once"
    assert _export(once, SAMPLES) == 0
    for table in ("sessions", "requests", "compactions", "summaries"):
        q = f"SELECT * EXCLUDE (file) FROM {{{table}}} ORDER BY content_hash, path_index, n" if table != "sessions" \
            else "SELECT * EXCLUDE (file) FROM {sessions} ORDER BY content_hash, path_index"
        assert _q(out, q) == _q(once, q), table


def test_changed_file_is_exported_again_and_foreign_dirs_refused(tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    shutil.copy(SAMPLES / "pi0-tiny.jsonl", src)
    out = tmp_path / "ds"
    assert _export(out, src) == 0
    with open(src, "ab") as fh:
        fh.write((SAMPLES / "pi0-tiny.jsonl").read_bytes().splitlines(keepends=True)[-1])
    assert _export(out, src) == 0
    assert _q(out, "SELECT count(DISTINCT content_hash) FROM {_files}") == [(2,)]
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.txt").write_text("not a dataset")
    assert _export(other, src) == 2


def test_a_touched_file_is_read_and_skipped_a_rewritten_one_exported(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The size+mtime check only decides what to read: a file whose mtime changed but whose bytes did
    not is read (its hash is the one the manifest holds) and skipped, writing nothing; a file rewritten
    with other bytes of the same size, with a new mtime, is exported again; a copy of an exported file
    under another name is read and skipped as already exported."""
    import os

    src, out = tmp_path / "s.jsonl", tmp_path / "ds"
    data = (SAMPLES / "pi0-tiny.jsonl").read_bytes()
    src.write_bytes(data)
    assert _export(out, src) == 0
    parts = sorted(out.rglob("*.parquet"))
    (size, mtime_ns), = _q(out, "SELECT size, mtime_ns FROM {_files}")
    assert (size, mtime_ns) == (len(data), os.stat(src).st_mtime_ns)
    capsys.readouterr()
    os.utime(src, ns=(mtime_ns + 10**9, mtime_ns + 10**9))
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(data)
    assert _export(out, src, copy) == 0
    err = capsys.readouterr().err
    assert "skipped 2 file(s) whose bytes are already in" in err and "nothing new" in err
    assert sorted(out.rglob("*.parquet")) == parts
    i = data.index(b'"text":"') + 8  # one letter of the first text changed: same size, other bytes
    same_size = data[:i] + bytes([data[i] ^ 1]) + data[i + 1:]
    assert len(same_size) == len(data) and same_size != data
    src.write_bytes(same_size)
    os.utime(src, ns=(mtime_ns + 2 * 10**9, mtime_ns + 2 * 10**9))
    assert _export(out, src) == 0
    assert _q(out, "SELECT count(DISTINCT content_hash), count(*) FROM {_files}") == [(2, 2)]


def test_month_of() -> None:
    assert month_of("2026-11-30T22:14:23.000Z") == "2026-11"
    assert month_of(None) == month_of("yesterday") == "unknown"


def test_docs_describe_every_column() -> None:
    from sessiontools.replay.frames import compactions_schema, runs_schema

    doc = (ROOT / "docs" / "dataset.md").read_text(encoding="utf-8")
    names = {c for cols in COLUMNS.values() for c in cols} | set(FILES_COLUMNS)
    names |= (set(runs_schema()) | set(compactions_schema())) - {"session"}
    missing = sorted(n for n in names if f"`{n}`" not in doc)
    assert not missing, f"docs/dataset.md does not describe {missing}"


def test_readme_queries_run_on_the_exported_samples(dataset: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- dataset-queries -->")[1].split("<!-- /dataset-queries -->")[0]
    queries = re.findall(r"```sql\n(.*?)```", block, re.S)
    assert len(queries) == 3
    results = [duckdb.sql(q.replace("DATASET", str(dataset))).fetchall() for q in queries]
    assert all(results)
    early, errors, reserve = results
    assert sum(r[3] for r in early) == _q(dataset, "SELECT sum(threshold_compactions) FROM {replay_runs}")[0][0]
    assert sum(r[2] for r in errors) == _q(dataset, "SELECT count(*) FROM {requests} WHERE prompt_tokens > 0")[0][0]
    assert [r[1] for r in reserve] == [2000, 3000] and reserve[0][-2] == 0


def test_tokenizer_columns_when_asked(tmp_path: Path) -> None:
    one = SAMPLES / "pi0-chinese.jsonl"
    assert _export(tmp_path / "ds", one, extra=["--estimators", "o200k"]) == 0
    rows = _q(tmp_path / "ds", "SELECT count(*), count(o200k_estimate), count(cl100k_estimate), "
                               "min(o200k_estimate) FROM {requests}")
    n, o200k, cl100k, smallest = rows[0]
    assert n > 0 and o200k == n and cl100k == 0 and smallest > 0
    assert main(["export", str(one), "-o", str(tmp_path / "x"), "--estimators", "gpt2"]) == 2


def test_unreadable_file_is_reported_and_the_rest_exported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "locked.jsonl"
    bad.write_bytes((SAMPLES / "pi0-tiny.jsonl").read_bytes())
    bad.chmod(0)
    try:
        readable = bad.open("rb") is not None  # root reads anything: then there is nothing to test
    except OSError:
        readable = False
    if readable:
        bad.chmod(0o644)
        bad.write_bytes(b"\x00\x01 not a session")
    rc = _export(tmp_path / "ds", bad, SAMPLES / "pi0-overflow.jsonl")
    assert rc == 3 and "error:" in capsys.readouterr().err
    assert _q(tmp_path / "ds", "SELECT count(*) FROM {_files}") == [(1,)]


def test_a_dataset_of_an_older_schema_is_refused_with_its_version(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Schema 5 renamed `summaries.pi_sections_absent` to `template_sections_absent`: appending to a
    version-4 dataset would mix the two names, so export refuses it (exit 2) and says why; a new
    dataset is written at this version."""
    old = tmp_path / "v4"
    old.mkdir()
    (old / "_dataset.json").write_text(json.dumps({"schema_version": 4, "tables": [], "partitions": ["agent", "month"]}))
    assert _export(old, SAMPLES / "pi0-tiny.jsonl") == 2
    err = capsys.readouterr().err
    assert "a dataset of schema version 4" in err and f"writes version {SCHEMA_VERSION}" in err and SCHEMA_VERSION == 6
    assert not any(p.is_dir() for p in old.iterdir())  # no table written into it (its lock aside)
    assert json.loads((old / "_dataset.json").read_text())["schema_version"] == 4
    new = tmp_path / "v5"
    assert _export(new, SAMPLES / "pi1-pair-a.jsonl") == 0
    assert "template_sections_absent" in COLUMNS["summaries"] and "pi_sections_absent" not in COLUMNS["summaries"]
