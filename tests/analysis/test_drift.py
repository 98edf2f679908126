"""Summary drift on hand-built summaries and chains whose drops, changes and returns are known."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontools.analysis.drift import (
    BRANCH_SECTIONS,
    DONE,
    GOAL,
    IN_PROGRESS,
    METRICS,
    NEXT_STEPS,
    TEMPLATE_SECTIONS,
    TURN_CONTEXT,
    TURN_PROGRESS,
    TURN_REQUEST,
    diff_summaries,
    extract_literals,
    match_items,
    parse_summary,
    summary_chain,
    summary_pairs,
    token_counter,
)
from sessiontools.errors import UsageError
from sessiontools.report.drift import decay_figure, drift_markdown, drift_renderables
from sessiontools.report.drift_json import gate_results, report_to_dict
from sessiontools.report.gates import parse_gates
from sessiontools.report.writers import dumps_json
from sessiontools.testing import SessionBuilder
from sessiontools.transcript.pi.neutral import pi_transcript


def pi_summary(
    goal: list[str],
    done: list[str],
    *,
    in_progress: list[str] = (),  # type: ignore[assignment]
    decisions: list[str] = (),  # type: ignore[assignment]
    next_steps: list[str] = (),  # type: ignore[assignment]
    context: list[str] = (),  # type: ignore[assignment]
    read: list[str] = (),  # type: ignore[assignment]
    modified: list[str] = (),  # type: ignore[assignment]
    constraints: list[str] = (),  # type: ignore[assignment]
) -> str:
    """A summary in Pi's six-section format, with Pi's file lists appended."""
    parts = ["## Goal", *[f"- {g}" for g in goal], "", "## Constraints & Preferences"]
    parts += [f"- {c}" for c in constraints] or ["- (none)"]
    parts += ["", "## Progress", "### Done", *[f"- [x] {d}" for d in done], "", "### In Progress"]
    parts += [f"- [ ] {t}" for t in in_progress] or ["- [ ] (none)"]
    parts += ["", "### Blocked", "- (none)", "", "## Key Decisions"]
    parts += [f"- **{d}**: because" for d in decisions] or ["- **(none)**: no decisions"]
    parts += ["", "## Next Steps", *[f"{i}. {s}" for i, s in enumerate(next_steps, 1)], "", "## Critical Context"]
    parts += [f"- {c}" for c in context] or ["- (none)"]
    text = "\n".join(parts)
    blocks = []
    if read:
        blocks.append("<read-files>\n" + "\n".join(read) + "\n</read-files>")
    if modified:
        blocks.append("<modified-files>\n" + "\n".join(modified) + "\n</modified-files>")
    return text + ("\n\n" + "\n\n".join(blocks) if blocks else "")


def chain_session(*summaries: str):  # type: ignore[no-untyped-def]
    """A linear session with one prompt, answer and compaction per summary."""
    b = SessionBuilder()
    for k, s in enumerate(summaries):
        u = b.user(f"prompt {k}")
        b.assistant(f"answer {k}")
        b.compaction(s, u, 1000 * (k + 1))
    return b.session()


def changes(report, pair: int = 0) -> dict[str, list]:  # type: ignore[no-untyped-def]
    d = report.chains[0].pairs[pair]
    out: dict[str, list] = {}
    for c in d.changes:
        out.setdefault(c.kind, []).append(c)
    return out


# --------------------------------------------------------------------------- parsing


def test_pi_format_is_parsed_into_its_sections() -> None:
    """A six-section summary has every Pi section, strictly named, with its items and no placeholders."""
    p = parse_summary(pi_summary(["Ship `v2`"], ["Read `src/a.py`", "Wrote tests"], next_steps=["Release"]))
    assert list(p.sections) == list(TEMPLATE_SECTIONS)
    assert p.format == "pi" and p.sections_missing == [] and p.compliance == 1.0
    assert [i.text for i in p.sections[DONE]] == ["Read `src/a.py`", "Wrote tests"]
    assert p.sections[IN_PROGRESS] == ()  # "(none)" is a placeholder, not an item
    assert all(i.checked for i in p.sections[DONE])
    assert [i.text for i in p.sections[NEXT_STEPS]] == ["Release"]


@pytest.mark.parametrize(
    ("headings", "fmt"),
    [
        (("Original Request", "Early Progress", "Context for Suffix"), "0.x"),
        (("Original Request", "Progress So Far", "Context Needed to Continue"), "1.x"),
    ],
)
def test_turn_prefix_formats_of_both_pi_releases(headings: tuple[str, str, str], fmt: str) -> None:
    """The split-turn part after Pi's marker is parsed under Turn Context/ with 0.x names mapped to 1.x names."""
    prefix = f"## {headings[0]}\nFix the parser.\n\n## {headings[1]}\n- Read `p.py`\n\n## {headings[2]}\n- It uses `lex()`"
    text = pi_summary(["Fix it"], ["a"]) + "\n\n---\n\n**Turn Context (split turn):**\n\n" + prefix
    text += "\n\n<read-files>\np.py\n</read-files>"
    p = parse_summary(text)
    assert p.split_turn and p.turn_prefix_format == fmt
    assert [i.text for i in p.sections[TURN_REQUEST]] == ["Fix the parser."]
    assert [i.text for i in p.sections[TURN_PROGRESS]] == ["Read `p.py`"]
    assert [i.text for i in p.sections[TURN_CONTEXT]] == ["It uses `lex()`"]
    assert p.read_files == ("p.py",) and p.modified_files is None
    assert p.format == "pi"


def test_file_lists_take_the_last_blocks() -> None:
    """When a summary embeds an older summary with its own file lists (1.x, split turn without new history), the last lists count."""
    old = pi_summary(["g"], ["a"], read=["old.py"])
    text = old + "\n\n---\n\n**Turn Context (split turn):**\n\n## Original Request\nx\n\n<read-files>\nnew.py\nold.py\n</read-files>"
    p = parse_summary(text)
    assert p.read_files == ("new.py", "old.py")
    assert [i.text for i in p.sections[DONE]] == ["a"]


def test_free_form_summary_falls_back_to_mapped_headings() -> None:
    """An older free-form summary: the lone H1 is a title, headings map to Pi sections by keyword, tables and code are items."""
    text = (
        "# Context Checkpoint: Refactoring\n\n## Branch\n`refactor`\n\n## Goal\nRefactor `coding-agent`.\n\n"
        "## Key Decisions Made\n1. **Keep old code** - for reference\n\n## Completed Work Packages (WP1-WP2)\n\n"
        "| WP | Description | Status |\n|----|-------------|--------|\n| WP1 | bash-executor.ts | done |\n"
        "| WP2 | AgentSession | done |\n\n## Next Steps (WP3)\n\n### WP3: Create main-new.ts (NEXT)\n- Copy `main.ts`\n\n"
        "## API\n```ts\nclass A {}\n```\n\n## User Preferences\n- **E2E tests only**\n\n**New files:**\n- `x.ts`\n"
    )
    p = parse_summary(text)
    assert p.title == "Context Checkpoint: Refactoring"
    assert list(p.sections) == ["Branch", "Goal", "Key Decisions", DONE, NEXT_STEPS, "API", "Constraints & Preferences"]
    assert [i.text for i in p.sections[DONE]] == ["WP1 | bash-executor.ts | done", "WP2 | AgentSession | done"]
    assert [i.text for i in p.sections[NEXT_STEPS]] == ["Copy `main.ts`"]  # the WP3 sub-heading rolls up
    assert [i.text for i in p.sections["API"]] == ["class A {}"]
    assert [i.text for i in p.sections["Constraints & Preferences"]] == ["**E2E tests only**", "`x.ts`"]
    assert p.format == "partial" and "Progress" in p.sections_missing and GOAL not in p.sections_missing


def test_text_without_headings_is_one_untitled_section() -> None:
    """Plain prose becomes paragraphs of the (untitled) section; Pi's 'No prior history.' is a placeholder."""
    p = parse_summary("We fixed the bug in `a.py`.\nIt was an off-by-one.\n\nNext we test.")
    assert [i.text for i in p.sections["(untitled)"]] == ["We fixed the bug in `a.py`. It was an off-by-one.", "Next we test."]
    assert p.format == "free-form"
    assert parse_summary("No prior history.").items == []


def test_branch_summary_preamble_and_expected_sections() -> None:
    """A branch summary loses Pi's preamble and is held to the five branch sections (no Critical Context)."""
    body = pi_summary(["g"], ["a"]).split("\n## Critical Context")[0]
    p = parse_summary("The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n" + body,
                      "branch_summary")
    assert p.expected_sections == BRANCH_SECTIONS
    assert p.format == "pi" and "(untitled)" not in p.sections


def test_literals_by_kind() -> None:
    """Paths, backtick identifiers, numbers of two or more digits, versions, quoted strings and error messages are literals."""
    lits = extract_literals(
        'Edited src/core/app.py and `parse_line()`; 885 lines, v0.27.3, issue #288, 3 files.\n'
        'Saw "connection refused by host" and TypeError: x is undefined; read/write is not a path.'
    )
    assert lits == {
        "parse_line()": "code",
        "connection refused by host": "quoted",
        "TypeError: x is undefined; read/write is not a path": "error",
        "src/core/app.py": "path",
        "885": "number",
        "v0.27.3": "number",
        "#288": "number",
    }


# --------------------------------------------------------------------------- pairs with known changes


def test_known_drop_add_change_move_and_literal_loss() -> None:
    """S1 -> S2 with one item of each kind: the report names exactly those items."""
    s1 = pi_summary(
        ["Speed up the parser in `src/parse.py`"],
        ["Read `src/parse.py`", "Profiled the lexer: 120 ms per file", "Wrote `bench.py`"],
        in_progress=["Rewrite `tokenize()` with a table"],
        next_steps=["Benchmark again"],
        context=["Baseline is 1450 ms on `big.jsonl`"],
        read=["src/parse.py"],
        modified=["bench.py"],
    )
    s2 = pi_summary(
        ["Speed up the parser in `src/parse.py` and the lexer"],
        ["Read `src/parse.py`", "Profiled the lexer: 120 ms per file, mostly in regex", "Rewrite `tokenize()` with a table",
         "Added a cache"],
        next_steps=["Benchmark again"],
        read=[],
        modified=["src/parse.py"],
    )
    r = diff_summaries([chain_session(s1, s2)])
    ch = changes(r)
    assert [(c.old.section, c.old.text) for c in ch["dropped"]] == [
        (DONE, "Wrote `bench.py`"),
        ("Critical Context", "Baseline is 1450 ms on `big.jsonl`"),
    ]
    assert [(c.new.section, c.new.text) for c in ch["added"]] == [(DONE, "Added a cache")]
    assert [(c.old.text, c.new.text) for c in ch["changed"]] == [
        ("Speed up the parser in `src/parse.py`", "Speed up the parser in `src/parse.py` and the lexer"),
        ("Profiled the lexer: 120 ms per file", "Profiled the lexer: 120 ms per file, mostly in regex"),
    ]
    assert [(c.old.section, c.new.section) for c in ch["moved"]] == [(IN_PROGRESS, DONE)]
    assert len(ch["kept"]) == 2
    d = r.chains[0].pairs[0]
    assert {v for v, _ in d.literals_dropped} == {"bench.py", "1450", "big.jsonl"}
    assert [v.file for v in d.file_list_violations] == ["bench.py"]  # modified before, gone now; parse.py moved up
    assert 0 < d.goal_similarity < 1
    j = report_to_dict(r)["chains"][0]["pairs"][0]
    assert j["items"] == {"kept": 2, "dropped": 2, "added": 1, "changed": 2, "moved": 1}
    assert j["by_section"][DONE] == {"kept": 1, "dropped": 1, "added": 1, "changed": 1, "moved": 0}
    assert j["by_section"][IN_PROGRESS]["moved"] == 1
    assert j["items_detail"]["dropped"][0] == {"section": DONE, "text": "Wrote `bench.py`"}


def test_duplicates_are_matched_as_a_multiset() -> None:
    """One of two identical Done items dropped is one drop, and its surviving twin is not a later 'return'."""
    s1 = pi_summary(["g"], ["Read `a.py`", "Read `b.py`", "Read `a.py`"])
    s2 = pi_summary(["g"], ["Read `a.py`", "Read `b.py`"])
    s3 = pi_summary(["g"], ["Read `a.py`", "Read `b.py`", "Read `a.py`"])
    r = diff_summaries([chain_session(s1, s2, s3)])
    assert [c.old.text for c in changes(r, 0)["dropped"]] == ["Read `a.py`"]
    assert r.chains[0].resurrections == ()


def test_different_literals_are_never_one_changed_item() -> None:
    """'Read `a.py`' -> 'Read `b.py`' and 'Task 3' -> 'Task 9' are a drop and an add, not a change."""
    s1 = pi_summary(["g"], ["Read `a.py`", "Finished: Task 3: give an overview of the workspace layout"])
    s2 = pi_summary(["g"], ["Read `b.py`", "Finished: Task 9: give an overview of the workspace layout"])
    r = diff_summaries([chain_session(s1, s2)])
    ch = changes(r)
    assert "changed" not in ch and "moved" not in ch
    assert len(ch["dropped"]) == 2 and len(ch["added"]) == 2


def test_resurrections_returned_and_reopened() -> None:
    """An item dropped in S2 and back in S3 is 'returned'; a Done item that reappears in Next Steps is 'reopened'."""
    s1 = pi_summary(["g"], ["Fixed the flaky `test_io` test", "Updated the changelog"])
    s2 = pi_summary(["g"], ["Updated the changelog"])
    s3 = pi_summary(["g"], ["Fixed the flaky `test_io` test", "Updated the changelog"])
    s4 = pi_summary(["g"], ["Fixed the flaky `test_io` test"], next_steps=["Updated the changelog"])
    r = diff_summaries([chain_session(s1, s2, s3, s4)])
    res = [(x.kind, x.item.text, x.dropped_in.position if x.dropped_in else None, x.back_in.position, x.back_item.section)
           for x in r.chains[0].resurrections]
    assert res == [
        ("returned", "Fixed the flaky `test_io` test", 2, 3, DONE),
        ("reopened", "Updated the changelog", None, 4, NEXT_STEPS),
    ]
    assert r.metrics()["resurrections"] == 2


def test_decay_curve_of_the_first_summary() -> None:
    """S1 has four items; two survive into S2 and one into S3: its decay curve is 0.5 then 0.25."""
    s1 = pi_summary(["Goal one"], ["Step alpha done", "Step beta done", "Step gamma done"])
    s2 = pi_summary(["Goal one"], ["Step alpha done"])
    s3 = pi_summary(["Other goal entirely"], ["Step alpha done"])
    r = diff_summaries([chain_session(s1, s2, s3)])
    d1 = r.chains[0].decay[0]
    assert [(p.summary.position, p.items_retained) for p in d1.points] == [(2, 0.5), (3, 0.25)]
    assert [p.summary.position for p in r.chains[0].decay[1].points] == [3]
    assert r.chains[0].decay[2].points == ()


def test_growth_and_tokens() -> None:
    """growth_tokens is the token difference of the two summaries; the metric is the largest growth."""
    s1 = pi_summary(["g"], ["a"])
    s2 = pi_summary(["g"], ["a", "b " * 100])
    r = diff_summaries([chain_session(s1, s2, s1)], counter=token_counter("chars4"))
    c = r.chains[0]
    g = [d.growth_tokens for d in c.pairs]
    assert g[0] == c.chain[1].tokens - c.chain[0].tokens > 0 and g[1] == -g[0]
    assert r.metrics()["growth_tokens"] == g[0]


# --------------------------------------------------------------------------- chains and branches


def test_branch_summaries_are_absorbed_not_compared_as_updates() -> None:
    """C1, B1, C2 on a path: pairs are C1->C2 (update) and B1->C2 (absorbed); the branch summary is never a 'to'."""
    b = SessionBuilder()
    u1 = b.user("one")
    b.assistant("a")
    c1 = b.compaction(pi_summary(["g"], ["first"]), u1, 1000)
    fork = b.user("two")
    b.assistant("b")
    b.user("abandoned")
    b.branch(fork)
    bs = b.branch_summary("## Goal\n- explore\n\n## Progress\n### Done\n- [x] tried a thing", fork)
    u3 = b.user("three")
    b.assistant("c")
    c2 = b.compaction(pi_summary(["g"], ["first", "second"]), u3, 2000)
    s = b.session()
    chain = summary_chain(pi_transcript(s).paths[0])
    assert [(x.entry_id, x.kind, x.previous_summary_id) for x in chain] == [
        (c1, "compaction", None), (bs, "branch_summary", None), (c2, "compaction", c1)]
    assert [(p.old.entry_id, p.new.entry_id, p.relation) for p in summary_pairs(chain)] == [
        (c1, c2, "update"), (bs, c2, "absorbed")]
    from rich.console import Console

    con = Console(record=True, width=200, color_system=None)
    for x in drift_renderables(diff_summaries([s])):
        con.print(x)
    out = con.export_text()
    assert "S1→S3" in out and "S2→S3" in out and "absorbed" in out
    assert "S3" in out.split("decay on")[1]  # the decay table has a column for the last compaction
    r = diff_summaries([s], all_leaves=True)
    assert len(r.chains) == 2  # the abandoned branch and the current one
    abandoned = next(c for c in r.chains if len(c.chain) == 1)
    assert abandoned.pairs == ()


def test_branch_summary_kept_after_the_cut_is_not_absorbed() -> None:
    """A branch summary after the compaction's first kept entry is still in context, so it is not paired."""
    b = SessionBuilder()
    u1 = b.user("one")
    c1 = b.compaction(pi_summary(["g"], ["first"]), u1, 1000)
    fork = b.user("two")
    b.user("abandoned")
    b.branch(fork)
    b.branch_summary("## Goal\n- explore", fork)
    b.user("three")
    b.compaction(pi_summary(["g"], ["first"]), fork, 2000)  # keeps from `fork`, before the branch summary
    r = diff_summaries([b.session()])
    assert [(p.pair.old.entry_id, p.pair.relation) for p in r.chains[0].pairs] == [(c1, "update")]


def test_no_summaries_and_one_summary() -> None:
    """A path without summaries or with one yields an empty chain or no pairs, and zero-valued metrics."""
    b = SessionBuilder()
    b.user("hi")
    b.assistant("hello")
    r = diff_summaries([b.session()])
    assert r.chains[0].chain == () and r.metrics()["pairs"] == 0 and r.metrics()["growth_tokens"] == 0
    r1 = diff_summaries([chain_session(pi_summary(["g"], ["a"]))])
    assert len(r1.chains[0].chain) == 1 and r1.chains[0].pairs == ()


# --------------------------------------------------------------------------- gates, JSON, rendering


def test_gates_parse_and_trip() -> None:
    """Gates compare a metric with a number; unknown metrics and bad syntax are usage errors."""
    gates = parse_gates([" dropped_items >= 2 ", "dropped_items!=2", "min_goal_similarity<0.75"], METRICS)
    res = gate_results({"dropped_items": 2, "min_goal_similarity": 0.5}, gates)
    assert (res[0]["metric"], res[0]["op"], res[0]["threshold"], res[0]["expression"]) == (
        "dropped_items", ">=", 2, "dropped_items>=2")
    assert [x["tripped"] for x in res] == [True, False, True]
    with pytest.raises(UsageError, match="unknown metric 'dropped_stuff'"):
        parse_gates(["dropped_stuff>0"], METRICS)
    with pytest.raises(UsageError, match="expected METRIC OP NUMBER"):
        parse_gates(["dropped_items => 1"], METRICS)


def test_json_is_deterministic_and_has_the_documented_keys() -> None:
    """Two runs give byte-identical JSON with the issue's keys (counts as integers, details as lists)."""
    s = chain_session(pi_summary(["g"], ["a", "b"], read=["x.py"]), pi_summary(["g"], ["a", "c"]))
    a = dumps_json(report_to_dict(diff_summaries([s])))
    b = dumps_json(report_to_dict(diff_summaries([chain_session(pi_summary(["g"], ["a", "b"], read=["x.py"]),
                                                                pi_summary(["g"], ["a", "c"]))])))
    assert a == b
    j = orjson.loads(a)
    chain = j["chains"][0]
    assert set(chain) >= {"session", "summaries", "pairs", "decay", "resurrections", "metrics"}
    assert set(chain["summaries"][0]) >= {"entry_id", "tokens", "sections_present"}
    p = chain["pairs"][0]
    assert set(p) >= {"from", "to", "items", "by_section", "items_detail", "literals", "goal_similarity",
                      "file_list_violations", "growth_tokens"}
    assert all(isinstance(v, int) for v in p["items"].values())
    assert p["file_list_violations"] == [{"list": "read-files", "file": "x.py", "now_in": "neither"}]


def test_rendering_escapes_session_text() -> None:
    """Rich markup, control sequences and HTML in a summary reach the terminal and markdown as inert text."""
    from rich.console import Console

    evil = "[bold red]boom[/] \x1b[31mred\x1b[0m <script>alert(1)</script> a|b"
    r = diff_summaries([chain_session(pi_summary(["g"], [evil]), pi_summary(["g"], ["other"]))])
    con = Console(record=True, width=200, color_system=None)
    for x in drift_renderables(r):
        con.print(x)
    out = con.export_text()
    assert "[bold red]boom[/]" in out and "\x1b" not in out
    md = drift_markdown(r)
    assert "<script>" not in md and "&lt;script&gt;" in md and "a\\|b" in md


def test_decay_figure_has_curves() -> None:
    """The decay figure plots one items curve and one literals curve per origin with later compactions."""
    s = chain_session(pi_summary(["g"], ["a `x.py`"]), pi_summary(["g"], ["a `x.py`"]), pi_summary(["g"], ["b"]))
    fig = decay_figure(diff_summaries([s]))
    ax_items, ax_lits, ax_facts = fig.axes
    assert len(ax_items.lines) == 2 and len(ax_lits.lines) == 2
    assert len(ax_facts.lines) == 0  # no facts in these spans (prompts only)


def test_token_counter_names() -> None:
    """chars4 is ceil(chars/4); an unknown tokenizer name is a usage error."""
    assert token_counter("chars4").count("abcde") == 2
    with pytest.raises(UsageError):
        token_counter("bpe")


def test_match_items_orders_and_counts_everything() -> None:
    """Every old item appears once as kept/changed/moved/dropped and every new item once as kept/changed/moved/added."""
    a = parse_summary(pi_summary(["g"], ["a1 x", "a2 y", "a3 z"])).items
    b = parse_summary(pi_summary(["g"], ["a1 x", "a3 z", "a4 w"])).items
    ch = match_items(a, b)
    assert sorted(id(c.old) for c in ch if c.old) == sorted(id(x) for x in a)
    assert sorted(id(c.new) for c in ch if c.new) == sorted(id(y) for y in b)


# --------------------------------------------------------------------------- robustness

_MD_PIECES = st.sampled_from([
    "## Goal\n", "# Title\n", "### Done\n", "## Progress\n", "- [x] ", "- [ ]", "1. ", "* ", "| a | b |\n", "|---|---|\n",
    "```\n", "---\n", "\n\n---\n\n**Turn Context (split turn):**\n\n", "<read-files>\n", "</read-files>\n",
    "<modified-files>\n", "`x.py`", '"quoted text"', "TypeError: bad", "v1.2.3", "1234", "(none)", "\n", "  ", "任务",
])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_MD_PIECES, st.text(max_size=12)), max_size=40), st.lists(st.one_of(_MD_PIECES, st.text(max_size=12)), max_size=40))
def test_any_text_parses_and_every_item_is_accounted_for(a: list[str], b: list[str]) -> None:
    """Arbitrary markdown-ish text never raises, and matching accounts for each item exactly once."""
    pa, pb = parse_summary("".join(a)), parse_summary("".join(b), "branch_summary")
    ch = match_items(pa.items, pb.items)
    assert sorted(id(c.old) for c in ch if c.old) == sorted(id(x) for x in pa.items)
    assert sorted(id(c.new) for c in ch if c.new) == sorted(id(y) for y in pb.items)
    assert all(c.kind != "kept" or c.old.key == c.new.key for c in ch)  # type: ignore[union-attr]
    assert 0.0 <= pa.compliance <= 1.0


def test_pi_heading_alone_is_not_a_title() -> None:
    """A lone '## Progress' with sub-sections is Pi's Progress section, not a title; an empty checkbox is no item."""
    p = parse_summary("## Progress\n### Done\n- [x] a\n- [ ]\n### In Progress\n- [ ] b")
    assert p.title is None
    assert [i.text for i in p.sections[DONE]] == ["a"] and [i.text for i in p.sections[IN_PROGRESS]] == ["b"]


def test_drift_uses_the_package_cjk_definition() -> None:
    """Issue 11: one CJK definition. Drift split only the BMP ideographs into characters, so text in
    CJK extension B (U+20000..) or bopomofo matched as one long word."""
    from sessiontools.analysis.drift.text import normalise, tokens
    from sessiontools.tokens.text import CJK_RE

    text = "\U00020000\U00020001\U00020002 \u3105\u3106"
    assert all(CJK_RE.fullmatch(c) for c in text.replace(" ", ""))
    assert tokens(normalise(text)) == {"\U00020000": 1, "\U00020001": 1, "\U00020002": 1, "\u3105": 1, "\u3106": 1}
