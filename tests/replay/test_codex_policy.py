"""`replay --policy codex`: Codex 0.171's rule (policies/codex.py) replayed by the generic simulator over
the rollouts the real Codex CLI wrote (sample_sessions/codex), and the rule's parts on small
synthetic transcripts with hand-derived numbers."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from sessiontools.policies.base import Candidate, CountView, PolicySettings
from sessiontools.policies.codex import (
    CodexPolicy,
    approx_tokens,
    configured_window,
    item_bytes,
)
from sessiontools.replay.records import ReplayRun
from sessiontools.replay.session import run_record
from sessiontools.replay.transcripts import replay_transcript
from sessiontools.replay.walk import simulate_path
from sessiontools.transcript.load import load_transcript
from sessiontools.transcript.model import (
    Message,
    Request,
    Role,
    TranscriptPath,
    Unit,
    UnitKind,
    Usage,
)

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions" / "codex"
MANIFEST = json.loads((SAMPLES / "manifest.json").read_text())
PAIR = ("codex-pair-a", "codex-pair-b")


def _replay(name: str, limit_of: str) -> tuple[TranscriptPath, ReplayRun]:
    t = load_transcript(SAMPLES / f"{name}.jsonl")
    path = t.main
    assert path is not None
    window = configured_window(t.settings["model_context_window"])
    assert window == MANIFEST[limit_of]["spec"]["context_window"]
    limit = MANIFEST[limit_of]["spec"]["auto_compact_limit"]
    extra = (("auto_compact_limit", limit),) if limit is not None else ()
    return path, simulate_path(path, CodexPolicy(), PolicySettings(window, extra=extra))


@pytest.mark.parametrize("name", PAIR)
def test_recorded_settings_reproduce_every_compaction(name: str) -> None:
    """At the recorded window and limit every compaction is where Codex put it (after the same item),
    its tokens before within 1%, none extra."""
    path, run = _replay(name, name)
    facts = MANIFEST[name]["facts"]["compactions"]
    assert len(path.compactions) == len(facts) == run.recorded_match.recorded
    assert run.recorded_match.matched == run.recorded_match.recorded and len(run.compactions) == run.recorded_match.recorded
    for sim, rec, fact in zip(run.compactions, path.compactions, facts, strict=True):
        assert sim.matches_recorded
        assert rec.tokens_before == fact["tokens_before"]
        assert abs(sim.tokens_before - fact["tokens_before"]) <= 0.01 * fact["tokens_before"]
        # the count at the trigger is Codex's own: tokens before + its estimate of the newer items
        assert sim.pi_view_at_trigger >= MANIFEST[name]["effective_limit"]


@pytest.mark.parametrize("name", PAIR)
def test_kept_messages_are_codex_replacement_history(name: str) -> None:
    """What the policy keeps at each compaction is, message for message, the replacement history Codex
    wrote (earlier user prompts, the initial context, the current prompt), the base instructions
    (sent on every request, message 0) aside."""
    path, run = _replay(name, name)
    for sim, rec in zip(run.compactions, path.compactions, strict=True):
        kept = Counter(path.messages[i].text for i in sim.kept if i != 0)
        recorded = Counter(path.messages[i].text for a, b in rec.kept for i in range(a, b))
        assert kept == recorded


@pytest.mark.parametrize(("name", "other"), [PAIR, PAIR[::-1]])
def test_each_recording_predicts_the_other(name: str, other: str) -> None:
    """One recording of the pair, replayed with the other's limit, predicts the other recording:
    the same number of compactions, agent prompt tokens within 5%."""
    _, run = _replay(name, other)
    other_path = load_transcript(SAMPLES / f"{other}.jsonl").main
    assert other_path is not None
    assert len(run.compactions) == len(other_path.compactions) == MANIFEST[other]["facts"]["compaction_calls"]
    recorded_prompt = sum(r.usage.prompt for r in other_path.requests)
    assert abs(run.billed_input - recorded_prompt) <= 0.05 * recorded_prompt


def test_overflow_sample_fails_its_turns() -> None:
    """The provider's window is below Codex's limit: every recorded context_length_exceeded fails the
    turn (Codex is never reactive), and nothing compacts. Their contexts fit the configured window,
    so they are provider rejections, not overflows (issue 24)."""
    path, run = _replay("codex-overflow", "codex-overflow")
    assert MANIFEST["codex-overflow"]["facts"]["overflows"] == len(path.overflows) == 6
    assert run.compactions == []
    assert run.provider_rejections == run.failed_recoveries == 6 and run.overflows == 0
    assert run.peak_truth <= run.settings.context_window


def test_replay_records_of_a_rollout() -> None:
    """The JSON records: the default policy of a rollout is codex, the default window the configured
    one, and a grid of limits gives one run per limit."""
    t = load_transcript(SAMPLES / "codex-pair-a.jsonl")
    recs = [run_record(tr, run) for tr in replay_transcript(t, windows=None, reserves=[0], keeps=[0], policy=None,
                                                              limits=[17000, 19500]) for run in tr.runs]
    assert [r["settings"]["policy"] for r in recs] == ["codex", "codex"]
    assert [r["settings"]["context_window"] for r in recs] == [64000, 64000]
    assert [r["settings"]["threshold"] for r in recs] == [17000, 19500]
    assert [r["metrics"]["compactions"] for r in recs] == [5, 3]
    assert recs[0]["recorded_match"] == {"recorded": 5, "matched": 5, "missed": 0, "extra": 0}


# --- the rule's parts, by hand ---------------------------------------------------------------------

def test_threshold_is_the_explicit_limit_capped_at_90_percent() -> None:
    p = CodexPolicy()
    assert p.threshold(PolicySettings(64000)) == 57600
    assert p.threshold(PolicySettings(64000, extra=(("auto_compact_limit", 17000),))) == 17000
    assert p.threshold(PolicySettings(64000, extra=(("auto_compact_limit", 60000),))) == 57600
    assert configured_window(60800) == 64000 and configured_window(190000) == 200000


def test_count_and_fires() -> None:
    """count = last total + ceil(bytes/4) per trailing item; compacts at count >= limit."""
    p = CodexPolicy()
    view = CountView(16111.0, [(0, 5224), (0, 3)])  # 1306 + 1
    assert p.count(view) == 16111 + 1306 + 1
    assert p.tokens_before(view) == 16111
    assert p.fires(17000, 17000) and p.fires(17001, 17000) and not p.fires(16999, 17000)
    assert p.count(CountView(None, (), [(0, 8), (0, 9)])) == 2 + 3  # no usage yet: every item
    assert approx_tokens(0) == 0 and approx_tokens(1) == 1 and approx_tokens(4) == 1 and approx_tokens(5) == 2


def test_item_bytes() -> None:
    """A tool output: len(call_id) + UTF-8 bytes of its text (measured on 0.171); other items: their
    compact JSON without `id` and the internal metadata."""
    assert item_bytes({"type": "function_call_output", "id": "fco_1", "call_id": "call_1", "output": "h\u00e9\nx"}) == 6 + 5
    msg = {"type": "message", "id": "m1", "role": "user", "content": [{"type": "input_text", "text": "hi"}],
           "internal_chat_message_metadata_passthrough": {"turn_id": "t"}}
    assert item_bytes(msg) == len('{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}')
    assert item_bytes({"type": "reasoning", "encrypted_content": "x" * 4000}) == 3000 - 650


def _cand(index: int, role: str, text: str) -> Candidate:
    m = Message(index, None, index + 1, Role(role), (Unit(UnitKind.TEXT, text),))
    return Candidate(index, role, True, 0.0, m)


def test_keep_initial_context_and_recent_user_messages() -> None:
    """Kept: system/developer messages, contextual user messages, and real user messages newest first
    up to 20,000 tokens (bytes/4), the one that reaches the budget included (truncated when over)."""
    cands = [_cand(0, "system", "S"), _cand(1, "user", "<environment_context>x</environment_context>"),
             _cand(2, "user", "a" * 4000), _cand(3, "assistant", "ok"), _cand(4, "user", "b" * 60000),
             _cand(5, "tool", "out"), _cand(6, "user", "c" * 20000), _cand(7, "assistant", "done")]
    kept = CodexPolicy().keep(cands, PolicySettings(64000))
    assert kept.indices == (0, 1, 4, 6)  # c: 5000, b: 15000 -> budget spent; a dropped
    cands[4] = _cand(4, "user", "b" * 64000)  # 16000 > 15000 left: kept, truncated
    kept = CodexPolicy().keep(cands, PolicySettings(64000))
    assert kept.indices == (0, 1, 4, 6) and kept.notes == ["user message 4 truncated to 15000 tokens"]


def _codex_path() -> TranscriptPath:
    """system; prompt; call; tool output (call id c1, 4000 bytes); final answer; new prompt (8000
    bytes); answer. Requests: 1000+50 (call), 2100+50 (final answer), 4200+50."""
    def msg(i: int, role: Role, text: str, raw: dict | None) -> Message:
        return Message(i, None, i + 1, role, (Unit(UnitKind.TEXT, text),), raw=raw)

    call = {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c1"}
    msgs = (
        msg(0, Role.SYSTEM, "S" * 400, None),
        msg(1, Role.USER, "u" * 400, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "u" * 400}]}),
        msg(2, Role.ASSISTANT, "exec_command {}", call),
        msg(3, Role.TOOL, "o" * 3998, {"type": "function_call_output", "call_id": "c1", "output": "o" * 3998}),
        msg(4, Role.ASSISTANT, "done", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}),
        msg(5, Role.USER, "v" * 8000, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "v" * 8000}]}),
        msg(6, Role.ASSISTANT, "ok", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}),
    )
    reqs = (Request(2, 3, Usage(1000, 0, 0, 50), ((0, 2),)), Request(4, 5, Usage(2100, 0, 0, 50), ((0, 4),)),
            Request(6, 7, Usage(4200, 0, 0, 50), ((0, 6),)))
    return TranscriptPath(None, msgs, reqs, (), ())


@pytest.mark.parametrize(("limit", "after"), [(2049, [3]), (2050, [3]), (2051, [4]), (2150, [4]), (2151, [])])
def test_mid_turn_and_pre_turn_checks(limit: int, after: list[int]) -> None:
    """Mid-turn (before the follow-up of the tool call): 1050 + ceil((2 + 3998)/4) = 2050. Pre-turn
    (before the next prompt is recorded): 2100 + 50 = 2150, the new 8000-byte prompt not counted."""
    run = simulate_path(_codex_path(), CodexPolicy(), PolicySettings(100000, extra=(("auto_compact_limit", limit),)))
    assert [c.parent_base_index for c in run.compactions][:1] == after
    if after:
        assert run.compactions[0].tokens_before == (1050 if after == [3] else 2150)


# --- the command line ------------------------------------------------------------------------------

def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict, str]:
    from sessiontools.cli import main

    code = main([*args, "--format", "json", "--jobs", "1"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}, err


def test_cli_replays_rollouts_with_codex_by_default(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONTOOLS_CACHE_DIR", str(tmp_path))
    code, doc, _ = _cli(capsys, "replay", str(SAMPLES / "codex-pair-b.jsonl"), "--auto-compact-limit", "19500")
    assert code == 0
    (run,) = doc["runs"]
    assert run["agent"] == "codex" and run["settings"]["policy"] == "codex"
    assert run["recorded_match"] == {"recorded": 3, "matched": 3, "missed": 0, "extra": 0}
    assert [c["tokens_before"] for c in run["compactions"]] == [18580, 19683, 19119]


def test_cli_cross_agent(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's rule over a Pi session, and Pi's policy over a rollout (both by the generic simulator)."""
    monkeypatch.setenv("SESSIONTOOLS_CACHE_DIR", str(tmp_path))
    pi_file = SAMPLES.parent / "pi1-pair-a.jsonl"
    code, doc, _ = _cli(capsys, "replay", str(pi_file), "--policy", "codex", "--context-window", "24000",
                        "--auto-compact-limit", "16000")
    assert code == 0
    (run,) = doc["runs"]
    assert run["agent"] == "pi" and run["settings"]["threshold"] == 16000 and run["metrics"]["compactions"] >= 1
    code, doc, _ = _cli(capsys, "replay", str(SAMPLES / "codex-pair-a.jsonl"), "--policy", "pi-1",
                        "--reserve", "48000", "--keep-recent", "4000")
    assert code == 0
    (run,) = doc["runs"]
    assert run["agent"] == "codex" and run["settings"]["policy"] == "pi-1"
    assert run["settings"]["context_window"] == 64000 and run["metrics"]["compactions"] >= 1


def test_each_message_is_sized_once_per_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every check point sums its whole context; each message's size and truth are computed once per
    walk, not once per check point (a 3,300-line rollout took 7 s when they were recomputed)."""
    calls: Counter[int] = Counter()
    size = CodexPolicy.size

    def counted(self: CodexPolicy, message: Message) -> tuple[int, int]:
        calls[message.index] += 1
        return size(self, message)

    monkeypatch.setattr(CodexPolicy, "size", counted)
    path, run = _replay("codex-pair-a", "codex-pair-a")
    assert run.check_points > 10 and calls and max(calls.values()) == 1


def test_codex_window_when_the_rollout_records_none() -> None:
    from sessiontools.policies.codex import codex_policy
    from sessiontools.policies.codex_rules import rule_for

    assert codex_policy("0.63.0", "gpt-5.1-codex-max").default_window() == 272000
    assert codex_policy(None, "codex-mini").default_window() == 272000
    assert codex_policy(None, "lab-model").default_window() is None
    assert rule_for("0.63.0").reported_window_fraction == 0.95 and rule_for(None).limit_fraction == 0.9


def test_the_configured_window_is_read_by_the_policy_not_by_an_agent_test() -> None:
    """A rollout records 95% of its configured window: Codex's policy reads it back
    (`Policy.recorded_window`); other policies read nothing from a file's settings, and
    `replay.transcripts` names no agent."""
    from sessiontools.policies.codex import codex_policy
    from sessiontools.policies.pi.policy import pi_policy

    assert codex_policy(None, None).recorded_window({"model_context_window": 60800}) == 64000
    assert codex_policy(None, None).recorded_window({"model_context_window": True}) is None
    assert codex_policy(None, None).recorded_window({}) is None
    assert pi_policy("pi-1").recorded_window({"model_context_window": 60800}) is None
    src = (Path(__file__).resolve().parents[2] / "sessiontools" / "replay" / "transcripts.py").read_text()
    assert '"codex"' not in src and "Agent.CODEX" not in src
