"""Fact retention (issue 19) on hand-built sessions whose facts, spans and summaries are known."""

from __future__ import annotations

import pytest

from sessiontools.analysis.drift import diff_summaries
from sessiontools.analysis.drift.facts import call_files, constraints, fact_key, identifiers
from sessiontools.report.drift import drift_markdown
from sessiontools.report.drift_json import report_to_dict
from sessiontools.testing import SessionBuilder


def test_identifier_patterns() -> None:
    """UUIDs, hashes, #refs, versions and long tokens with digits; plain words, numbers and URLs (issue
    29: on real summaries they were mostly links, not facts of the work) are not ids."""
    text = ("see https://example.com/a/b?x=1. id 123e4567-e89b-12d3-a456-426614174000, commit 9fceb02d0ae5, "
            "issue #288, version v0.27.3 and 1.2.3-beta.1, token sk_live_abc123def456, the year 2024, word abcdef")
    assert identifiers(text) == ["123e4567-e89b-12d3-a456-426614174000", "9fceb02d0ae5",
                                 "#288", "v0.27.3", "1.2.3-beta.1", "sk_live_abc123def456"]


def test_constraint_sentences_in_english_and_chinese() -> None:
    """Sentences with must/never/always/only/don't and 必须/不要/只 are constraints; others are not."""
    text = "Fix the parser. You must keep the API stable! Don't touch tests.\n- only use stdlib\n请修复。必须用中文回答。不要删除文件"
    assert constraints(text) == ["You must keep the API stable!", "Don't touch tests.", "only use stdlib",
                                 "必须用中文回答。", "不要删除文件"]


def test_files_from_tool_arguments_and_commands() -> None:
    """Path keys of tool calls, paths in shell commands and in patches."""
    assert call_files('read{"path":"src/a.py","offset":1}') == ["src/a.py"]
    assert call_files('Read{"file_path":"/repo/docs/x.md"}') == ["/repo/docs/x.md"]
    assert call_files('bash{"command":"pytest tests/test_a.py && cat README.md"}') == ["tests/test_a.py", "README.md"]
    assert call_files('shell{"command":["bash","-lc","ls src/lib/x.ts"]}') == ["src/lib/x.ts"]
    assert call_files('apply_patch{"input":"*** Begin Patch\\n*** Update File: web/app.js\\n@@"}') == ["web/app.js"]
    assert call_files("not json") == []


def _session(summaries: list[str]) -> SessionBuilder:
    """Two compactions: span 1 reads a.py, runs a failing command, user constraints and an id; span 2 edits b.py."""
    b = SessionBuilder()
    b.user("Ship it. You must never push to main. Ticket #4521 is the one.")
    b.assistant(None, tool_calls=[("read", {"path": "src/pkg/a.py"}), ("bash", {"command": "make check"})])
    b.tool_result("read", "def a(): pass", call_id=b.last_call_id())
    b.tool_result("bash", "ERROR: lint failed in src/pkg/a.py\nmore", is_error=True)
    b.assistant("done")
    u2 = b.user("next")
    b.compaction(summaries[0], u2, 1000)
    b.assistant(None, tool_calls=[("edit", {"path": "src/pkg/b.py", "oldText": "x", "newText": "y"})])
    b.tool_result("edit", "ok")
    u3 = b.user("more")
    b.compaction(summaries[1], u3, 2000)
    return b


S1 = ("## Goal\n- Ship it\n\n## Critical Context\n- You must never push to main\n- `a.py` was read\n"
      "- ERROR: lint failed in src/pkg/a.py")
S2 = "## Goal\n- Ship it\n\n## Critical Context\n- edited src/pkg/b.py\n- ticket #4521"


def test_retention_per_compaction_and_decay() -> None:
    """What each summary states of its span, survival by age, and a fact that disappears and returns."""
    r = diff_summaries([_session([S1, S2]).session()])
    c = r.chains[0]
    f1, f2 = c.facts.summaries
    got1 = {k: (v.in_span, v.retained, [x.value for x in v.lost]) for k, v in f1.categories.items()}
    assert got1 == {
        "files": (1, 1, []),  # a.py by its unambiguous basename
        "identifiers": (1, 0, ["#4521"]),
        "errors": (1, 1, []),
        "constraints": (1, 1, []),
    }
    got2 = {k: (v.in_span, v.retained) for k, v in f2.categories.items()}
    assert got2 == {"files": (1, 1), "identifiers": (0, 0), "errors": (0, 0), "constraints": (0, 0)}
    surv = c.facts.survival
    assert surv["files"] == (1.0, 0.0)  # cohort 1 (a.py) is not stated by S2; b.py only reaches age 0
    assert surv["constraints"] == (1.0, 0.0) and surv["identifiers"] == (0.0, 1.0)
    m = r.metrics()
    assert (m["retention.files"], m["retention.identifiers"], m["retention.errors"], m["lost_facts"]) == (1.0, 0.0, 1.0, 1)
    assert m["retention.constraints"] == 1.0
    j = report_to_dict(r)["chains"][0]
    assert j["summaries"][0]["facts"]["identifiers"] == {"in_span": 1, "retained": 0, "retention": 0.0, "lost": ["#4521"]}
    assert j["fact_survival"]["files"] == [1.0, 0.0]
    md = drift_markdown(r)
    assert "Fact retention" in md and "#4521" in md


def test_fact_that_disappears_and_returns() -> None:
    """A fact stated by S1, not by S2, stated again by S3 is a return."""
    b = _session([S1, S2])
    u4 = b.user("again")
    b.compaction(S1, u4, 3000)
    c = diff_summaries([b.session()]).chains[0]
    back = {(x.fact.category, x.fact.value, x.lost_in.label, x.back_in.label) for x in c.facts.returns}
    assert ("constraints", "You must never push to main.", "S2", "S3") in back


def test_ambiguous_basename_is_not_enough() -> None:
    """Two paths with one basename: only the full path states either."""
    b = SessionBuilder()
    b.user("go")
    b.assistant(None, tool_calls=[("read", {"path": "a/util.py"}), ("read", {"path": "b/util.py"})])
    b.tool_result("read", "x", call_id=b.last_call_id())
    u = b.user("next")
    b.compaction("## Goal\n- read util.py and b/util.py", u, 1000)
    f = diff_summaries([b.session()]).chains[0].facts.summaries[0].categories["files"]
    assert (f.in_span, f.retained, [x.value for x in f.lost]) == (2, 1, ["a/util.py"])


@pytest.mark.parametrize("a,b", [("Don't  touch `x`.", "don't touch x"), ("**Must** do", "must do")])
def test_fact_key_normalises(a: str, b: str) -> None:
    """Case, whitespace, backticks, bold and trailing punctuation do not matter."""
    assert fact_key(a) == b
