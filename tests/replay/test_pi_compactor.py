"""Issue 24, toward one walk: Pi's compaction as a policy plug point of the transcript walk
(`Policy.compactor`, `policies.pi.compactor`). On a Pi transcript, which carries its entries
(`TranscriptPath.native`), the walk runs the exact `prepareCompaction` port on the entry path Pi
would hold; on every other agent's transcript Pi's rule runs on neutral messages as before.

Before the plug point 41 of the exact walk's 262 compactions over the Pi samples at W 16k/24k/32k
were not made by the transcript walk (93/114 runs identical); then 3 runs (session 7 closed them: a
recorded overflow that fits is on both walks' paths with its modelled usage, and Pi's loop ends at the
error reply). Session 10 deleted the exact walk; its answers, every field, are frozen in
tests/replay/test_walk_reference.py.
"""

from __future__ import annotations

from sessiontools.policies.base import PolicySettings
from sessiontools.policies.pi.compactor import PiCompactor
from sessiontools.policies.pi.policy import pi_policy
from sessiontools.read.sources import load_source
from sessiontools.read.values import clean_strings
from sessiontools.replay.neutral import fit_neutral_truth
from sessiontools.replay.walk import simulate_path
from sessiontools.transcript.load import transcript_of
from sessiontools.transcript.pi.neutral import EntryTable, pi_transcript
from tests.conftest import SAMPLES


def test_a_pi_transcript_carries_its_entries_and_gets_the_exact_compactor() -> None:
    s = load_source(SAMPLES / "pi1-overflow.jsonl")
    path = pi_transcript(s).paths[0]
    table = path.native
    assert isinstance(table, EntryTable)
    assert len(table.of_message) == len(path.messages)
    assert all(table.entry(m.index).id == m.id for m in path.messages)
    assert clean_strings(path).native is table  # the agent's own records are never cleaned (Pi reads them as written)
    truth = fit_neutral_truth(path)
    assert isinstance(pi_policy("pi-1").compactor(path, truth, PolicySettings(16000, 3000, 4000)), PiCompactor)


def test_another_agents_transcript_keeps_pis_rule_on_neutral_messages() -> None:
    src = load_source(SAMPLES / "codex" / "codex-pair-a.jsonl")
    path = transcript_of(src).paths[0]
    assert path.native is None
    assert pi_policy("pi-0").compactor(path, fit_neutral_truth(path), PolicySettings(16000, 3000, 4000)) is None


def test_the_recorded_compactions_are_reproduced_exactly_at_the_recorded_settings() -> None:
    """pi1-overflow at its recorded settings: every recorded compaction, with Pi's own first kept entry
    and tokensBefore (the transcript walk's own keep rule got 4 of 9 before it ran the port)."""
    import json

    st = json.loads((SAMPLES / "manifest.json").read_text())["pi1-overflow"]
    path = pi_transcript(load_source(SAMPLES / "pi1-overflow.jsonl")).paths[0]
    run = simulate_path(path, pi_policy("pi-1"), PolicySettings(st["window"], st["reserve"], st["keep"]))
    recorded = [(path.native.entry(c.index).data["firstKeptEntryId"], c.tokens_before) for c in path.compactions]
    assert [(c.first_kept_entry_id, c.tokens_before) for c in run.compactions] == recorded
    assert all(c.matches_recorded for c in run.compactions)
