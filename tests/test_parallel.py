"""`parallel.map_sessions` in processes: file order kept, largest files started first, same results as one process."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from sessiontools.analysis.inspect import inspect_source
from sessiontools.read import parallel
from tests.conftest import SAMPLES


def test_largest_first_orders_by_size_then_file_order(tmp_path: Path) -> None:
    sizes = [3, 10, 3, 0, 7]
    files = []
    for i, n in enumerate(sizes):
        f = tmp_path / f"{i}.jsonl"
        f.write_bytes(b"x" * n)
        files.append(str(f))
    files.append(str(tmp_path / "missing.jsonl"))  # counted as empty, not an error here
    assert parallel.largest_first(files) == [1, 4, 0, 2, 3, 5]


def test_two_processes_give_the_results_of_one_in_file_order() -> None:
    files = sorted(str(p) for p in SAMPLES.glob("*.jsonl"))
    assert len(files) > 2
    fn = partial(inspect_source)
    one = list(parallel.map_sessions(files, fn, jobs=1))
    two = list(parallel.map_sessions(files, fn, jobs=2))
    assert [r.path for r in two] == files
    assert [(r.value, r.readable, r.error, r.agent) for r in two] == [(r.value, r.readable, r.error, r.agent) for r in one]


def test_a_failing_file_stops_the_pool_and_raises_in_the_parent(tmp_path: Path) -> None:
    import pytest

    from sessiontools.errors import UsageError

    files = sorted(str(p) for p in SAMPLES.glob("*.jsonl"))
    with pytest.raises(UsageError):
        list(parallel.map_sessions(files, partial(inspect_source, leaf="no-such-leaf"), jobs=2))
