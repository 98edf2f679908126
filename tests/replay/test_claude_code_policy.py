"""Claude Code's compaction policies (`claude-code`, `claude-code-reactive`), proven on the transcripts
the real CLI (2.1.332) wrote against the lab server (sample_sessions/claude-code/), and unit tests of
the rules with numbers derived by hand from lab/README.md ("When compaction fires").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontools.policies.base import Candidate, CountView, PolicyName, PolicySettings
from sessiontools.policies.claude_code import (
    ClaudeCodePolicy,
    claude_chars,
    claude_code_policy,
    claude_threshold,
)
from sessiontools.policies.claude_code_recorded import default_policy
from sessiontools.replay.neutral import fit_neutral_truth
from sessiontools.replay.records import CompactionReason
from sessiontools.replay.session import run_record
from sessiontools.replay.transcripts import replay_transcript
from sessiontools.replay.walk import simulate_path
from sessiontools.transcript.claude_code import load_claude_transcript
from sessiontools.transcript.model import Message, Role, Trigger, Unit, UnitKind

ROOT = Path(__file__).resolve().parents[2]
DIR = ROOT / "sample_sessions" / "claude-code"
MANIFEST = json.loads((DIR / "manifest.json").read_text())
#: The samples of the pinned 2.1.332 (the older releases' ones: tests/replay/test_claude_code_rules.py).
PINNED = sorted(n for n, m in MANIFEST.items() if not m.get("version"))
#: The model the lab server answers as (not a family 2.1.332 lists: 3 bytes per estimated token).
LAB_MODEL = "claude-opus-5-5"


def _settings(meta: dict, pct: float | None = None) -> tuple[ClaudeCodePolicy, PolicySettings]:
    """The policy and settings a recording was made with (manifest.json)."""
    if meta["auto_window"]:
        p = meta["pct"] if pct is None else pct
        return claude_code_policy("claude-code", model=LAB_MODEL), PolicySettings(meta["auto_window"],
                                                                               extra=(("autocompact_pct", p),))
    return claude_code_policy("claude-code-reactive", model=LAB_MODEL), PolicySettings(meta["server_window"])


def _replay(name: str, pct: float | None = None):  # type: ignore[no-untyped-def]
    path = load_claude_transcript(DIR / f"{name}.jsonl").main
    pol, s = _settings(MANIFEST[name], pct)
    return path, simulate_path(path, pol, s, fit_neutral_truth(path))


# -- the rules, by hand --------------------------------------------------------------------------------

def test_threshold_formula() -> None:
    assert claude_threshold(100000) == 100000 - 20000 - 13000  # min(128000, 20000) reserved for output
    assert claude_threshold(100000, None, 8000) == 100000 - 8000 - 13000
    # the lab's measurements: W = 100000, 14% -> 11200, 15% -> 12000 (issue 16: 15/20/30/35% of 80000)
    assert [claude_threshold(100000, p) for p in (14, 15, 20, 30, 35)] == [11200, 12000, 16000, 24000, 28000]
    assert claude_threshold(100000) == 67000  # E - 13000
    assert claude_threshold(100000, 90) == 67000  # the percentage is capped at E - 13000
    assert claude_threshold(200000, None, 8000) == 200000 - 8000 - 13000
    assert claude_threshold(16000) == claude_threshold(100000) == 67000  # the auto-compact window is >= 100000
    pol = claude_code_policy("claude-code")
    assert pol.threshold(PolicySettings(100000, extra=(("autocompact_pct", 15),))) == 12000
    assert pol.threshold(PolicySettings(100000, extra=(("autocompact_pct", 15), ("max_output_tokens", 4000)))) == 14400


def test_count_tokens_before_and_fires() -> None:
    pol = claude_code_policy("claude-code", model="claude-opus-5-5")  # the lab's model: 3 bytes per token
    # claude-threshold-15's first compaction: last usage 11412, 2058 chars after its first line
    v = CountView(11412, [(2000, 2000), (58, 58)])
    assert pol.count(v) == 11412 + 686  # ceil(2058 / 4 * 4 / 3) = ceil(686.0)
    # the families 2.1.332 lists count 4 bytes per token (and no model)
    assert claude_code_policy("claude-code", model="claude-opus-4-6").count(v) == 11412 + 515
    assert claude_code_policy("claude-code").count(v) == 11412 + 515
    assert pol.tokens_before(v) == 11412 + 515  # ceil(2058 / 4) = 515 -> preTokens 11927
    assert pol.count(CountView(100, [(1, 1)])) == 101 and pol.tokens_before(CountView(100, [(1, 1)])) == 101
    assert pol.count(CountView(None, (), [(300, 300)])) == 100
    assert pol.fires(12000, 12000) and not pol.fires(11999, 12000)  # C >= T
    reactive = claude_code_policy("claude-code-reactive")
    assert reactive.check_points == frozenset() and reactive.reactive
    assert reactive.threshold(PolicySettings(13000)) == 13000
    with pytest.raises(ValueError):
        claude_code_policy("pi-1")


def test_chars_as_claude_code_counts_them() -> None:
    raw = {"type": "assistant", "message": {"content": [
        {"type": "text", "text": "abc"},
        {"type": "thinking", "thinking": "not counted"},
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/w/a.py", "limit": 5}},
    ]}}
    m = Message(0, "u1", 1, Role.ASSISTANT, (Unit(UnitKind.TEXT, "abc"),), raw=raw)
    # text 3 + "Read" 4 + '{"file_path":"/w/a.py","limit":5}' 33 (compact JSON)
    assert claude_chars(m) == 3 + 4 + len('{"file_path":"/w/a.py","limit":5}') == 40
    res = {"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "12345"}]}]}}
    assert claude_chars(Message(1, "u2", 2, Role.TOOL, (), raw=res)) == 5
    # another agent's message: its units' text, thinking left out
    pi = Message(2, "e1", 3, Role.ASSISTANT, (Unit(UnitKind.TEXT, "hello"), Unit(UnitKind.THINKING, "zzz")), raw={})
    assert claude_chars(pi) == 5


def _cands(roles: str, tokens: float = 100.0) -> list[Candidate]:
    names = {"u": "user", "a": "assistant", "t": "tool", "o": "other"}
    return [Candidate(i, names[r], r in "uao", tokens) for i, r in enumerate(roles)]


def test_keep_whole_rounds_of_the_current_turn() -> None:
    pol = claude_code_policy("claude-code")
    s = PolicySettings(100000)
    # prompt, round (a, a, t, t), round (a, t): a threshold compaction keeps the last round
    assert pol.keep_for("threshold", _cands("uaattat"), s).indices == (5, 6)
    assert pol.keep_for("user", _cands("uatua"), s).indices == (4,)  # the final answer after the prompt
    # never the prompt, nothing from earlier turns
    assert pol.keep_for("threshold", _cands("uatatu"), s).indices == ()
    # the turn's prompt was summarised by an earlier compaction of the same turn: nothing kept
    assert pol.keep_for("threshold", _cands("atat"), s).indices == ()
    # reactive: up to 3 rounds while they fit in 0.6 W (here 0.6 x 900 = 540 tokens, 100 per message)
    r = claude_code_policy("claude-code-reactive")
    assert r.keep_for("overflow", _cands("uatatatat"), PolicySettings(10000)).indices == (3, 4, 5, 6, 7, 8)
    assert r.keep_for("overflow", _cands("uatatatat"), PolicySettings(1000)).indices == (3, 4, 5, 6, 7, 8)  # 600
    assert r.keep_for("overflow", _cands("uatatatat"), PolicySettings(900)).indices == (5, 6, 7, 8)
    assert r.keep_for("overflow", _cands("uatatatat"), PolicySettings(100)).indices == (7, 8)  # at least one round
    assert r.keep_for("threshold", _cands("uatatatat"), PolicySettings(10000)).indices == (7, 8)


# -- the recordings ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", PINNED)
def test_recorded_settings_reproduce_every_compaction(name: str) -> None:
    """At the recorded settings every compaction is reproduced at its place (tokens before within 1%),
    none extra; the manual one is replayed as the user's action; what is kept is the recorded count."""
    path, run = _replay(name)
    every = MANIFEST[name]["facts"]["compactions"]
    # the user's own /compact is applied where it was recorded, as recorded (replay's user compactions)
    facts = [f for f in every if f["trigger"] != "manual"]
    auto = [c for c in path.compactions if c.trigger is not Trigger.MANUAL]
    assert sum(c.reason == 'user' for c in run.compactions) == len(every) - len(facts)
    assert run.recorded_match.recorded == len(facts) == len(auto) and run.recorded_match.matched == run.recorded_match.recorded
    policy = [c for c in run.compactions if c.reason != CompactionReason.USER]
    assert len(policy) == len(facts) and all(c.matches_recorded for c in policy)
    for sim, rec, f in zip(policy, auto, facts, strict=True):
        assert abs(sim.tokens_before - f["preTokens"]) <= 0.01 * f["preTokens"], (sim.tokens_before, f["preTokens"])
        want = {"manual": CompactionReason.USER, "auto": CompactionReason.THRESHOLD if MANIFEST[name]["auto_window"]
                else CompactionReason.OVERFLOW}[f["trigger"]]
        assert sim.reason == want
        assert len(sim.kept) == f["preserved"]  # the round model reproduces every recorded preserved segment
        assert sim.parent_base_index == max(i for i in range(rec.index) if path.messages[i].role is not Role.SUMMARY)
    assert run.failed_recoveries == 0
    # the recorded usage is the truth throughout, but for the retries after a reactive compaction
    # (the rejected request is not in the file: its retry's prompt is the model's)
    want = sum(r.usage.prompt for r in path.requests)
    assert sum(p.truth_source == 'model' and not p.overflow for p in run.requests) == run.overflows
    assert abs(run.billed_input - want) <= (0.01 * want if run.overflows else 0), (run.billed_input, want)


def test_reactive_sample_needs_the_reactive_rule() -> None:
    path, run = _replay("claude-reactive")
    assert [c.reason for c in run.compactions] == [CompactionReason.OVERFLOW] * 2 and run.overflows == 2
    # the server counted 13394 and 15801 in the rejected requests (they are not in the file); so much
    # is the replay's own truth at the trigger (recorded usage + attributed tokens of the later messages)
    server = MANIFEST["claude-reactive"]["server"]["too_long"]  # [13394, 15801]
    assert len(server) == 2
    for c, n in zip(run.compactions, server, strict=True):
        assert c.truth_at_trigger > MANIFEST["claude-reactive"]["server_window"]
        assert abs(c.truth_at_trigger - n) <= 0.02 * n, (c.truth_at_trigger, n)
    # without the server's limit nothing fires: a real 200k window never overflows here
    none = simulate_path(path, claude_code_policy("claude-code-reactive"), PolicySettings(200000))
    assert none.compactions == [] and none.overflows == 0


@pytest.mark.parametrize(("name", "other"), [("claude-threshold-15", "claude-threshold-14"),
                                             ("claude-threshold-14", "claude-threshold-15")])
def test_threshold_pair_predicts_each_other(name: str, other: str) -> None:
    """Each recording replayed with the other's percentage predicts the other: compaction count,
    agent prompt tokens within 5%."""
    _, run = _replay(name, pct=MANIFEST[other]["pct"])
    other_path = load_claude_transcript(DIR / f"{other}.jsonl").main
    assert len(run.compactions) == len(other_path.compactions)
    want = sum(r.usage.prompt for r in other_path.requests)
    assert abs(run.billed_input - want) <= 0.05 * want, (run.billed_input, want)
    assert run.overflows == 0


def test_reader_marks_the_reactive_compactions() -> None:
    """A boundary right after a logged request with no response is reactive, without the limit."""
    for name, meta in MANIFEST.items():
        if name == "claude-2.1.63":
            continue  # one boundary written twice (tests/read/test_claude_code_samples.py)
        t = load_claude_transcript(DIR / f"{name}.jsonl")
        threshold = meta["auto_window"] or meta.get("version")
        want = {"manual": Trigger.MANUAL, "auto": Trigger.THRESHOLD if threshold else Trigger.OVERFLOW}
        assert [c.trigger for c in t.main.compactions] == [want[f["trigger"]] for f in meta["facts"]["compactions"]]
        # reactive where the file compacted reactively, and for the manual-only 2.1.332 file (no
        # threshold compaction: no auto-compact window was configured, which 2.1.332's threshold needs)
        assert default_policy(t) == (PolicyName.CLAUDE_CODE_REACTIVE if name in ("claude-reactive", "claude-manual")
                                     else PolicyName.CLAUDE_CODE)


def test_records_for_transcript() -> None:
    t = load_claude_transcript(DIR / "claude-threshold-15.jsonl")
    (tr,) = replay_transcript(t, windows=[100000], reserves=[0], keeps=[0], policy=None,
                              claude={"autocompact_pcts": [15]})
    (rec,) = [run_record(tr, run) for run in tr.runs]
    assert rec["settings"]["policy"] == "claude-code" and rec["settings"]["threshold"] == 12000
    assert rec["recorded_match"] == {"recorded": 3, "matched": 3, "missed": 0, "extra": 0}
    assert [c["tokens_before"] for c in rec["compactions"]] == [11927, 11649, 13207]
    assert rec["metrics"]["compactions"] == 3 and rec["agent"] == "claude-code"
    assert rec["requests_from_recorded_usage"] == 19 and rec["requests_from_model"] == 0


# -- the command line --------------------------------------------------------------------------------

def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict, str]:
    from sessiontools.cli import main

    code = main([*args, "--format", "json", "--jobs", "1"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def test_cli_claude_code_defaults_and_options(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONTOOLS_CACHE_DIR", str(tmp_path))
    code, doc, _ = _cli(capsys, "replay", str(DIR))
    assert code == 0
    pols = {Path(r["session"]).stem: r["settings"]["policy"] for r in doc["runs"]}
    # claude-manual (2.1.332, no auto-compact window configured): that release's threshold needs one
    assert {n: pols[n] for n in PINNED} == {"claude-manual": "claude-code-reactive", "claude-reactive": "claude-code-reactive",
                                            "claude-threshold-14": "claude-code", "claude-threshold-15": "claude-code"}
    assert all(pols[n] == "claude-code" for n in MANIFEST if n not in PINNED)
    code, doc, err = _cli(capsys, "replay", str(DIR / "claude-threshold-15.jsonl"), "--context-window", "100k",
                          "--autocompact-pct", "14,15")
    assert code == 0 and [r["settings"]["autocompact_pct"] for r in doc["runs"]] == [14, 15]
    assert [r["metrics"]["compactions"] for r in doc["runs"]] == [4, 3]
    assert doc["runs"][1]["recorded_match"]["matched"] == 3
    assert "best setting in this grid (fewest overflows, then cost): W 100,000, auto-compact at 15%" in err
    assert "3/3 recorded compactions reproduced" in err  # the chosen setting's, not summed over the grid
    code, doc, _ = _cli(capsys, "replay", str(DIR / "claude-reactive.jsonl"), "--context-window", "13000")
    assert code == 0 and doc["runs"][0]["metrics"]["overflow_compactions"] == 2
    assert doc["runs"][0]["recorded_match"] == {"recorded": 2, "matched": 2, "missed": 0, "extra": 0}
    code, _, err = _cli(capsys, "replay", str(DIR / "claude-reactive.jsonl"), "--autocompact-pct", "0")
    assert code == 2 and "--autocompact-pct" in err


def test_cli_cross_agent(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONTOOLS_CACHE_DIR", str(tmp_path))
    # Claude Code's policy over a Pi session
    pi = ROOT / "sample_sessions" / "pi1-threshold-5x.jsonl"
    code, doc, _ = _cli(capsys, "replay", str(pi), "--policy", "claude-code", "--context-window", "100k",
                        "--autocompact-pct", "10")
    assert code == 0 and doc["runs"][0]["agent"] == "pi" and doc["runs"][0]["settings"]["threshold"] == 8000
    assert doc["runs"][0]["metrics"]["compactions"] >= 1
    # Pi's policies over a Claude Code transcript
    code, doc, _ = _cli(capsys, "replay", str(DIR / "claude-threshold-15.jsonl"), "--policy", "pi-1",
                        "--context-window", "16000", "--reserve", "4000", "--keep-recent", "4000")
    assert code == 0 and doc["runs"][0]["settings"]["policy"] == "pi-1" and doc["runs"][0]["agent"] == "claude-code"
    assert doc["runs"][0]["metrics"]["compactions"] >= 1


def test_reader_rejected_request_before_a_boundary_is_reactive() -> None:
    """A boundary right after an `api-request` line with no response: reactive; with a response (or a
    tool result) in between: threshold."""
    from sessiontools.read.claude_code import parse_bytes
    from sessiontools.transcript.claude_code import claude_transcript
    from tests.read.test_claude_code import _basic, _bytes, _line, _summary_text, _user

    def lines(api_request_before: bool) -> list:
        out = _basic()
        if api_request_before:
            out.append({"type": "api-request", "sessionId": out[0]["sessionId"], "id": "req-1", "params": {}})
        return out + [
            _line("b1", None, "system", subtype="compact_boundary", logicalParentUuid="a5",
                  compactMetadata={"trigger": "auto", "preTokens": 12345, "postTokens": 4000}),
            _user("s1", "b1", _summary_text("## Goal\n- read a.py"), isCompactSummary=True),
        ]

    rejected = claude_transcript(parse_bytes(_bytes(lines(True)), "x.jsonl"))
    assert [c.trigger for c in rejected.main.compactions] == [Trigger.OVERFLOW]
    assert default_policy(rejected) == PolicyName.CLAUDE_CODE_REACTIVE
    threshold = claude_transcript(parse_bytes(_bytes(lines(False)), "x.jsonl"))
    assert [c.trigger for c in threshold.main.compactions] == [Trigger.THRESHOLD]
    assert default_policy(threshold) == PolicyName.CLAUDE_CODE
