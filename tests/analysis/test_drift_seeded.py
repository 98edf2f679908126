"""Reported drops equal the drops the lab's lossy summariser makes, computed from its documented rule.

`lab/summarizer.py` (the stand-in for the LLM that wrote the bundled samples) drops, on every update
that produces generation G, the Done item D[k] of the previous summary with
k = sha256(f"{seed}:drop:{G}")[:4] % len(D), and keeps only the last 40 Done items, 6 Key Decisions,
8 Critical Context facts and 12 goals. `expected_drops` recomputes, from that rule and the two
summary texts alone, which items each update removed from those four sections; the tests check
that `diff-summaries` reports exactly those (as a multiset: an item removed and re-added with the
same text is not a loss of content, and no text-based diff could tell it apart).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from sessiontools.analysis.drift import CRITICAL, DECISIONS, DONE, GOAL, diff_summaries
from sessiontools.policies.pi.serialize import format_file_operations
from sessiontools.read import load_session
from sessiontools.report.drift_json import report_to_dict
from sessiontools.testing import SessionBuilder

summarizer = pytest.importorskip("lab.summarizer", reason="lab/summarizer.py (the seeded lossy summariser) is absent")

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_sessions"
CHECKED = (GOAL, DONE, DECISIONS, CRITICAL)


def _split_tail(prev: list[str], new: list[str]) -> tuple[list[str], list[str]]:
    """The rule's `(prev + appended)[-cap:]`: (items of prev cut from the front, items appended)."""
    for t in range(len(prev) + 1):
        keep = prev[t:]
        if new[: len(keep)] == keep:
            return prev[:t], new[len(keep):]
    raise AssertionError("the new list does not continue the previous one as the rule says")


def expected_drops(prev_text: str, new_text: str, seed: int) -> dict[str, Counter[str]]:
    """Items the lab summariser removed from Goal, Done, Key Decisions and Critical Context in one update."""
    s = summarizer
    prev, new = s._sections(prev_text), s._sections(new_text)
    g_prev, g_new = s._generation(prev), s._generation(new)

    def goals(sec: dict[str, list[str]]) -> list[str]:
        return [g for g in s._items(sec.get("Goal", []), "- ") if g != "(none)"]

    def done(sec: dict[str, list[str]]) -> list[str]:
        return [d for d in s._items(sec.get("Done", []), "- [x] ") if d != "(nothing yet)"]

    def decisions(sec: dict[str, list[str]]) -> list[str]:  # our item text has the list marker removed
        return [d[2:] for d in sec.get("Key Decisions", []) if d.startswith("- **") and "(none)" not in d]

    def context(sec: dict[str, list[str]]) -> list[str]:
        return [c for c in s._items(sec.get("Critical Context", []), "- ")
                if not c.startswith("Summary generation:") and c != "(none)"]

    def gen_line(sec: dict[str, list[str]]) -> list[str]:
        return [c for c in s._items(sec.get("Critical Context", []), "- ") if c.startswith("Summary generation:")]

    lists = {GOAL: goals, DONE: done, DECISIONS: decisions, CRITICAL: context}
    if g_new == g_prev:  # 1.x split turn without new history: Pi reused the previous summary verbatim
        return {sec: Counter() for sec in CHECKED}
    if g_new == 0:  # 0.x split turn without new history: Pi wrote "No prior history." instead of a summary
        return {sec: Counter(f(prev) + (gen_line(prev) if sec == CRITICAL else [])) for sec, f in lists.items()}
    assert g_new == g_prev + 1, (g_prev, g_new)
    out: dict[str, Counter[str]] = {}
    for sec, f in lists.items():
        before, after = f(prev), f(new)
        removed: list[str] = []
        if sec == DONE:
            k = s.drop_index(seed, g_new, len(before))
            if k is not None:
                removed.append(before[k])
                before = before[:k] + before[k + 1:]
        cut, appended = _split_tail(before, after)
        removed += cut
        if sec == CRITICAL:  # the generation line is rewritten every time
            removed += gen_line(prev)
            appended = appended + gen_line(new)
        out[sec] = Counter(removed) - Counter(appended)
    return out


def reported_drops(pair: dict) -> dict[str, Counter[str]]:  # type: ignore[type-arg]
    out = {sec: Counter() for sec in CHECKED}
    for it in pair["items_detail"]["dropped"]:
        if it["section"] in out:
            out[it["section"]][it["text"]] += 1
    for it in pair["items_detail"]["moved"]:  # a moved item is not dropped: it must not hide a seeded drop
        assert it["from_section"] not in out or it["from"] != it["to"], it
    return out


def check_file(report, texts: dict[str, str], seed: int) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Compare every update pair of every chain; return (pairs checked, items expected dropped)."""
    pairs = dropped = 0
    for chain in report_to_dict(report)["chains"]:
        for p in chain["pairs"]:
            if p["relation"] != "update":
                continue
            exp = expected_drops(texts[p["from"]], texts[p["to"]], seed)
            assert reported_drops(p) == exp, (chain["session"], p["from"], p["to"])
            pairs += 1
            dropped += sum(sum(c.values()) for c in exp.values())
    return pairs, dropped


# --------------------------------------------------------------------------- a simulated session


def _conversation(tasks: range, rng_files: int = 5) -> str:
    """Pi's serialisation of a few tasks: prompt, tool calls, results (one an error) and the final answer."""
    parts = []
    for t in tasks:
        f = f"src/mod_{t % rng_files}.py"
        parts.append(f"[User]: Task {t + 1}: Read {f} and tell me what it does. Keep answers short.")
        parts.append(f"[Assistant]: I'll start by reading `{f}`.")
        parts.append(f'[Assistant tool calls]: read(path="{f}"); bash(command="wc -l {f}")')
        parts.append(f"[Tool result]: # module {t % rng_files}\ndef f():\n    return {t}")
        if t % 4 == 3:
            parts.append(f"[Tool result]: Error: could not find {f}.bak")
        else:
            parts.append(f"[Tool result]: {10 + t} {f}")
        if t % 3 == 2:
            parts.append(f'[Assistant tool calls]: edit(path="{f}", oldText="x", newText="y")')
            parts.append(f"[Tool result]: Successfully replaced text in {f}.")
        parts.append(f"[Assistant]: Task {t + 1} is done: `{f}` defines f(). It has {10 + t} lines.")
    return "\n\n".join(parts)


def simulate(seed: int, chunks: list[range], split_at: int | None = None) -> tuple[SessionBuilder, dict[int, str]]:
    """A session whose compactions were written by the lab summariser as Pi would call it."""
    b = SessionBuilder()
    prev: str | None = None
    read: set[str] = set()
    modified: set[str] = set()
    texts: dict[int, str] = {}
    for n, tasks in enumerate(chunks):
        conv = _conversation(tasks)
        user = f"<conversation>\n{conv}\n</conversation>\n\n"
        if prev is not None:
            user += f"<previous-summary>\n{prev}\n</previous-summary>\n\n"
        user += "Use this EXACT format:"
        summary = summarizer.summarize("update" if prev is not None else "initial", user, seed)
        if n == split_at:
            prefix = _conversation(range(tasks.stop, tasks.stop + 1))
            turn = summarizer.summarize("turn_prefix", f"<conversation>\n{prefix}\n</conversation>\n\n## Early Progress", seed)
            summary = f"{summary}\n\n---\n\n**Turn Context (split turn):**\n\n{turn}"
        for t in tasks:
            read.add(f"src/mod_{t % 5}.py")
            if t % 3 == 2:
                modified.add(f"src/mod_{t % 5}.py")
        r, m = sorted(read - modified), sorted(modified)
        summary += format_file_operations(r, m)
        u = b.user(f"chunk {n}")
        b.assistant("ok")
        b.compaction(summary, u, 10_000 + n, details={"readFiles": r, "modifiedFiles": m})
        texts[n] = summary
        prev = summary
    return b, texts


@pytest.mark.parametrize("seed", [1, 7, 42, 2024])
def test_simulated_lab_chain_reports_exactly_the_seeded_drops(seed: int) -> None:
    """Seven updates over 30 tasks (Done overflows 40, decisions 6, facts 8, goals 12): drops match the rule."""
    chunks = [range(0, 4), range(4, 8), range(8, 12), range(12, 17), range(17, 22), range(22, 26), range(26, 30), range(30, 33)]
    b, _ = simulate(seed, chunks, split_at=3)
    s = b.session()
    texts = {e.id: e.data["summary"] for e in s.entries if e.type == "compaction"}
    report = diff_summaries([s])
    pairs, dropped = check_file(report, texts, seed)
    assert pairs == len(chunks) - 1
    assert dropped > pairs  # seeded drops plus truncation: the test is not vacuous
    done_drops = sum(p.count("dropped") for p in report.chains[0].pairs)
    assert done_drops >= pairs  # every update dropped at least its seeded Done item (the Done list is long)


def test_simulated_chain_is_pi_formatted_and_monotonic() -> None:
    """The lab's summaries are in Pi's format (no missing sections) and keep Pi's cumulative file lists."""
    b, _ = simulate(3, [range(0, 3), range(3, 6), range(6, 9)], split_at=1)
    m = diff_summaries([b.session()]).metrics()
    assert m["missing_sections"] == 0
    assert m["file_list_violations"] == 0
    assert m["pairs"] == 2


# --------------------------------------------------------------------------- the bundled samples


def _sample_seeds() -> dict[str, int]:
    manifest = SAMPLES / "manifest.json"
    if not manifest.is_file():
        return {}
    meta = json.loads(manifest.read_text(encoding="utf-8"))
    return {f"{name}.jsonl": int(m["seed"]) for name, m in meta.items() if "seed" in m}


def _samples() -> list[Path]:
    seeds = _sample_seeds()
    return sorted(p for p in SAMPLES.glob("*.jsonl") if p.name in seeds) if SAMPLES.is_dir() else []


@pytest.mark.skipif(not _samples(), reason="sample_sessions/ has no sessions with a manifest.json seed yet")
@pytest.mark.parametrize("path", _samples(), ids=lambda p: p.name)
def test_sample_drops_equal_the_seeded_drops(path: Path) -> None:
    """On every bundled sample, each update pair's reported drops equal the lab rule's drops, on every branch."""
    seed = _sample_seeds()[path.name]
    s = load_session(path)
    texts = {e.id: e.data["summary"] for e in s.entries if e.type == "compaction" and isinstance(e.data.get("summary"), str)}
    report = diff_summaries([s], all_leaves=True)
    pairs, _ = check_file(report, texts, seed)
    if any(sum(x.kind == "compaction" for x in c.chain) >= 2 for c in report.chains):
        assert pairs >= 1
