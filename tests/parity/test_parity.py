"""Parity: our port against Pi's own compiled code (0.73.1 and 1.6.0), field by field.

Cases: every file of ../shared/sessions/pi and sample_sessions/ at every run end and at random
points, and hypothesis-generated sessions at every point, for keep-recent in {1, 1000, 5000,
20000, 100000}, under both Pi versions. Compared: prepareCompaction (first kept index, turn
start (always), boundary start, split, first kept entry id, tokensBefore, the previous summary,
message counts, sources and roles, file lists, the exact serialized summariser input), the context
Pi builds and the entry owning each message, estimateTokens per message, the usage-based estimates
(0.x and 1.x projected), overflow recognition, and the path (ids and line indices, exactly, at every
query). Every key of either side is compared: a key on one side only is a mismatch. Where Pi's own
code throws, the case is counted and listed with Pi's error (see the summary); a failure of the
oracle's own code fails the test. Lines Pi drops (glued objects) are removed on both sides
before comparing, since Pi and we deliberately read them differently.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from sessiontools.read import load_session
from sessiontools.transcript.pi import SessionTree
from tests.conftest import SAMPLES, require_pi, shared_sessions
from tests.parity import compare
from tests.parity.compare import KEEPS, Tally, build_requests, check_session, choose_points

TOTALS: dict[str, Tally] = {}


def _tally(name: str) -> Tally:
    return TOTALS.setdefault(name, Tally())


def _ask(major: str, requests: list[dict]) -> list[dict]:
    from tests.parity.oracle import run_oracle

    require_pi(major)  # fails (never skips) when Pi cannot be installed, unless opted out
    return run_oracle(major, requests)


def _lines_as_pi_reads(path: Path) -> list[str]:
    """The file's lines, without those our reader had to repair (glued objects, BOM)."""
    session = load_session(path)
    drop = {d.line for d in session.recovered}
    text = path.read_bytes().decode("utf-8", "replace")
    return [ln for i, ln in enumerate(text.split("\n"), start=1) if i not in drop and ln.strip()]


def _keep_failures(tally: Tally) -> None:
    """Write sessions with mismatches to .cache/parity-failures/ so they can be replayed by hand."""
    if not tally.failed_sessions:
        return
    out = Path(__file__).resolve().parents[2] / ".cache" / "parity-failures"
    out.mkdir(parents=True, exist_ok=True)
    for sid, lines in tally.failed_sessions.items():
        (out / f"{sid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")


def _real_files() -> list[Path]:
    return shared_sessions() + sorted(SAMPLES.glob("*.jsonl"))


@pytest.mark.parity
@pytest.mark.parametrize("major", ["0", "1"])
@pytest.mark.parametrize("path", _real_files(), ids=lambda p: p.name)
def test_real_sessions(path: Path, major: str) -> None:
    """Real Pi-written sessions: run ends (up to 60) plus 15 random points, five keep values."""
    lines = _lines_as_pi_reads(path)
    session = compare.session_from_lines(lines, str(path))
    entries = SessionTree(session).path().entries
    rng = random.Random(f"{path.name}:{major}")
    points = choose_points(entries, rng, n_random=15, cap=60)
    ctx_points = sorted(rng.sample(points, min(3, len(points))))
    requests = build_requests(path.name, lines, entries, points, KEEPS, ctx_points)
    answers = _ask(major, requests)
    tally = Tally()
    check_session(major, path.name, lines, answers, tally)
    _tally(f"real v{major}").add(tally)
    _keep_failures(tally)
    assert not tally.helper_failures, "the oracle harness failed:\n" + "\n".join(tally.helper_failures[:20])
    assert tally.cases > 0
    assert not tally.mismatches, "\n".join(tally.mismatches[:20])


@pytest.mark.parity
@pytest.mark.parametrize("major", ["0", "1"])
def test_generated_sessions(major: str) -> None:
    """Hypothesis-generated session files of every format version: every point, five keep values."""
    pytest.importorskip("hypothesis")
    from hypothesis import HealthCheck, given, settings

    from tests.parity.strategies import no_local_constants, session_files, to_jsonl_lines

    batch: list[tuple[str, list[str]]] = []

    @settings(max_examples=int(os.environ.get("PARITY_EXAMPLES", "120")), derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(session_files())
    def collect(records: list[dict]) -> None:
        batch.append((f"gen-{len(batch)}", to_jsonl_lines(records)))

    with no_local_constants():  # (the same sessions whatever ran before in this process)
        collect()
    requests: list[dict] = []
    for sid, lines in batch:
        entries = SessionTree(compare.session_from_lines(lines, sid)).path().entries
        points = list(range(len(entries)))
        requests += build_requests(sid, lines, entries, points, KEEPS, points[-1:] + points[:1])
    answers = _ask(major, requests)
    by_session: dict[str, list[dict]] = {}
    for a in answers:
        by_session.setdefault(a["session_id"].removesuffix("#ctx"), []).append(a)
    tally = Tally()
    for sid, lines in batch:
        check_session(major, sid, lines, by_session.get(sid, []), tally)
    _tally(f"generated v{major}").add(tally)
    _keep_failures(tally)
    assert not tally.helper_failures, "the oracle harness failed:\n" + "\n".join(tally.helper_failures[:20])
    assert tally.cases > 1000
    assert not tally.mismatches, f"{len(tally.mismatches)} mismatches:\n" + "\n".join(tally.mismatches[:30])
