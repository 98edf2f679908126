"""Issue 29: a regenerated summary's own length moves the later compactions. On a seeded lab workload
(pi0-pair-a / pi1-pair-a, written by the real Pi CLI), a summariser whose summaries are long makes
the second compaction fire earlier than one whose summaries are short; the first compaction, decided
before any regenerated summary counts, is where the replay put it; the new session file holds the
compactions at the final run's places."""

from __future__ import annotations

import json

import pytest

from sessiontools.policies.pi.summarize import SummaryRequest
from sessiontools.read import load_session
from sessiontools.replay.registry import summarizer_of
from sessiontools.replay.summarizer import Answer, SummaryGrid
from sessiontools.transcript.pi.tree import SessionTree
from tests.conftest import SAMPLES


def _summariser(words: int, counted: bool = True):  # type: ignore[no-untyped-def]
    def answer(req: SummaryRequest) -> Answer:
        return Answer("## Goal\n" + "word " * words, 100, words + 3 if counted else None)
    return answer


@pytest.mark.parametrize(("name", "window"), [("pi0-pair-a.jsonl", 16000), ("pi1-pair-a.jsonl", 16000),
                                              ("pi0-pair-a.jsonl", 12000)])
def test_a_longer_summary_makes_the_next_compaction_fire_earlier(name: str, window: int) -> None:
    session = load_session(SAMPLES / name)
    places, ids_of = {}, {}
    for words in (20, 2500):
        (chain,) = summarizer_of(session).plan(session, SummaryGrid([window], [3000], [2000]))
        guessed = [c.parent_base_index for c in chain.run.compactions]
        result = summarizer_of(session).regenerate(chain, _summariser(words), None, None)
        assert result.error is None
        got = [r.compaction.parent_base_index for r in result.compactions]
        assert got[0] == guessed[0]  # decided before any regenerated summary counts
        places[words] = got
        ids_of[words] = [r.compaction.parent_entry_id for r in result.compactions]
        # the file holds the final run's path: each regenerated compaction where that run put it
        recs = summarizer_of(session).records(result)
        comps = [k for k, r in enumerate(recs) if r.get("type") == "compaction"]
        assert len(comps) == len(got)
        assert all(recs[k]["summary"].startswith("## Goal\nword") for k in comps)
        ids = [r.get("id") for r in recs[1:]]
        assert [recs[k]["parentId"] for k in comps] == [ids[k - 2] if k >= 2 else None for k in comps]
    short, long = places[20], places[2500]
    assert len(short) >= 2 and len(long) >= 2
    assert long[1] < short[1], (short, long)
    if (name, window) == ("pi0-pair-a.jsonl", 16000):  # the figures the README quotes: entries of the path
        base = [e.id for e in SessionTree(session).path().entries if e.type != "compaction"]
        assert (base.index(ids_of[20][1]), base.index(ids_of[2500][1])) == (108, 96)


def test_without_counted_tokens_the_text_is_counted() -> None:
    """An endpoint that reports no output tokens: the truth model counts the summary's text, and a long
    one still moves the next compaction earlier."""
    session = load_session(SAMPLES / "pi0-pair-a.jsonl")
    firsts = {}
    for words in (20, 2500):
        (chain,) = summarizer_of(session).plan(session, SummaryGrid([16000], [3000], [2000]))
        result = summarizer_of(session).regenerate(chain, _summariser(words, counted=False), None, None)
        firsts[words] = [r.compaction.parent_base_index for r in result.compactions]
    assert firsts[2500][1] < firsts[20][1]


@pytest.mark.parametrize("limit", [17000, 19500])
def test_codex_a_longer_summary_makes_the_next_compaction_fire_earlier(limit: int) -> None:
    """The same for a Codex rollout (codex-pair-a, written by the real Codex CLI): the setting is replayed
    again with the regenerated summaries' sizes; one request per compaction written (none for a place
    that moved later)."""
    from sessiontools.read.codex.load import load_rollout

    src = SAMPLES / "codex" / "codex-pair-a.jsonl"
    places = {}
    for words in (20, 2500):
        rollout = load_rollout(src)
        (chain,) = summarizer_of(rollout).plan(rollout, SummaryGrid([64000], [0], [0], limits=[limit]))
        guessed = [c.parent_base_index for c in chain.run.compactions]
        asked: list[str] = []

        def answer(req, words=words, asked=asked):  # type: ignore[no-untyped-def]
            asked.append(json.dumps(req.body, sort_keys=True))
            return _summariser(words)(req)

        result = summarizer_of(rollout).regenerate(chain, answer, None, None)
        assert result.error is None
        assert len(asked) == len(set(asked)), "a request was asked twice"
        assert len(asked) == len(result.compactions), "a request was sent for a place that moved later"
        got = [r.compaction.parent_base_index for r in result.compactions]
        assert got[0] == guessed[0]
        places[words] = got
        compacted = [ln for ln in result.lines if ln["type"] == "compacted"]
        assert len(compacted) == len(got)
    short, long = places[20], places[2500]
    assert len(short) >= 2 and len(long) >= 2
    assert long[1] < short[1], (short, long)
