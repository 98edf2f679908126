"""fsspec URLs: session files read from `memory://` as from local paths (s3://, gs:// go the same way)."""

from __future__ import annotations

import json
from pathlib import Path

import fsspec  # comes with dask (in the `test` extra)
import pytest

from sessiontools.cli import main
from sessiontools.read.remote import is_url, url_of
from tests.conftest import SAMPLES


@pytest.fixture()
def memory_samples():  # type: ignore[no-untyped-def]
    fs = fsspec.filesystem("memory")
    root = "/st-samples"
    for p in sorted(SAMPLES.rglob("*.jsonl")):
        fs.pipe(f"{root}/{p.relative_to(SAMPLES).as_posix()}", p.read_bytes())
    yield f"memory://{root.lstrip('/')}"
    fs.rm(root, recursive=True)


def test_url_detection() -> None:
    assert url_of("s3://bucket/a.jsonl") == "s3://bucket/a.jsonl"
    assert url_of(Path("memory://x/y.jsonl")) == "memory://x/y.jsonl"  # Typer's Path folded the //
    assert url_of("file:///tmp/a.jsonl") is None and url_of("/tmp/a.jsonl") is None
    assert not is_url(Path("nosuchscheme:/a")) and not is_url("C:/x")


def test_inspect_reads_memory_urls_like_local_files(memory_samples: str, tmp_path: Path) -> None:
    assert main(["inspect", memory_samples, "--format", "json", "-o", str(tmp_path / "m.json"), "--jobs", "1"]) == 0
    assert main(["inspect", str(SAMPLES), "--format", "json", "-o", str(tmp_path / "l.json"), "--jobs", "1"]) == 0
    remote = json.loads((tmp_path / "m.json").read_text())["sessions"]
    local = json.loads((tmp_path / "l.json").read_text())["sessions"]
    assert len(remote) == len(local) > 20
    for r, loc in zip(remote, local, strict=True):
        assert r["path"].startswith("memory://")
        assert r["path"].split("st-samples/")[1] == Path(loc["path"]).relative_to(SAMPLES).as_posix()
        same = {k: v for k, v in r.items() if k != "path"}
        assert json.dumps(same, sort_keys=True).replace(r["path"], "F") == \
            json.dumps({k: v for k, v in loc.items() if k != "path"}, sort_keys=True).replace(loc["path"], "F")


def test_missing_url_is_an_input_error(memory_samples: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", f"{memory_samples}/nope.jsonl"]) == 3
    assert "memory://st-samples/nope.jsonl: no such file" in capsys.readouterr().err


def test_export_from_urls_and_skip_on_reexport(memory_samples: str, tmp_path: Path) -> None:
    assert main(["export", f"{memory_samples}/pi0-*.jsonl", "-o", str(tmp_path / "ds"), "--jobs", "1"]) == 0
    manifest = list((tmp_path / "ds" / "_files").glob("*.parquet"))
    assert len(manifest) == 1
    import polars as pl

    files = pl.read_parquet(manifest[0])["file"].to_list()
    assert len(files) == len(list(SAMPLES.glob("pi0-*.jsonl"))) and all(f.startswith("memory://") for f in files)
    assert main(["export", str(SAMPLES), "-o", str(tmp_path / "ds"), "--jobs", "1"]) == 0
    assert len(list((tmp_path / "ds" / "_files").glob("*.parquet"))) == 2  # only the other files were added
    assert pl.read_parquet(tmp_path / "ds" / "_files").height == len(list(SAMPLES.rglob("*.jsonl")))
