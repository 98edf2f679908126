"""The neutral Pi transcript's request contexts (`_PathBuilder.requests`) read each generation's
rebuilt projection once and the entries after it as one run of messages (`iter_request_generations`).
They must be what walking every projected entry of `iter_request_projections` gives, the way the
transcript built them before (the reference below), on generated sessions of every format, both
rule sets, and on the bundled samples and a bench session."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontools.read import session_from_records
from sessiontools.read.pi import Session, load_session, read_bytes
from sessiontools.transcript.model import merge_ranges
from sessiontools.transcript.pi import SessionTree
from sessiontools.transcript.pi.incremental import iter_request_projections
from sessiontools.transcript.pi.neutral import path_transcript
from sessiontools.transcript.pi.tree import Path
from tests.conftest import SAMPLES
from tests.parity.strategies import session_files


def bench_session() -> Session:
    """A session of the bench corpus's generator (`bench.corpus`: ~300 requests of plain JSON usage)."""
    from bench.corpus import session

    return read_bytes(session(random.Random(49), 49, 2_000_000))


def reference_contexts(path: Path, version: str) -> list[tuple[tuple[int, int], ...]]:
    """Each request's context ranges, from every projected entry: its projected messages are its first
    own messages (the transcript's message of entry e's k-th own message is `slot(e, k)`)."""
    t = path_transcript(path, version)
    first: dict[int, int] = {}
    count: dict[int, int] = {}
    for m, pos in enumerate(t.native.of_message):
        first.setdefault(pos, m)
        count[pos] = count.get(pos, 0) + 1
    where = {id(e): pos for pos, e in enumerate(path.entries)}
    positions = [t.native.of_message[r.index] for r in t.requests]
    out = []
    for _, projected, _, _ in iter_request_projections(path.entries, positions, version):
        spans = []
        for pe in projected:
            pos = where[id(pe.source)]
            n = min(len(pe.messages), count.get(pos, 0))
            spans.append((first.get(pos, 0), first.get(pos, 0) + n))
        out.append(merge_ranges(spans))
    return out


def assert_same_contexts(path: Path, version: str) -> int:
    got = [r.context for r in path_transcript(path, version).requests]
    assert got == reference_contexts(path, version)
    return len(got)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(session_files(), st.sampled_from(["0", "1"]))
def test_request_contexts_equal_the_projection_walk(records, version) -> None:  # type: ignore[no-untyped-def]
    tree = SessionTree(session_from_records(records))
    for p in tree.all_paths():
        assert_same_contexts(p, version)


def test_request_contexts_on_samples_and_a_bench_session() -> None:
    sessions = [load_session(f) for f in sorted(SAMPLES.glob("*.jsonl"))] + [bench_session()]
    checked = 0
    for s in sessions:
        tree = SessionTree(s)
        for p in tree.all_paths():
            for version in ("0", "1"):
                checked += assert_same_contexts(p, version)
    assert checked > 400
