"""Issue 24, one simulator: every Pi replay goes through the one walk (`replay.walk`), and its answers are
the ones Pi's exact walk (`replay.simulate`, deleted in session 10) gave, frozen by `lab.walk_reference`
in `tests/replay/data/walk_reference.json.gz` before the deletion: every Pi sample over W 16k/24k/32k x
reserve 3000/4000 x keep 2000/4000 x pi-0/pi-1 x truth counter chars4/o200k/auto (1368 runs, compared
field by field), and the real Pi sessions of `../shared/sessions/pi` (chars4 and o200k, 192 runs,
compared by digest; skipped where the folder is absent). The runs in `KNOWN` differ, each for its
reason (strict: a fix takes its run off the list).
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from lab.walk_parity import diff, record
from lab.walk_reference import OUT, POLICIES, SAMPLE_COUNTERS, SHARED_COUNTERS, canonical, digest, run_key
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


@cache
def reference() -> dict[str, Any]:
    with gzip.open(OUT, "rb") as z:
        return json.loads(z.read())  # type: ignore[no-any-return]


def walked(file: Path, policy: str, counter: str) -> dict[str, dict[str, Any]]:
    """Each run of `file` under `policy` over the frozen grid, as the one walk replays it, by run key."""
    from sessiontools.read.sources import load_source
    from sessiontools.replay.transcripts import walk_transcript
    from sessiontools.transcript.pi.neutral import pi_transcript

    ref = reference()
    t = pi_transcript(load_source(file), pi_version=policy[-1])
    (pr,) = walk_transcript(t, windows=ref["windows"], reserves=ref["reserves"], keeps=ref["keeps"], policy=policy,
                            truth_tokenizer=counter)
    out = {}
    for run in pr.runs:
        st = run.settings
        key = run_key(file.stem, policy, counter, (st.context_window, st.reserve_tokens, st.keep_recent_tokens))
        out[key] = json.loads(canonical(record(pr, run)))
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
    sample of today (a new sample needs `python -m lab.walk_reference` from a commit with the exact walk:
    none exists after session 10, so a new sample is covered by tests/replay/test_walk_parity's fixtures)."""
    ref = reference()["samples"]
    assert len(ref) == len(PI_SAMPLES) * len(POLICIES) * len(SAMPLE_COUNTERS) * 12
    assert {k.split("|")[0] for k in ref} == {p.stem for p in PI_SAMPLES}


def test_a_perturbed_field_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: one request's truth moved by one token in the walk's records is reported."""
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
