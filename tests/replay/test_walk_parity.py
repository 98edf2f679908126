"""Issue 24, one walk: on every Pi sample under each Pi policy, the transcript walk (`replay.walk`, Pi's
`prepareCompaction` by `policies.pi.compactor`) and Pi's exact walk (`replay.simulate`) give the same
run record on EVERY field (`lab.walk_parity`: compactions with place, tokens and kind, failed ones,
overflows, rejections, peak, check points, late/early, thrash, costs, cache classes, each request's
truth, source and count, the recorded points), except the runs in `KNOWN` (strict: a fix takes its
run off the list). Session 7 measured 181 of 456 runs identical over the samples' small grid
(W 16k/24k/32k x reserve 3000/4000 x keep 2000/4000, chars/4) before closing the causes, 452 after.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.walk_parity import compare
from tests.conftest import SAMPLES, shared_sessions

PI_SAMPLES = sorted(SAMPLES.glob("*.jsonl"))
SETTINGS = ((16000, 24000, 32000), (3000,), (4000,))
#: (sample, policy, window): the fields where the walks still differ, and why.
KNOWN = {
    # A declined compaction's note names the entry after which Pi checked: the exact walk the base
    # entry before the request (an omission edit), the walk the context's last message.
    ("pi1-two-overflows", "pi-1", 16000): {"no_compaction[6]", "no_compaction[8]"},
}


@pytest.mark.parametrize("policy", ["pi-0", "pi-1"])
@pytest.mark.parametrize("sample", PI_SAMPLES, ids=lambda p: p.stem)
def test_the_two_walks_give_the_same_run_record(sample: Path, policy: str) -> None:
    for (w, _, _), fields, _ in compare(sample, policy, "chars4", "small", SETTINGS):
        assert set(fields) == KNOWN.get((sample.stem, policy, w), set()), (sample.stem, policy, w, fields[:8])


def test_the_comparison_sees_a_difference() -> None:
    """The comparison can fail: a changed field of either record is reported by its path."""
    from lab.walk_parity import diff

    a = {"compactions": [{"tokens_before": 1}], "metrics": {"peak_truth_tokens": 5}}
    b = {"compactions": [{"tokens_before": 2}], "metrics": {"peak_truth_tokens": 5}}
    assert list(diff(a, b)) == ["compactions[0].tokens_before"]
    assert list(diff(a, {**a, "compactions": []})) == ["compactions#len"]


# --- The real sessions in `../shared/sessions/pi` (skipped where the folder is absent) -----------------
SHARED_SETTINGS = ((16000, 24000, 32000), (3000,), (2000, 4000))
#: (session, policy, window, keep): the fields where the walks still differ on a shared session, and why.
#: Session 8 measured, over the small grid (96 runs, chars/4): 0 identical before the Pi adapter
#: carried the aborted and failed replies (`UnusableReply`); 24 with them; 48 with their recorded
#: classes and cost; 73 with a reply glued to a compaction's line kept and the newest modelled usage
#: kept across a compaction; 88 with the summariser's input in code points and a cut at an entry
#: without a message; 96 with the entries before a model call on Pi's path (its parent).
KNOWN_SHARED: dict[tuple[str, str, int, int], set[str]] = {}


@pytest.mark.parametrize("policy", ["pi-0", "pi-1"])
@pytest.mark.parametrize("session", shared_sessions() or
                         [pytest.param(None, marks=pytest.mark.skip(reason="../shared/sessions/pi is absent"))],
                         ids=lambda p: p.stem if p else "absent")
def test_the_two_walks_agree_on_the_shared_real_sessions(session: Path, policy: str) -> None:
    for (w, _, k), fields, _ in compare(session, policy, "chars4", "small", SHARED_SETTINGS):
        known = KNOWN_SHARED.get((session.stem, policy, w, k), set())
        assert set(fields) == known, (session.stem, policy, w, k, sorted(set(fields) - known)[:8], sorted(known - set(fields))[:8])


# --- Synthetic fixtures of each event kind the shared sessions taught --------------------------------
_ZERO = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}


def _lines(sample: str) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in (SAMPLES / f"{sample}.jsonl").read_text().splitlines()]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def unusable_fixture(sample: str, out: Path) -> Path:
    """`sample` with every other run-final reply, by turns: aborted with an empty usage, aborted with
    its usage kept (0.x checks it by that usage: 10k+ tokens over the threshold), and an error that is
    no overflow (a server error, no content, no usage)."""
    lines = _lines(sample)
    stops = [e for e in lines if e.get("type") == "message" and e["message"].get("role") == "assistant"
             and e["message"].get("stopReason") == "stop"]
    for n, e in enumerate(stops[1::2][:6]):
        m = e["message"]
        if n % 3 == 0:
            m.update(stopReason="aborted", usage=dict(_ZERO), errorMessage="Request was aborted")
        elif n % 3 == 1:
            m.update(stopReason="aborted", errorMessage="Request was aborted")
        else:
            m.update(stopReason="error", usage=dict(_ZERO), content=[], errorMessage="500 Internal server error")
    return _write(out, [json.dumps(e) for e in lines])


def glued_fixture(sample: str, out: Path) -> Path:
    """`sample` with each compaction glued onto its reply's line (two JSON values on one line: the
    reader recovers both, the reply and the compaction sharing a line number)."""
    raw = (SAMPLES / f"{sample}.jsonl").read_text().splitlines()
    lines: list[str] = []
    for line in raw:
        if json.loads(line).get("type") == "compaction" and lines:
            lines[-1] += line
        else:
            lines.append(line)
    return _write(out, lines)


FIXTURE_SETTINGS = ((16000, 24000, 32000), (3000,), (4000,))


@pytest.mark.parametrize("policy", ["pi-0", "pi-1"])
@pytest.mark.parametrize("sample", ["pi0-threshold-5x", "pi1-threshold-5x", "pi1-overflow"])
def test_aborted_and_failed_replies_walk_as_the_exact_walk(sample: str, policy: str, tmp_path: Path) -> None:
    from sessiontools.read.sources import load_source
    from sessiontools.transcript.pi.neutral import pi_transcript

    f = unusable_fixture(sample, tmp_path / f"{sample}.jsonl")
    (path,) = pi_transcript(load_source(f), pi_version=policy[-1]).paths
    kinds = [(u.stop_reason, u.usage_total > 0) for u in path.unusable]
    assert {("aborted", False), ("aborted", True), ("error", False)} <= set(kinds), kinds
    ids = {u.id for u in path.unusable}
    for (w, _, _), fields, (_, walked) in compare(f, policy, "chars4", "small", FIXTURE_SETTINGS):
        assert fields == [], (sample, policy, w, fields[:8])
        assert ids <= {r[0] for r in walked["requests"]}  # billed: request points of the run


@pytest.mark.parametrize("sample", ["pi0-threshold-5x", "pi1-threshold-5x"])
def test_a_reply_sharing_its_line_with_a_compaction_is_a_request(sample: str, tmp_path: Path) -> None:
    f = glued_fixture(sample, tmp_path / f"{sample}.jsonl")
    policy = f"pi-{sample[2]}"
    for (w, _, _), fields, _ in compare(f, policy, "chars4", "small", FIXTURE_SETTINGS):
        assert fields == [], (sample, policy, w, fields[:8])


def test_the_fixtures_fail_without_the_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard can fail: a Pi transcript without its unusable replies walks apart from the exact walk."""
    import dataclasses

    import sessiontools.transcript.pi.neutral as neutral

    real = neutral.pi_transcript

    def without(*a, **kw):  # type: ignore[no-untyped-def]
        t = real(*a, **kw)
        t.paths = [dataclasses.replace(p, unusable=()) for p in t.paths]
        return t

    monkeypatch.setattr(neutral, "pi_transcript", without)
    f = unusable_fixture("pi0-threshold-5x", tmp_path / "f.jsonl")
    runs = compare(f, "pi-0", "chars4", "small", FIXTURE_SETTINGS)
    assert all("requests#len" in fields for _, fields, _ in runs)
