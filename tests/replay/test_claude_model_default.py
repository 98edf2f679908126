"""The "model-default" auto-compact window of the native releases (read in the JS their binaries embed):
2.1.167 - 2.1.222 give claude-sonnet-4-6 and claude-opus-4-6 (2.1.221 on also claude-opus-4-8 and
claude-opus-5) W = min(window, 200000) when their window is below 1M, which counts as a configured
window, so the 2.1.153 row's threshold runs. Synthetic files, no text from real ones."""

from __future__ import annotations

import pytest

from sessiontools.policies.base import PolicyName
from sessiontools.policies.claude_code_recorded import default_policy
from sessiontools.policies.claude_code_rules import model_default_window, model_family
from sessiontools.read.claude_code import parse_bytes
from sessiontools.transcript.claude_code import claude_transcript
from tests.read.test_claude_code import _asst, _bytes, _result, _tool_use, _user
from tests.replay.test_claude_code_real_shapes import _replay, _v


def test_which_release_gives_which_model_a_window() -> None:
    assert model_default_window("2.1.167", "claude-opus-4-6") == 200_000
    assert model_default_window("2.1.167", "claude-sonnet-4-6-20260101") == 200_000  # the family counts
    assert model_default_window("2.1.160", "claude-opus-4-6") is None  # not yet
    assert model_default_window("2.1.167", "claude-opus-4-8") is None
    assert model_default_window("2.1.221", "claude-opus-4-8") == 200_000
    assert model_default_window("2.1.222", "claude-opus-5") == 200_000
    assert model_default_window("2.1.167", "claude-opus-4-6", window=1_000_000) is None  # a 1M window: none
    assert model_default_window("2.1.332", "claude-opus-4-6") is None  # decided otherwise, not decoded
    assert model_default_window(None, "claude-opus-4-6") is None
    assert model_family("anthropic/claude-opus-4.6[1m]") == "claude-opus-4-6"
    assert model_family("claude-sonnet-4") == "claude-sonnet-4-0"


def _file(version: str, model: str, cache_read: int = 100_000, result_chars: int = 4_000) -> list:
    lines = [_user("1u", None, "task"),
             _asst("1a", "1u", "msg_1", [_tool_use("t1", file_path="/w/a.py")], usage=(10, cache_read, 0, 100),
                   model=model),
             _user("1r", "1a", _result("t1", "x" * result_chars)),
             _asst("2a", "1r", "msg_2", [{"type": "text", "text": "done"}], usage=(10, cache_read + 1_000, 0, 50),
                   model=model)]
    return _v(lines, version)


@pytest.mark.parametrize(("version", "model", "want"), [
    ("2.1.167", "claude-opus-4-6", PolicyName.CLAUDE_CODE),
    ("2.1.167", "claude-opus-4-8", PolicyName.CLAUDE_CODE_REACTIVE),
    ("2.1.221", "claude-opus-4-8", PolicyName.CLAUDE_CODE),
    ("2.1.160", "claude-opus-4-6", PolicyName.CLAUDE_CODE_REACTIVE),
    ("2.1.332", "claude-opus-4-6", PolicyName.CLAUDE_CODE_REACTIVE),
])
def test_default_policy_follows_the_model_default(version: str, model: str, want: PolicyName) -> None:
    t = claude_transcript(parse_bytes(_bytes(_file(version, model)), "x.jsonl"))
    assert default_policy(t) == want


def test_no_model_default_at_1m_or_when_auto_compact_was_off() -> None:
    big = claude_transcript(parse_bytes(_bytes(_file("2.1.167", "claude-opus-4-6", cache_read=250_000)), "x.jsonl"))
    assert default_policy(big) == PolicyName.CLAUDE_CODE_REACTIVE  # answered above 200k: a 1M window
    # 170,110 + 4,000 chars / 4 >= 167,000 before the second request, sent without a compaction: off
    off = claude_transcript(parse_bytes(_bytes(_file("2.1.167", "claude-opus-4-6", cache_read=170_000)), "x.jsonl"))
    assert default_policy(off) == PolicyName.CLAUDE_CODE_REACTIVE


def test_a_smaller_window_compacts_at_its_threshold() -> None:
    """The what-if a user asks of such a file: at a 120k window (T = 87,000) 2.1.167 with opus-4-6
    compacts before its second request (its count 101,110 + 1,000); 2.1.160 gives no window and never does."""
    from sessiontools.replay.session import run_record
    from sessiontools.replay.transcripts import replay_transcript

    def compactions(version: str) -> int:
        t = claude_transcript(parse_bytes(_bytes(_file(version, "claude-opus-4-6")), "x.jsonl"))
        (rec,) = [run_record(tr, run) for tr in replay_transcript(t, windows=[120_000], reserves=[0], keeps=[0],
                                                                   policy=None) for run in tr.runs]
        return len(rec["compactions"])

    assert compactions("2.1.167") == 1 and compactions("2.1.160") == 0
    assert _replay(_file("2.1.167", "claude-opus-4-6"))["recorded_match"]["extra"] == 0  # at 200k: below T
