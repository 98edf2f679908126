"""Issue 24, one simulator: every Pi replay goes through the one walk (`replay.walk`), and its answers are
the ones Pi's exact walk (`replay.simulate`, deleted in session 10) gave, frozen by `lab.walk_reference`
in `tests/replay/data/walk_reference.json.gz` before the deletion: every Pi sample over W 16k/24k/32k x
reserve 3000/4000 x keep 2000/4000 x pi-0/pi-1 x truth counter chars4/o200k/auto (1368 runs, compared
field by field), and the real Pi sessions of `../shared/sessions/pi` (chars4 and o200k, 192 runs,
compared by digest; skipped where the folder is absent), and the synthetic fixtures of the event kinds
the real sessions taught (aborted and failed replies, a reply sharing its line with a compaction; 96
runs). The runs in `KNOWN` differ, each for its reason (strict: a fix takes its run off the list).

Session 7 measured 181 of 456 sample runs identical between the two walks before closing the causes;
session 8, 0 of the 96 shared-session runs before the Pi adapter carried the aborted and failed
replies (`UnusableReply`), 96 after the last causes closed (the history of each cause is in
`git log -- tests/replay/test_walk_parity.py`).
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from lab.walk_reference import (
    FIXTURES,
    OUT,
    POLICIES,
    SAMPLE_COUNTERS,
    SHARED_COUNTERS,
    canonical,
    diff,
    digest,
    fixture_file,
    record,
    run_key,
)
from tests.conftest import SAMPLES, shared_sessions

PI_SAMPLES = sorted(SAMPLES.glob("*.jsonl"))

#: run key (`run_key`) -> the fields where the one walk's record differs from the frozen one, and why.
_NOTE_AT = {"no_compaction[6]", "no_compaction[8]"}
KNOWN: dict[str, set[str]] = {
    # A declined compaction's note names the entry after which Pi checked: the exact walk the base
    # entry before the request (an omission edit), the walk the context's last message.
    **{run_key("pi1-two-overflows", "pi-1", c, (16000, r, k)): _NOTE_AT
       for c in SAMPLE_COUNTERS for r in (3000, 4000) for k in (4000,)},
}


#: Fields the run record gained after the freeze, with the value every frozen run implies (the exact
#: walk had no unmetered replies: s10-inv's `unmetered_replies` counts replies it never saw). A run whose
#: value differs keeps the field, and the comparison reports it.
ADDED_SINCE_FROZEN: dict[str, Any] = {"unmetered_replies": 0}


@cache
def reference() -> dict[str, Any]:
    with gzip.open(OUT, "rb") as z:
        return json.loads(z.read())  # type: ignore[no-any-return]


def walked(file: Path, policy: str, counter: str) -> dict[str, dict[str, Any]]:
    """Each run of `file` under `policy` over the frozen grid, as `replay_source` replays it (the one walk),
    by run key."""
    from sessiontools.read.sources import load_source
    from sessiontools.replay.session import replay_source

    ref = reference()
    (pr,) = replay_source(load_source(file), windows=ref["windows"], reserves=ref["reserves"], keeps=ref["keeps"],
                          policy=policy, truth_tokenizer=counter)
    out = {}
    for run in pr.runs:
        st = run.settings
        key = run_key(file.stem, policy, counter, (st.context_window, st.reserve_tokens, st.keep_recent_tokens))
        rec = json.loads(canonical(record(pr, run)))
        for field, implied in ADDED_SINCE_FROZEN.items():
            if field in rec and rec[field] == implied:
                del rec[field]
        out[key] = rec
    return out


def differences(file: Path, policy: str, counter: str) -> dict[str, set[str]]:
    """Run key -> differing fields of each sample run (empty sets left out)."""
    ref = reference()["samples"]
    got = walked(file, policy, counter)
    keys = [k for k in ref if k.startswith(f"{file.stem}|{policy}|{counter}|")]
    assert sorted(keys) == sorted(got), "the walk's grid is the frozen grid"
    out = {k: set(diff(ref[k], got[k])) for k in keys}
    return {k: v for k, v in out.items() if v}


@pytest.mark.parametrize("counter", SAMPLE_COUNTERS)
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("sample", PI_SAMPLES, ids=lambda p: p.stem)
def test_the_one_walk_gives_the_frozen_exact_walk_records(sample: Path, policy: str, counter: str) -> None:
    got = differences(sample, policy, counter)
    known = {k: v for k, v in KNOWN.items() if k.startswith(f"{sample.stem}|{policy}|{counter}|")}
    assert got == known, {k: sorted(v)[:8] for k, v in got.items() if known.get(k) != v}


def test_every_frozen_sample_run_is_compared() -> None:
    """The parametrisation covers the whole frozen file (no run of it goes unread), and it holds every
    sample of today (a new sample has no exact-walk answer: it needs `python -m lab.walk_reference` run
    at commit 8a46fd0, the last with both walks, or its own tests)."""
    ref = reference()["samples"]
    fixtures = sum(len(pols) for _, _, pols in FIXTURES)
    assert len(ref) == (len(PI_SAMPLES) * len(POLICIES) * len(SAMPLE_COUNTERS) + fixtures) * 12
    assert {k.split("|")[0] for k in ref if "~" not in k} == {p.stem for p in PI_SAMPLES}


def test_a_perturbed_field_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: the peak truth moved by one token in the walk's records is reported, run by run."""
    import sys

    real = record

    def moved(pr: Any, run: Any) -> dict[str, Any]:
        rec = real(pr, run)
        rec["metrics"] = {**rec["metrics"], "peak_truth_tokens": rec["metrics"]["peak_truth_tokens"] + 1}
        return rec

    monkeypatch.setattr(sys.modules[__name__], "record", moved)
    got = differences(SAMPLES / "pi0-threshold-5x.jsonl", "pi-0", "chars4")
    assert len(got) == 12 and all(v == {"metrics.peak_truth_tokens"} for v in got.values())


@pytest.mark.parametrize("counter", SHARED_COUNTERS)
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("session", shared_sessions() or
                         [pytest.param(None, marks=pytest.mark.skip(reason="../shared/sessions/pi is absent"))],
                         ids=lambda p: p.stem if p else "absent")
def test_the_one_walk_gives_the_frozen_digests_of_the_real_sessions(session: Path, policy: str, counter: str) -> None:
    ref = reference()["shared"]
    got = {k: digest(v) for k, v in walked(session, policy, counter).items()}
    keys = [k for k in ref if k.startswith(f"{session.stem}|{policy}|{counter}|")]
    if not keys:
        pytest.skip(f"{session.stem} was not frozen")
    assert sorted(keys) == sorted(got)
    assert [k for k in keys if ref[k] != got[k]] == [k for k in keys if k in KNOWN]


# --- Synthetic fixtures of each event kind the shared sessions taught (`lab.walk_reference.FIXTURES`) ---
@pytest.mark.parametrize(("kind", "sample", "policy"), [(k, s, p) for k, s, pols in FIXTURES for p in pols])
def test_the_fixtures_walk_as_the_exact_walk_did(kind: str, sample: str, policy: str, tmp_path: Path) -> None:
    f = fixture_file(kind, sample, tmp_path)
    assert differences(f, policy, "chars4") == {}
    if kind == "unusable":  # the fixture holds each kind, and each is billed: a request point of the run
        from sessiontools.read.sources import load_source
        from sessiontools.transcript.pi.neutral import pi_transcript

        (path,) = pi_transcript(load_source(f), pi_version=policy[-1]).paths
        kinds = [(u.stop_reason, u.usage_total > 0) for u in path.unusable]
        assert {("aborted", False), ("aborted", True), ("error", False)} <= set(kinds), kinds
        ids = {u.id for u in path.unusable}
        assert all(ids <= {r[0] for r in rec["requests"]} for rec in walked(f, policy, "chars4").values())


def test_the_fixtures_fail_without_the_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard can fail: a Pi transcript without its unusable replies walks apart from the frozen runs."""
    import dataclasses

    import sessiontools.transcript.pi.neutral as neutral

    real = neutral.pi_transcript

    def without(*a, **kw):  # type: ignore[no-untyped-def]
        t = real(*a, **kw)
        t.paths = [dataclasses.replace(p, unusable=()) for p in t.paths]
        return t

    monkeypatch.setattr(neutral, "pi_transcript", without)
    got = differences(fixture_file("unusable", "pi0-threshold-5x", tmp_path), "pi-0", "chars4")
    assert len(got) == 12 and all("requests#len" in v for v in got.values())
