"""Claude Code's rule per CLI version (`policies.claude_code_rules`), proven on the multi-version lab
samples (`sample_sessions/claude-code/claude-<version>.jsonl`: one workload recorded by the real CLI
of each release at CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=14 and the model's own 200k window), and the
thresholds Claude Code users run at (155k / 167k on the 200k models) by hand from the rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontools.policies.base import PolicySettings
from sessiontools.policies.claude_code import claude_code_policy
from sessiontools.policies.claude_code_rules import (
    NEWEST,
    RULES,
    Count,
    Keeps,
    context_window,
    js_round,
    output_reserve,
    rule_for,
    threshold,
)
from sessiontools.policies.version import parse_version
from sessiontools.replay.session import run_record
from sessiontools.replay.transcripts import replay_transcript
from sessiontools.transcript.claude_code import load_claude_transcript

ROOT = Path(__file__).resolve().parents[2]
DIR = ROOT / "sample_sessions" / "claude-code"
MANIFEST = json.loads((DIR / "manifest.json").read_text())
VERSIONED = sorted(n for n, m in MANIFEST.items() if m.get("version"))



def _records(t, **kw):  # type: ignore[no-untyped-def]
    """The replay JSON records of every path and setting of `t` (`replay_transcript` gives typed replays)."""
    return [run_record(tr, run) for tr in replay_transcript(t, **kw) for run in tr.runs]

def test_rows_and_lookup() -> None:
    assert [r.first for r in RULES] == ["2.0.0", "2.0.20", "2.1.2", "2.1.21", "2.1.45", "2.1.74", "2.1.75", "2.1.98",
                                        "2.1.140", "2.1.153"]
    assert rule_for("2.1.73") is rule_for("2.1.45") and rule_for("2.1.74").count is Count.USAGE_ROUND4_ALL
    # 2.1.45 (cli.js; 2.1.44 not yet) counts the attachment lines; the rows read after it too
    assert rule_for("2.1.44") is rule_for("2.1.21") and not rule_for("2.1.44").counts_attachments
    assert all(r.counts_attachments for r in RULES[4:-1]) and not NEWEST.counts_attachments
    assert not rule_for("2.1.74").auto_compact_window_env and rule_for("2.1.75").auto_compact_window_env
    assert not rule_for("2.1.97").counts_own_reply and rule_for("2.1.98").counts_own_reply
    assert rule_for("2.1.139") is rule_for("2.1.112") and rule_for("2.1.222") is NEWEST
    # the native releases read: 2.1.140 - 2.1.152 the bytes-per-token estimate without the window gate,
    # 2.1.153 on the gate (2.1.221 is NEWEST's)
    assert rule_for("2.1.140").count is Count.USAGE_ROUND_BPT_ALL and not rule_for("2.1.152").threshold_needs_window
    assert rule_for("2.1.140").counts_own_reply and rule_for("2.1.152").keeps is Keeps.READ_FILES
    assert rule_for("2.1.153") is NEWEST and rule_for("2.1.221") is NEWEST
    assert NEWEST.threshold_needs_window
    assert not any(r.threshold_needs_window for r in RULES if r is not NEWEST)
    assert rule_for("2.0.2").count is Count.USAGE and not rule_for("2.0.19").pct_override
    assert rule_for("2.0.20").pct_override and rule_for("2.1.1").count is Count.USAGE
    assert rule_for("2.1.2").count is Count.USAGE_ROUND4 and rule_for("2.1.20").output_reserve_cap is None
    assert rule_for("2.1.21").output_reserve_cap == 20000 and rule_for("2.1.63") is rule_for("2.1.45")
    assert rule_for("2.1.332") is NEWEST and rule_for("2.2.0") is NEWEST
    assert rule_for(None) is NEWEST and rule_for("unknown") is NEWEST and rule_for("1.0.128") is RULES[0]
    assert rule_for("2.1.63").keeps is Keeps.READ_FILES and NEWEST.keeps is Keeps.LAST_ROUND
    assert all(r.keeps is Keeps.READ_FILES for r in RULES if r is not NEWEST)
    assert threshold(rule_for("2.1.128"), 200000, "claude-sonnet-4-6") == 167000  # the real 2.1.1xx files
    assert parse_version("2.1.63") == (2, 1, 63) and parse_version("0.171.0-alpha.2") == (0, 171, 0)
    assert all(r.how for r in RULES)


def test_thresholds_users_run_at() -> None:
    """2.0.x - 2.1.20: 200000 - min(32000, model max) - 13000; 2.1.21 on: the reserve capped at 20000."""
    for v in ("2.0.2", "2.0.76", "2.1.12", "2.1.20"):
        assert threshold(rule_for(v), 200000, "claude-opus-4-5-20251101") == 155000
        assert threshold(rule_for(v), 200000, "claude-sonnet-4-5-20250929") == 155000
    assert threshold(rule_for("2.1.12"), 200000, "claude-3-5-haiku-20241022") == 200000 - 8192 - 13000
    for v in ("2.1.21", "2.1.63"):
        assert threshold(rule_for(v), 200000, "claude-opus-4-6") == 167000
    assert output_reserve(rule_for("2.1.63"), "claude-3-5-haiku-20241022") == 8192  # below the cap
    # the PCT override: min(floor(E x P / 100), E - 13000); ignored before 2.0.20
    assert threshold(rule_for("2.1.12"), 200000, "claude-sonnet-4-5", 14) == 23520  # floor(168000 x 0.14)
    assert threshold(rule_for("2.1.21"), 200000, "claude-sonnet-4-5", 14) == 25200  # floor(180000 x 0.14)
    assert threshold(rule_for("2.0.10"), 200000, "claude-sonnet-4-5", 14) == 155000
    assert threshold(rule_for("2.1.63"), 200000, "claude-sonnet-4-5", 95) == 167000
    # the window: 1M only for [1m] ids; the catalogue's 1M for claude-opus-4-6 is not Claude Code's
    assert context_window("claude-opus-4-6") == context_window("claude-sonnet-4-6") == 200000
    assert context_window("claude-sonnet-4-5[1m]") == 1000000 and context_window(None) == 200000
    assert threshold(rule_for("2.1.63"), context_window("claude-opus-4-6[1m]"), "claude-opus-4-6[1m]") == 967000


def test_js_estimate() -> None:
    assert [js_round(n, 4) for n in (0, 1, 2, 3, 4, 5, 6, 10)] == [0, 0, 1, 1, 1, 1, 2, 3]  # Math.round, halves up
    assert [js_round(n, 3) for n in (0, 1, 2, 3, 4, 5, 6, 10)] == [0, 0, 1, 1, 1, 2, 2, 3]  # 3 bytes per token
    # 2.1.140 - 2.1.152: per block Math.round(len / bytes per token), 4 for a listed family, else 3
    from sessiontools.transcript.model import Message as _M
    from sessiontools.transcript.model import Role as _R

    blocks = {"type": "assistant", "message": {"content": [{"type": "text", "text": "a" * 10},
                                                           {"type": "thinking", "thinking": "b" * 5}]}}
    m = _M(0, "b", 1, _R.ASSISTANT, (), raw=blocks)
    listed = claude_code_policy("claude-code", "2.1.150", "claude-sonnet-4-5-20250929")
    other = claude_code_policy("claude-code", "2.1.150", "claude-opus-4-8")
    assert listed.size(m)[0] == 4 * (3 + 1) and other.size(m)[0] == 4 * (3 + 2)  # round(2.5), round(1.25) / 3.3, 1.7
    pol = claude_code_policy("claude-code", "2.1.12")
    from sessiontools.transcript.model import Message, Role

    raw = {"type": "assistant", "message": {"content": [
        {"type": "text", "text": "abcdef"},  # round(1.5) = 2
        {"type": "tool_use", "id": "t", "name": "Read", "input": {"file_path": "/w/a.py"}},  # not counted
        {"type": "thinking", "thinking": "zzzz"},
    ]}}
    assert pol.size(Message(0, "u", 1, Role.ASSISTANT, (), raw=raw))[0] == 4 * 2
    res = {"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "1234567"}, {"type": "text", "text": "12"}]}]}}
    assert pol.size(Message(1, "v", 2, Role.TOOL, (), raw=res))[0] == 4 * (2 + 1)  # per block: round(7/4) + round(2/4)
    from sessiontools.policies.base import CountView

    assert claude_code_policy("claude-code", "2.0.77").count(CountView(1000, [(400, 400)])) == 1000  # usage alone
    assert pol.count(CountView(1000, [(400, 400)])) == 1100 and pol.tokens_before(CountView(1000, [(400, 400)])) == 1100


def _record(name: str, version: str | None = None) -> dict:
    t = load_claude_transcript(DIR / f"{name}.jsonl")
    (rec,) = _records(t, windows=None, reserves=[0], keeps=[0], policy=None,
                               claude={"autocompact_pcts": [MANIFEST[name]["pct"]]}, version=version)
    return rec


@pytest.mark.skipif(not VERSIONED, reason="no multi-version samples")
@pytest.mark.parametrize("name", VERSIONED)
def test_each_version_reproduces_its_recording(name: str) -> None:
    """At the recorded settings (the pct; the window is the CLI's own, not given) every compaction the
    lab server summarised is reproduced, none extra, at the recorded preTokens (2.1.63 counts
    attachment lines too, not modelled: within 1%), the restored files kept. (2.1.63 writes one of its three
    boundaries twice, same preTokens: the reader counts it once.)"""
    meta = MANIFEST[name]
    rec = _record(name)
    n = len(meta["server"]["summarise_prompt_tokens"])
    recorded = load_claude_transcript(DIR / f"{name}.jsonl").main.compactions
    assert rec["settings"]["context_window"] == 200000 and rec["settings"]["threshold"] == meta["threshold"]
    assert rec["recorded_match"] == {"recorded": n, "matched": n, "missed": 0, "extra": 0}
    tol = 0.01 if name == "claude-2.1.63" else 0
    for sim, c in zip(rec["compactions"], recorded, strict=True):
        assert abs(sim["tokens_before"] - c.tokens_before) <= tol * c.tokens_before, (sim["tokens_before"], c.tokens_before)
    # the file records no preserved segment; the replay keeps the restored files (not in the file)
    assert all(c["preserved"] == 0 for c in meta["facts"]["compactions"])
    assert all(0 < c["kept_tokens"] <= 50000 for c in rec["compactions"])


@pytest.mark.skipif(not {"claude-2.1.20", "claude-2.1.21"} <= set(MANIFEST), reason="no bisection pair")
def test_bisection_pair_needs_each_own_rule() -> None:
    """2.1.20 and 2.1.21 ran the same workload at the same percentage; only the output reserve's cap
    differs (T 23520 vs 25200). Each replayed under the other's rule misses."""
    own = [_record(n) for n in ("claude-2.1.20", "claude-2.1.21")]
    swapped = [_record("claude-2.1.20", "2.1.21"), _record("claude-2.1.21", "2.1.20")]
    assert all(r["recorded_match"]["missed"] == r["recorded_match"]["extra"] == 0 for r in own)
    assert [r["settings"]["threshold"] for r in swapped] == [25200, 23520]
    assert all(r["recorded_match"]["missed"] + r["recorded_match"]["extra"] > 0 for r in swapped)


@pytest.mark.skipif("claude-2.0.77" not in MANIFEST, reason="no 2.0.77 sample")
def test_usage_only_count_is_needed() -> None:
    """2.0.77 counts the newest usage alone: 2.1.12's rule (same T, plus the estimate) compacts earlier."""
    mine, other = _record("claude-2.0.77"), _record("claude-2.0.77", "2.1.12")
    assert mine["recorded_match"]["extra"] == mine["recorded_match"]["missed"] == 0
    assert mine["settings"]["threshold"] == other["settings"]["threshold"] == 23520
    assert other["recorded_match"]["missed"] + other["recorded_match"]["extra"] > 0 or \
        [c["tokens_before"] for c in other["compactions"]] != [c["tokens_before"] for c in mine["compactions"]]


def test_the_policy_follows_the_recorded_version() -> None:
    """A 2.1.332 sample keeps the measured rule at the recorded settings; --cli-version changes it."""
    t = load_claude_transcript(DIR / "claude-threshold-15.jsonl")
    assert t.settings["version"] == "2.1.332"
    (rec,) = _records(t, windows=[100000], reserves=[0], keeps=[0], policy=None,
                               claude={"autocompact_pcts": [15]})
    assert rec["settings"]["threshold"] == 12000 and rec["recorded_match"]["extra"] == 0
    (old,) = _records(t, windows=[100000], reserves=[0], keeps=[0], policy=None,
                               claude={"autocompact_pcts": [15]}, version="2.1.12")
    assert old["settings"]["threshold"] == int(68000 * 15 // 100)  # E = 100000 - 32000, no minimum window
    # a Pi session under claude-code ignores Pi's own version field: the newest rule
    pi = claude_code_policy("claude-code")
    assert pi.rule is NEWEST and pi.threshold(PolicySettings(100000, extra=(("autocompact_pct", 15),))) == 12000


def test_cli_version_option(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessiontools.cli import main

    monkeypatch.setenv("SESSIONTOOLS_CACHE_DIR", str(tmp_path))
    f = str(DIR / "claude-threshold-15.jsonl")
    code = main(["replay", f, "--autocompact-pct", "15", "--cli-version", "2.1.63", "--format", "json", "--jobs", "1"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["runs"][0]["settings"]["context_window"] == 200000
    assert doc["runs"][0]["settings"]["threshold"] == 27000  # floor(180000 x 0.15)
    assert main(["replay", f, "--cli-version", "latest", "--format", "json"]) == 2
    assert "--cli-version" in capsys.readouterr().err


def test_auto_compact_off_is_inferred_from_the_file() -> None:
    """A request sent after a response whose usage was already >= T, with no compaction between:
    auto-compact was off (the user compacts by hand); a response >= T followed by a compaction (manual
    or not) is not evidence."""
    from types import SimpleNamespace as NS

    from sessiontools.policies.claude_code_recorded import auto_compact_off

    def req(i: int, total: int) -> NS:
        return NS(index=i, usage=NS(input=0, cache_read=total - 10, cache_write=5, output=5))

    over = NS(requests=[req(0, 100000), req(2, 156000), req(4, 157000)], compactions=[], overflows=(), messages=())
    assert auto_compact_off(over, 155000) and not auto_compact_off(over, 157001)
    raced = NS(requests=[req(0, 100000), req(2, 156000), req(6, 30000)], compactions=[NS(index=4)], overflows=(), messages=())
    assert not auto_compact_off(raced, 155000)  # the user's /compact came first: no check was skipped


def test_auto_compact_switched_off_mid_session_is_found_after_the_last_threshold_compaction() -> None:
    """A real 2.0.76 file compacted twice at its threshold, then `/config` turned auto-compact off and
    44 more requests went out at up to 170k: the first request after the last threshold compaction
    sent with the release's count >= T is where the file shows it off; over-T requests before a
    threshold compaction are not (the CLI compacted after them: on)."""
    from types import SimpleNamespace as NS

    from sessiontools.policies.claude_code_recorded import threshold_off_from
    from sessiontools.transcript.model import Trigger

    def req(i: int, total: int) -> NS:
        return NS(index=i, usage=NS(input=0, cache_read=total - 10, cache_write=5, output=5))

    auto = NS(index=3, trigger=Trigger.THRESHOLD)
    later = NS(requests=[req(0, 100000), req(2, 156000), req(4, 30000), req(6, 150000), req(8, 156000),
                         req(10, 160000)], compactions=[auto], overflows=(), messages=())
    assert threshold_off_from(later, 155000) == 10  # the request sent after the 156k reply at 8
    on = NS(requests=[req(0, 100000), req(2, 156000), req(4, 30000)], compactions=[auto], overflows=(), messages=())
    assert threshold_off_from(on, 155000) is None
    manual_only = NS(requests=later.requests, compactions=[NS(index=3, trigger=Trigger.MANUAL)], overflows=(), messages=())
    assert threshold_off_from(manual_only, 155000) == 10  # the user's /compact came before the send at 4: not evidence


@pytest.mark.skipif(not VERSIONED, reason="no multi-version samples")
def test_the_walk_never_fires_where_the_policy_says_auto_compact_was_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """`Policy.threshold_off_from`: the walk's threshold check points from that message on do not fire;
    the ones before still do (the 2.0.77 sample's compactions, cut off after the first)."""
    from sessiontools.policies.claude_code import ClaudeCodePolicy

    name = "claude-2.0.77"
    full = _record(name)["compactions"]
    assert len(full) >= 2
    t = load_claude_transcript(DIR / f"{name}.jsonl")
    second = t.main.compactions[1].index
    monkeypatch.setattr(ClaudeCodePolicy, "threshold_off_from", lambda self, path: second - 1)
    cut = _record(name)["compactions"]
    assert [c["tokens_before"] for c in cut] == [c["tokens_before"] for c in full][:1]
