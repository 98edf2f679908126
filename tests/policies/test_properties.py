"""Properties of the compaction port on generated sessions of every format (both Pi versions):
a cut never lands on a tool result; what is summarised, the turn prefix and what is kept are
exactly the messages after the boundary; file lists only grow across compactions."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontools.policies.pi import CompactionSettings, Preparation, prepare_compaction
from sessiontools.read import Entry, session_from_records
from sessiontools.testing import SessionBuilder
from sessiontools.transcript.pi import SessionTree, build_context
from tests.parity.strategies import session_files

KEEPS = st.sampled_from([1, 50, 500, 2000, 20000])
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


def _path(records: list[dict]) -> tuple[Entry, ...]:
    return SessionTree(session_from_records(records)).path().entries


@SETTINGS
@given(session_files(quirks=False), KEEPS, st.sampled_from(["0", "1"]), st.data())
def test_cut_never_lands_on_a_tool_result(records, keep, version, data) -> None:  # type: ignore[no-untyped-def]
    """The first kept entry is never a tool result (it must stay after its tool call)."""
    path = _path(records)
    if not path:
        return
    at = data.draw(st.integers(0, len(path) - 1))
    prep = prepare_compaction(path[: at + 1], CompactionSettings(True, 16384, keep), version)
    if isinstance(prep, Preparation):
        assert path[prep.first_kept_index].role != "toolResult"
        if prep.is_split_turn:
            # (0.x calls a cut at a branch summary or custom message a split turn starting at itself.)
            assert prep.turn_start_index is not None and prep.turn_start_index <= prep.first_kept_index


@SETTINGS
@given(session_files(quirks=False), KEEPS, st.sampled_from(["0", "1"]), st.data())
def test_summarised_prefix_and_kept_partition_the_context(records, keep, version, data) -> None:  # type: ignore[no-untyped-def]
    """messages_to_summarize + turn_prefix_messages + the kept messages are the context's
    messages after the previous summary, in order (1.x: system messages aside)."""
    path = _path(records)
    if not path:
        return
    at = data.draw(st.integers(0, len(path) - 1))
    prefix = path[: at + 1]
    prep = prepare_compaction(prefix, CompactionSettings(True, 16384, keep), version)
    if not isinstance(prep, Preparation):
        return
    ctx = build_context(prefix, version)
    drop = "system" if version == "1" else None  # 1.x leaves system messages to the compaction's checkpoint
    after_boundary = [m for pe in ctx.entries if pe.source.type != "compaction" for m in pe.messages
                      if m.get("role") != drop]
    first_kept = prefix[prep.first_kept_index]
    kept_from = next(k for k, pe in enumerate(ctx.entries) if pe.source is first_kept)
    kept = [m for pe in ctx.entries[kept_from:] for m in pe.messages if m.get("role") != drop]

    def key(ms):  # type: ignore[no-untyped-def]
        # 0.x summarises a branch summary with an empty text, which its context leaves out.
        return [(m.get("role"), m.get("content"), m.get("summary")) for m in ms
                if not (m.get("role") == "branchSummary" and not m.get("summary"))]

    assert key([*prep.messages_to_summarize, *prep.turn_prefix_messages, *kept]) == key(after_boundary)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(["read", "write", "edit", "bash"]), st.integers(0, 7)), min_size=4,
                max_size=40), st.sampled_from(["0", "1"]), st.integers(1, 4))
def test_file_lists_only_grow_across_compactions(calls, version, every) -> None:  # type: ignore[no-untyped-def]
    """Compacting repeatedly (each compaction recording its file lists as Pi does) never loses a file."""
    b = SessionBuilder()
    seen: set[str] = set()
    previous: set[str] = set()
    for k, (tool, n) in enumerate(calls):
        b.user(f"step {k}")
        path_arg = {"path": f"src/f{n}.py"} if tool != "bash" else {"command": "ls"}
        b.assistant("working", tool_calls=[(tool, path_arg)], usage=b.usage(1000 + 100 * k))
        b.tool_result(tool, "x" * 300)
        b.assistant("done", usage=b.usage(1100 + 100 * k))
        if tool != "bash":
            seen.add(path_arg["path"])
        if k % every == every - 1:
            path = SessionTree(b.session()).path().entries
            prep = prepare_compaction(path, CompactionSettings(True, 16384, 200), version)
            if isinstance(prep, Preparation):
                files = set(prep.read_files) | set(prep.modified_files)
                assert files >= previous
                assert set(prep.read_files).isdisjoint(prep.modified_files)
                previous = files
                b.compaction("summary", prep.first_kept_entry_id, prep.tokens_before,
                             details={"readFiles": prep.read_files, "modifiedFiles": prep.modified_files})
    assert previous <= seen
