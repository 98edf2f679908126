"""The comparison itself (no Node): every key of either side, Pi's throws listed, harness failures kept."""

from __future__ import annotations

from tests.parity.compare import Tally, check_session, compare_answer
from tests.parity.strategies import to_jsonl_lines


def test_a_key_on_one_side_only_is_a_mismatch() -> None:
    tally = Tally()
    compare_answer("case", {"a": 1, "prepare": {"x": 1}}, {"a": 1, "b": 2, "prepare": {"x": 1, "y": None}}, tally)
    assert tally.cases == 1
    assert len(tally.mismatches) == 2
    assert any("b: only on Pi's side" in m for m in tally.mismatches)
    assert any("prepare.y: only on Pi's side" in m for m in tally.mismatches)
    tally = Tally()
    compare_answer("case", {"a": 1, "extra": 0}, {"a": 1}, tally)
    assert tally.mismatches == ["case extra: only on our side (0)"]


def test_pi_throws_are_listed_with_the_error_and_skip_only_their_fields() -> None:
    tally = Tally()
    pi = {"context": None, "estimate_tokens": None, "prepare": {"x": 2}, "errors": {"context": "TypeError: boom"},
          "error": "TypeError: boom"}
    compare_answer("case", {"context": [], "estimate_tokens": [], "prepare": {"x": 1}}, pi, tally)
    assert tally.pi_throws == ["case context: TypeError: boom"]
    assert tally.mismatches == ["case prepare.x: ours=1 pi=2"]  # the other fields are still compared


def test_oracle_harness_failure_is_recorded() -> None:
    lines = to_jsonl_lines([{"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"}])
    tally = Tally()
    check_session("0", "s", lines, [{"session_id": "s", "query_index": 0, "at_index": 0, "helper_error": "bug"}], tally)
    assert tally.helper_failures == ["s v0 at=0 keep=None: bug"]
    assert tally.cases == 0
