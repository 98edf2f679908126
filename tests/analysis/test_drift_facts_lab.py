"""Fact retention equals the lab summariser's documented fact rule (lab/summarizer.py, "Facts").

Two checks. (1) A session whose every compaction summary is written by the real lab summariser from
Pi's serialisation of the compaction's span (as the lab server answers Pi), with facts of all four
categories: retained, lost and survival per category equal what the rule predicts, computed here
from the span's messages alone (first sentences, first lines, the caps), never from the summary.
(2) The bundled samples (written by the real Pi against the lab server): every file of every span is
retained, and the workload has no identifiers, constraints or failed tool results to lose.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sessiontools.analysis.drift import diff_summaries
from sessiontools.policies.pi.serialize import format_file_operations, serialize_conversation
from sessiontools.read import load_session
from sessiontools.testing import SessionBuilder

summarizer = pytest.importorskip("lab.summarizer", reason="lab/summarizer.py (the seeded lossy summariser) is absent")

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"

#: chunks of work, one compaction each: (prompts, tool calls with their results and error flags, answer)
CHUNKS: list[dict[str, Any]] = [
    {"prompts": ["Fix ticket #4521 in the parser. You must never push to main. Use version 2.4.1 only.",
                 "Never edit vendor files. Then read the docs at https://example.com/docs/v2 today."],
     "calls": [("read", {"path": "src/parser.py"}, "parser 9fceb02d0ae5 v1\nbody", False),
               ("bash", {"command": "make test"}, "Error: 3 tests failed\nFAILED test_a", True),
               ("bash", {"command": "cat a1"}, "Error: no such file a1", True),
               ("bash", {"command": "cat a2"}, "Error: no such file a2", True),
               ("bash", {"command": "cat a3"}, "Error: no such file a3", True)]},
    {"prompts": ["Add tests for ticket #77 now. Always keep them fast."],
     "calls": [("edit", {"path": "tests/test_parser.py", "oldText": "x", "newText": "y"}, "Successfully replaced", False)]},
    {"prompts": ["Ship the release."],
     "calls": [("bash", {"command": "git tag v9"}, "done", False)]},
]


def _first_sentence(text: str) -> str:
    return summarizer._first_sentence(text)


def build(seed: int) -> SessionBuilder:
    """The session: per chunk its prompts, calls and results; then `next` (first kept) and a compaction whose
    summary the lab summariser writes from Pi's serialisation of the span, with Pi's file lists appended."""
    b = SessionBuilder()
    prev: str | None = None
    span: list[dict[str, Any]] = []
    read: list[str] = []
    modified: list[str] = []

    def add(entry_id: str) -> None:
        span.append(next(e for e in b.entries if e["id"] == entry_id)["message"])

    for chunk in CHUNKS:
        for prompt in chunk["prompts"]:
            add(b.user(prompt))
            calls = chunk["calls"] if prompt == chunk["prompts"][-1] else []
            if calls:
                add(b.assistant(None, tool_calls=[(n, a) for n, a, _, _ in calls]))
                first = b._calls - len(calls) + 1  # noqa: SLF001 - the builder numbers calls call_1, call_2, ...
                for k, (name, args, result, failed) in enumerate(calls):
                    add(b.tool_result(name, result, call_id=f"call_{first + k}", is_error=failed))
                    if name == "read":
                        read.append(args["path"])
                    elif name in ("edit", "write"):
                        modified.append(args["path"])
            add(b.assistant(f"Done with: {prompt[:30]}"))
        user = f"<conversation>\n{serialize_conversation(span, '1')}\n</conversation>\n\n"
        if prev is not None:
            user += f"<previous-summary>\n{prev}\n</previous-summary>\n\n"
        summary = summarizer.summarize("update" if prev else "initial", user, seed)
        summary += format_file_operations(sorted(set(read) - set(modified)), sorted(set(modified)))
        kept = b.user("next")
        b.compaction(summary, kept, 1000)
        span = [next(e for e in b.entries if e["id"] == kept)["message"]]
        prev = summary
    return b


def expected(chunk: dict[str, Any]) -> dict[str, tuple[set[str], set[str]]]:
    """(stated, lost) per category of one span by the rule, from the chunk alone."""
    prompts = chunk["prompts"]
    firsts = [_first_sentence(p) for p in prompts]
    cons = [s.strip() for p in prompts for s in re.split(r"(?<=[.!?])\s+", p)
            if re.search(r"(?i)\b(must|never|always|only|don't|do not)\b", s)]
    ids_user = [(m, p) for p in prompts for m in re.findall(r"#\d+|\b\d+\.\d+\.\d+\b", p)]  # a URL is no id
    results = [(r, failed) for _, _, r, failed in chunk["calls"]]
    errors = [r.split("\n")[0] for r, failed in results if failed]
    ids_results = [m for r, failed in results if not failed for m in re.findall(r"\b[0-9a-f]{12}\b", r)]
    files = [a["path"] for n, a, _, _ in chunk["calls"] if "path" in a]
    stated = {
        "constraints": {c for c in cons if c in firsts},  # only a prompt's first sentence is kept
        "identifiers": {m for m, p in ids_user if m in _first_sentence(p)} | set(ids_results),  # results: first line
        "errors": set(errors[-3:]),  # Blocked keeps the span's last three error lines
        "files": set(files),  # a Done item per call, and Pi's lists
    }
    everything = {"constraints": set(cons), "identifiers": {m for m, _ in ids_user} | set(ids_results),
                  "errors": set(errors), "files": set(files)}
    return {c: (stated[c], everything[c] - stated[c]) for c in everything}


@pytest.mark.parametrize("seed", [1, 42])
def test_retention_equals_the_lab_rule(seed: int) -> None:
    """Per compaction and category, the facts stated and lost are exactly the rule's."""
    c = diff_summaries([build(seed).session()]).chains[0]
    assert len(c.facts.summaries) == len(CHUNKS)
    for x, chunk in zip(c.facts.summaries, CHUNKS, strict=True):
        exp = expected(chunk)
        for cat, r in x.categories.items():
            lost = {f.value for f in r.lost}
            stated_n = r.retained
            assert lost == exp[cat][1], (x.summary.label, cat)
            assert stated_n == len(exp[cat][0]), (x.summary.label, cat)


def test_survival_follows_the_rule() -> None:
    """Goals, the constraints list, Done and Critical Context are carried by every update (well under their
    caps here), so what was stated stays stated; Blocked is rewritten from each new span, so errors go at age 1."""
    c = diff_summaries([build(7).session()]).chains[0]
    counts = c.facts.survival_counts
    # cohorts: S1 (3 constraints, 3 identifiers, 4 errors, 1 file), S2 (1 constraint, 1 identifier, 1 file)
    assert counts["errors"] == ((3, 4), (0, 4), (0, 4))
    assert counts["constraints"] == ((1, 4), (1, 4), (1, 3))  # only "Never edit vendor files." is ever stated
    assert counts["identifiers"] == ((3, 4), (3, 4), (2, 3))  # #4521, the hash, #77 stay; 2.4.1 never (a URL is no id)
    assert counts["files"] == ((2, 2), (2, 2), (1, 1))
    assert c.facts.survival["errors"] == (0.75, 0.0, 0.0) and c.facts.returns == ()


def _sample_paths() -> list[Path]:
    manifest = SAMPLES / "manifest.json"
    if not manifest.is_file():
        return []
    names = json.loads(manifest.read_text(encoding="utf-8"))
    return sorted(p for p in SAMPLES.glob("*.jsonl") if p.stem in names)


@pytest.mark.parametrize("path", _sample_paths(), ids=lambda p: p.name)
def test_samples_retain_every_file_of_the_span(path: Path) -> None:
    """On the bundled samples every file of every span is stated at its compaction; no other category has facts."""
    report = diff_summaries([load_session(path)], all_leaves=True)
    for c in report.chains:
        for x in c.facts.summaries:
            files = x.categories["files"]
            assert files.lost == () and files.retained == files.in_span, (path.name, x.summary.label)
            for cat in ("identifiers", "errors", "constraints"):
                assert x.categories[cat].in_span == 0, (path.name, x.summary.label, cat)


#: Sections the lab summariser writes anew from each span (nothing of the previous summary is carried).
REWRITTEN = ("Progress/In Progress", "Progress/Blocked", "Next Steps")


@pytest.mark.parametrize("path", _sample_paths(), ids=lambda p: p.name)
def test_samples_lose_files_only_where_the_rule_removes_them(path: Path) -> None:
    """A file stated by S(j-1) and not by S(j) (an update) is in neither S(j)'s span nor Pi's lists of S(j), and
    every item of S(j-1) that named it is one the rule removes (seeded Done drop, a cap) or a rewritten section."""
    from sessiontools.analysis.drift.facts import fact_key
    from sessiontools.analysis.drift.retention import _Matcher
    from tests.analysis.test_drift_seeded import _sample_seeds, expected_drops

    seed = _sample_seeds()[path.name]
    report = diff_summaries([load_session(path)], all_leaves=True)
    lost_later = 0
    for c in report.chains:
        matcher = _Matcher([f for f in (x for s in c.facts.summaries for x in s.stated) if f.category == "files"])
        by_pos = {x.summary.position: x for x in c.facts.summaries}
        for d in c.pairs:
            if d.pair.relation != "update":
                continue
            old, new = by_pos[d.pair.old.position], by_pos[d.pair.new.position]
            drops = expected_drops(old.summary.parsed.text, new.summary.parsed.text, seed)
            lists = {fact_key(f) for f in (new.summary.parsed.read_files or ()) + (new.summary.parsed.modified_files or ())}
            for f in {f for f in old.stated if f.category == "files"} - new.stated:
                lost_later += 1
                assert f.key not in lists, (path.name, f.value)
                assert all(f.key != g.key for g in new.categories["files"].lost), (path.name, f.value)
                for it in old.summary.parsed.items:
                    if not matcher.states(f, fact_key(it.text)):
                        continue
                    removed = drops.get(it.section, {}).get(it.text, 0) > 0
                    assert removed or it.section in REWRITTEN or it.section.startswith("Turn Context"), (
                        path.name, f.value, it.section, it.text)
    if path.stem in ("pi0-pair-a", "pi0-threshold-5x", "pi0-chinese"):
        assert lost_later > 0  # these samples do lose files at age >= 1: the check is not vacuous
