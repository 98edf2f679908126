"""Every format version Pi has written reads to the same entries: v1 (linear, no ids), v2
(`hookMessage`), v3, and the 1.x additions."""

from __future__ import annotations

import pytest

from sessiontools.read import detect_pi_version, session_from_records
from sessiontools.testing import SessionBuilder, image_block, text_block
from sessiontools.transcript.pi import SessionTree, build_context


def _linear() -> SessionBuilder:
    b = SessionBuilder()
    b.model_change("anthropic", "claude-sonnet-4-5")
    b.thinking_level("high")
    u1 = b.user("write hello.py")
    b.assistant("reading", tool_calls=[("read", {"path": "hello.py"})], usage=b.usage(1000, cache_read=800))
    b.tool_result("read", "print('hi')")
    b.custom("reminder", "remember the tests")
    b.bash("ls", "hello.py", exclude=True)
    b.compaction("## Goal\nhello", u1, 5000, details={"readFiles": ["hello.py"], "modifiedFiles": []})
    b.user([text_block("look"), image_block()])
    b.assistant("done", usage=b.usage(1500))
    return b


@pytest.mark.parametrize("version", [1, 2, 3])
def test_versions_read_to_the_same_shape(version: int) -> None:
    """Types, roles, links and the compaction's kept entry agree across format versions."""
    b = _linear()
    s = b.session(version)
    assert s.format_version == version
    assert not s.diagnostics
    types = [e.type for e in s.entries]
    assert types == [e["type"] for e in b.entries]
    roles = [e.role for e in s.entries]
    assert roles == [e.get("message", {}).get("role") for e in b.entries]  # hookMessage became custom
    # Parent links form one linear chain.
    for prev, cur in zip(s.entries, s.entries[1:], strict=False):
        assert cur.parent_id == prev.id
    comp = next(e for e in s.entries if e.type == "compaction")
    kept = next(e for e in s.entries if e.id == comp.data["firstKeptEntryId"])
    assert kept.role == "user" and kept.index == 3


def test_v1_ids_are_deterministic_and_name_the_index() -> None:
    """v1 entries get `v1-<index>` ids (header = 0): `firstKeptEntryIndex: 3` becomes `v1-3`."""
    s1 = _linear().session(1)
    s2 = _linear().session(1)
    assert [e.id for e in s1.entries] == [e.id for e in s2.entries] == [f"v1-{i}" for i in range(1, 11)]
    comp = next(e for e in s1.entries if e.type == "compaction")
    assert comp.data["firstKeptEntryId"] == "v1-3" and "firstKeptEntryIndex" not in comp.data


def test_v2_hook_message_becomes_custom() -> None:
    s = _linear().session(2)
    assert "hookMessage" not in {e.role for e in s.entries}
    assert "custom" in {e.role for e in s.entries}


def test_context_is_identical_across_versions() -> None:
    """The messages Pi would send do not depend on the file's format version."""
    contexts = []
    for v in (1, 2, 3):
        s = _linear().session(v)
        ctx = build_context(SessionTree(s).path().entries, "0")
        contexts.append([m for m in ctx.messages])
    assert contexts[0] == contexts[1] == contexts[2]
    roles = [m["role"] for m in contexts[0]]
    # summary, then from the first kept user message on (compaction kept u1).
    assert roles[0] == "compactionSummary"
    assert roles[1:] == ["user", "assistant", "toolResult", "custom", "bashExecution", "user", "assistant"]


def _one_x() -> SessionBuilder:
    b = SessionBuilder()
    b.system("You are Pi.", sections={"tools": "read, bash"}, tools_added=[{"name": "read", "description": "r"}])
    u1 = b.user("task one")
    a1 = b.assistant("thinking about it", usage=b.usage(2000))
    b.user("task two")
    b.assistant("ok", usage=b.usage(2500))
    b.context_edit(a1, {"content": "[elided]"})
    b.compaction("summary", u1, 2600, system_message={"role": "system", "content": "You are Pi.", "timestamp": 0},
                 usage=b.usage(900))
    b.user("three")
    return b


def test_one_x_additions_are_detected_and_projected() -> None:
    """System messages, context edits and compaction systemMessage select the 1.x reading."""
    s = _one_x().session()
    assert detect_pi_version(s.entries) == "1" and s.pi_version == "1"
    ctx = build_context(SessionTree(s).path().entries, "1")
    roles = [m["role"] for m in ctx.messages]
    # systemMessage + summary, then kept entries without the old system message, edits applied.
    assert roles == ["system", "compactionSummary", "user", "assistant", "user", "assistant", "user"]
    edited = ctx.messages[3]
    assert edited["content"] == [{"type": "text", "text": "[elided]"}]


def test_retain_none_compaction_keeps_nothing_before_it() -> None:
    """`firstKeptEntryId` equal to the compaction's own id keeps no earlier entry (1.x)."""
    b = SessionBuilder()
    b.user("a")
    b.assistant("b", usage=b.usage(10))
    b.compaction("all gone", None, 100, retain_none=True)
    b.user("c")
    s = b.session()
    for v in ("0", "1"):
        ctx = build_context(SessionTree(s).path().entries, v)
        assert [m["role"] for m in ctx.messages] == ["compactionSummary", "user"]


def test_branches_labels_and_name() -> None:
    b = SessionBuilder()
    u = b.user("start")
    a = b.assistant("one", usage=b.usage(5))
    b.user("left")
    b.branch(a).user("right")
    b.branch_summary("went left, came back", a)
    b.label(u, "start here")
    b.session_info("  demo session ")
    s = b.session()
    tree = SessionTree(s)
    assert [e.id for e in tree.branch_points] == [a]
    assert len(tree.leaves) == 2 and len(tree.all_paths()) == 2
    assert tree.labels == {u: "start here"}
    assert tree.session_name == "demo session"
    # Pi resumes at the last entry of the file.
    assert tree.path().leaf_id == s.entries[-1].id


def test_unknown_types_are_kept() -> None:
    s = session_from_records([
        {"type": "session", "version": 3, "id": "x", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/"},
        {"type": "hologram", "id": "h", "parentId": None, "timestamp": "2025-01-01T00:00:00Z"},
    ])
    assert s.entries[0].type == "hologram"
    assert any("unknown entry type 'hologram'" in d.reason for d in s.notices)


def test_a_custom_entry_is_on_the_path_but_never_in_the_context() -> None:
    """An extension's `custom` entry (its own state, `SessionBuilder.custom_entry`) is read as an entry
    of its type, while the context Pi sends holds only the messages around it."""
    b = SessionBuilder()
    b.user("start")
    cid = b.custom_entry("todo-state", {"open": 2})
    b.assistant("ok", usage=b.usage(5))
    s = b.session()
    path = SessionTree(s).path().entries
    assert [e.type for e in path] == ["message", "custom", "message"] and path[1].id == cid
    for v in ("0", "1"):
        assert [m["role"] for m in build_context(path, v).messages] == ["user", "assistant"]
