"""`read.parallel.default_jobs` weighs a folder's bytes by its reader's cost per byte (issue 28): for
inspect, one worker per `READ_NS_PER_WORKER` of reading, so the same bytes fork fewer workers for a
cheaper reader; files are sniffed only when the bytes alone ask for more than one worker, and then
only a bounded sample of them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessiontools.analysis.inspect import inspect_source
from sessiontools.read import parallel, sources
from sessiontools.read.agents import Agent
from tests.conftest import SAMPLES


def _copies(src: Path, out: Path, n: int) -> list[Path]:
    out.mkdir()
    files = [out / f"{k:03d}-{src.name}" for k in range(n)]
    for f in files:
        shutil.copyfile(src, f)
    return files


def _reader(agent: Agent) -> sources.Reader:
    return next(r for r in (*sources.READERS, sources.FALLBACK) if r.agent == agent)


def test_every_reader_declares_a_measured_cost() -> None:
    """Each reader says its own cost (none left at the dataclass's placeholder); the costliest weighs
    what is not sniffed."""
    costs = {r.agent: r.read_ns_per_byte for r in (*sources.READERS, sources.FALLBACK)}
    assert set(costs) == set(Agent)
    assert all(c > 0 and c != 1.0 for c in costs.values())
    assert sources.MAX_READ_NS_PER_BYTE == max(costs.values())


def test_a_cheaper_reader_forks_fewer_workers_for_the_same_bytes(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    claude = _copies(SAMPLES / "claude-code" / "claude-2.1.150.jsonl", tmp_path / "claude", 16)
    cost = _reader(Agent.CLAUDE_CODE).read_ns_per_byte
    assert sources.read_ns_per_byte(claude[0]) == cost
    size = claude[0].stat().st_size
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(parallel, "BYTES_PER_WORKER", size)  # the bytes alone: one worker per file
    assert parallel.default_jobs(claude) == 16  # a function that does more than read: the bytes in full
    # inspect: one worker per READ_NS_PER_WORKER of reading, the file's bytes at its reader's cost
    monkeypatch.setattr(parallel, "READ_NS_PER_WORKER", int(size * sources.MAX_READ_NS_PER_BYTE))
    assert parallel.default_jobs(claude, inspect_source) == int(16 * size * cost) // int(
        size * sources.MAX_READ_NS_PER_BYTE)
    monkeypatch.setattr(sources, "read_ns_per_byte", lambda path: cost / 2)  # a reader half as costly
    half = parallel.default_jobs(claude, inspect_source)
    assert half == int(16 * size * cost / 2) // int(size * sources.MAX_READ_NS_PER_BYTE) < 16
    monkeypatch.setattr(sources, "read_ns_per_byte", lambda path: sources.MAX_READ_NS_PER_BYTE)
    assert parallel.default_jobs(claude, inspect_source) == 16 > half


def test_a_function_that_does_more_than_read_is_not_weighed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """estimate-error, replay: their per-byte cost is not the reader's, so no file is sniffed for them."""
    asked: list[str] = []
    monkeypatch.setattr(sources, "read_ns_per_byte", lambda path: asked.append(str(path)) or 1.0)
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(parallel, "BYTES_PER_WORKER", 1)
    files = sorted(SAMPLES.glob("*.jsonl"))
    assert parallel.default_jobs(files, lambda source: None) == 4
    assert asked == []


def test_files_are_sniffed_only_when_the_bytes_ask_for_workers(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    monkeypatch.setattr(sources, "read_ns_per_byte", lambda path: asked.append(str(path)) or 1.0)
    files = sorted(SAMPLES.glob("*.jsonl"))
    assert parallel.default_jobs(files, inspect_source) == 1
    assert asked == []  # small input: no file opened to decide
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(parallel, "BYTES_PER_WORKER", 1)
    monkeypatch.setattr(parallel, "READ_NS_PER_WORKER", 1)
    monkeypatch.setattr(parallel, "SAMPLED_FILES", 4)
    parallel.default_jobs(files, inspect_source)
    assert len(asked) == 4 < len(files)
    largest = max(files, key=lambda f: f.stat().st_size)
    assert str(largest) in asked  # the sample is spread over sizes from the largest down


def test_unreadable_and_url_inputs_weigh_as_the_costliest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert sources.read_ns_per_byte("s3://bucket/a.jsonl") == sources.MAX_READ_NS_PER_BYTE
    assert sources.read_ns_per_byte(tmp_path / "missing.jsonl") == sources.FALLBACK.read_ns_per_byte
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(parallel, "BYTES_PER_WORKER", 1)
    assert parallel.default_jobs([tmp_path / "missing.jsonl", tmp_path / "other.jsonl"], inspect_source) == 1  # no bytes
