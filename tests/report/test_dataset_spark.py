"""Issue 18: "DuckDB, polars and Spark read it as it is". Spark (pyspark, local mode, in the `test`
extra; Java 17 comes from apt in `.ci/run`) reads every table of the exported samples with its own
partition discovery, with the same rows, columns and per-agent counts as DuckDB, and runs the
README's early-compaction query in Spark SQL. A missing Java fails the test: it is not skipped."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from sessiontools.cli import main
from tests.conftest import SAMPLES

TABLES = ("sessions", "requests", "compactions", "summaries", "replay_runs", "replay_compactions")
REPLAY = ["--replay-window", "16000", "--replay-reserve", "2000,3000", "--replay-keep", "4000"]


@pytest.fixture(scope="module")
def spark():  # type: ignore[no-untyped-def]
    if shutil.which("java") is None:
        pytest.fail("Spark needs Java 17+ on PATH (.ci/run installs openjdk-17-jre-headless)")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[1]").appName("sessiontools-test")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.log.level", "ERROR").config("spark.sql.shuffle.partitions", "1")
               .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ds-spark") / "dataset"
    assert main(["export", str(SAMPLES), "-o", str(out), "--jobs", "1", *REPLAY]) == 0
    return out


def _duck(ds: Path, table: str, sql: str) -> list[tuple]:  # type: ignore[type-arg]
    src = f"read_parquet('{ds}/{table}/**/*.parquet', hive_partitioning = true)"
    return duckdb.sql(sql.replace("{t}", src)).fetchall()


def test_spark_reads_every_table_as_duckdb_does(spark, dataset: Path) -> None:  # type: ignore[no-untyped-def]
    for table in TABLES:
        df = spark.read.parquet(str(dataset / table))
        duck_cols = [d[0] for d in duckdb.sql(
            f"DESCRIBE SELECT * FROM read_parquet('{dataset}/{table}/**/*.parquet', hive_partitioning = true)"
        ).fetchall()]
        assert sorted(df.columns) == sorted(duck_cols), table
        rows = df.collect()  # every value decoded: a type Spark cannot read fails here
        assert len(rows) == _duck(dataset, table, "SELECT count(*) FROM {t}")[0][0] > 0, table
        by_agent = sorted((r["agent"], r["count"]) for r in df.groupBy("agent").count().collect())
        assert by_agent == sorted(_duck(dataset, table, "SELECT agent, count(*) FROM {t} GROUP BY agent")), table


def test_spark_sql_early_compaction_rate(spark, dataset: Path) -> None:  # type: ignore[no-untyped-def]
    spark.read.parquet(str(dataset / "replay_runs")).createOrReplaceTempView("replay_runs")
    got = spark.sql("SELECT model, sum(threshold_compactions) AS n FROM replay_runs GROUP BY model").collect()
    want = _duck(dataset, "replay_runs", "SELECT model, sum(threshold_compactions) FROM {t} GROUP BY model")
    assert sorted((r["model"], r["n"]) for r in got) == sorted(want)
