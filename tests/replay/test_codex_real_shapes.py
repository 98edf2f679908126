"""What real Codex rollouts with compactions taught (public backups of `~/.codex`, 0.64 - 0.114, GPT-5.x at
a 272,000 window; none of their text is here): synthetic rollouts of the same shapes, read by the Codex
reader and replayed under the rule of the release they record.

- The count adds the encrypted reasoning of the turns before the newest prompt (codex-rs
  `get_non_last_reasoning_items_tokens`): the API leaves it out of a later turn's input tokens.
- The initial context Codex writes right after a pre-turn compaction comes after the check.
- A compaction where the release has no check point (after a final answer, followed by the user's
  next prompt) is the user's `/compact`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sessiontools.policies.base import CountView, PolicySettings
from sessiontools.policies.codex import approx_tokens, codex_policy, item_bytes, past_reasoning
from sessiontools.read.codex import records_from_objects
from sessiontools.replay.records import CompactionReason
from sessiontools.replay.walk import simulate_path
from sessiontools.transcript.codex import codex_transcript
from sessiontools.transcript.model import TranscriptPath

#: gpt-5.x: `model_context_window` 258,400 reported for the configured 272,000; limit 90% = 244,800.
REPORTED = 258_400
WINDOW = 272_000
LIMIT = 244_800


def enc_for(tokens: int) -> str:
    """An `encrypted_content` whose `estimate_reasoning_length` is `tokens` * 4 bytes."""
    n = -(-(tokens * 4 + 650) * 4 // 3)
    return "A" * n


class Rollout:
    """A rollout written line by line, each line one millisecond (or `at` seconds) after the last."""

    def __init__(self, version: str) -> None:
        self.t = datetime(2026, 3, 1, tzinfo=UTC)
        self.total = 0
        self.lines: list[dict[str, Any]] = []
        self.add("session_meta", {"id": "S", "cwd": "/w", "cli_version": version, "originator": "codex_cli_rs",
                                  "model_provider": "openai", "source": "cli"})
        self.add("turn_context", {"model": "gpt-5.4", "cwd": "/w"})
        self.item({"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": "<environment_context><cwd>/w</cwd></environment_context>"}]})

    def add(self, kind: str, payload: dict[str, Any], after: float = 0.001) -> None:
        self.t += timedelta(seconds=after)
        self.lines.append({"timestamp": self.t.isoformat().replace("+00:00", "Z"), "type": kind, "payload": payload})

    def item(self, payload: dict[str, Any], after: float = 0.001) -> None:
        self.add("response_item", payload, after)

    def msg(self, role: str, text: str, after: float = 0.001) -> None:
        part = "output_text" if role == "assistant" else "input_text"
        self.item({"type": "message", "role": role, "content": [{"type": part, "text": text}]}, after)

    def reasoning(self, tokens: int) -> None:
        self.item({"type": "reasoning", "summary": [], "content": None, "encrypted_content": enc_for(tokens)})

    def count(self, last_total: int) -> None:
        self.total += last_total
        last = {"input_tokens": last_total - 100, "cached_input_tokens": 0, "output_tokens": 100,
                "reasoning_output_tokens": 0, "total_tokens": last_total}
        total = dict(last, total_tokens=self.total, input_tokens=self.total - 100)
        self.add("event_msg", {"type": "token_count", "info": {"last_token_usage": last, "total_token_usage": total,
                                                               "model_context_window": REPORTED}})

    def tool(self, cid: str, last_total: int) -> None:
        """A response asking for a tool (a follow-up is needed: a mid-turn check), then its output."""
        self.item({"type": "function_call", "name": "exec_command", "arguments": '{"cmd":"ls"}', "call_id": cid})
        self.count(last_total)
        self.item({"type": "function_call_output", "call_id": cid, "output": "a.py"})

    def answer(self, last_total: int) -> None:
        self.msg("assistant", "Done.")
        self.count(last_total)

    def remote_compaction(self, after: float = 20.0) -> None:
        """A remote compaction: Codex's estimate of the new history, then the encrypted item."""
        est = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0,
               "total_tokens": 9000}
        self.add("event_msg", {"type": "token_count", "info": {"last_token_usage": est, "total_token_usage": {
            "input_tokens": self.total, "output_tokens": 0, "total_tokens": self.total},
            "model_context_window": REPORTED}}, after)
        history = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Task 1"}]},
                   {"type": "compaction", "encrypted_content": "E" * 4000}]
        self.add("compacted", {"message": "", "replacement_history": history})
        self.add("event_msg", {"type": "context_compacted"})

    def path(self) -> TranscriptPath:
        path = codex_transcript(records_from_objects(self.lines)).main
        assert path is not None
        return path


def replay(r: Rollout, version: str) -> Any:
    return simulate_path(r.path(), codex_policy(version, "gpt-5.4"), PolicySettings(WINDOW))


def mid_turn_rollout(version: str) -> Rollout:
    """Turn 1 thinks 50,000 tokens' worth and ends at a last total of 150,000; turn 2 thinks 30,000 more
    and asks for tools at 170,000 and 200,000: only with turn 1's reasoning (not turn 2's, which its
    own totals hold) does the second check reach the limit (250,000; 220,000 at the first)."""
    r = Rollout(version)
    r.msg("user", "Task 1: refactor the parser")
    r.reasoning(50_000)
    r.answer(150_000)
    r.msg("user", "Task 2: run the tests", after=60)
    r.reasoning(30_000)
    r.tool("c1", 170_000)
    r.tool("c2", 200_000)
    r.remote_compaction()
    r.tool("c3", 12_000)
    r.answer(13_000)
    return r


@pytest.mark.parametrize("version", ["0.64.0", "0.77.0", "0.114.0", "0.171.0"])  # 0.64: a real gpt-5.1-codex-max one
def test_mid_turn_compaction_counts_the_reasoning_of_earlier_turns(version: str) -> None:
    r = mid_turn_rollout(version)
    run = replay(r, version)
    assert run.settings.threshold == LIMIT
    assert (run.recorded_match.recorded, run.recorded_match.matched, run.recorded_match.extra) == (1, 1, 0)
    assert round(run.compactions[0].count_at_trigger) >= 250_000


def test_without_the_reasoning_term_the_compaction_comes_late() -> None:
    """0.63 counts the last response's total alone (its row): the same file is then a miss."""
    run = replay(mid_turn_rollout("0.77.0"), "0.63.0")
    assert run.recorded_match.matched == 0


def test_past_reasoning_stops_at_the_newest_real_prompt() -> None:
    path = mid_turn_rollout("0.77.0").path()
    msgs = [m for m in path.messages if m.line < path.compactions[0].line]  # the history it compacted
    assert past_reasoning(msgs) == 50_000  # turn 1's only: turn 2's reasoning follows its prompt
    assert past_reasoning(msgs[:3]) == 0  # before turn 2's prompt: nothing before the newest prompt
    raw = {"type": "reasoning", "encrypted_content": enc_for(7)}
    assert approx_tokens(item_bytes(raw)) == 7
    # the rule's count: the last total, the earlier turns' reasoning, the items after the last reply
    assert codex_policy("0.77.0").count(CountView(200_000.0, (), (), msgs)) == 250_000
    assert codex_policy("0.63.0").count(CountView(200_000.0, (), (), msgs)) == 200_000


def pre_turn_rollout(version: str) -> Rollout:
    """0.105's shape: turn 1 thinks 50,000 tokens' worth, turn 2 ends at 195,000; the next prompt's turn
    compacts first (195,000 + turn 1's reasoning), then Codex writes its initial context again, then
    the prompt."""
    r = Rollout(version)
    for turn, (thought, total) in enumerate(((50_000, 120_000), (2_000, 195_000)), 1):
        r.add("event_msg", {"type": "task_started", "turn_id": f"T{turn}", "model_context_window": REPORTED})
        r.msg("user", f"Task {turn}: describe the architecture")
        r.reasoning(thought)
        r.answer(total)
        r.add("event_msg", {"type": "task_complete", "turn_id": f"T{turn}"})
    r.add("event_msg", {"type": "task_started", "turn_id": "T3", "model_context_window": REPORTED}, after=110)
    r.remote_compaction(after=31)
    r.msg("developer", "<permissions instructions>never</permissions instructions>")
    r.msg("user", "# AGENTS.md instructions for /w\n\nbe brief")
    r.msg("user", "<environment_context><cwd>/w</cwd></environment_context>")
    r.msg("user", "Task 3: now the execution part")
    r.answer(11_000)
    return r


def test_pre_turn_compaction_precedes_the_initial_context_written_after_it() -> None:
    r = pre_turn_rollout("0.105.0")
    path = r.path()
    run = replay(r, "0.105.0")
    assert (run.recorded_match.recorded, run.recorded_match.matched, run.recorded_match.extra) == (1, 1, 0)
    summary = path.compactions[0].index
    # decided before the re-written context (which follows the summary), at 195,000 + 50,000
    assert run.compactions[0].parent_base_index < summary
    assert round(run.compactions[0].count_at_trigger) == 245_000


def manual_rollout(version: str, gap: float, then_tool: bool = False) -> Rollout:
    """A final answer at 80,734, a compaction 1,000 s later, then the user's prompt `gap` seconds after
    it (or, `then_tool`, a request of the same turn first)."""
    r = Rollout(version)
    r.msg("user", "Task 1")
    r.answer(80_734)
    r.remote_compaction(after=1000)
    if then_tool:
        r.tool("c9", 9_500)
    r.msg("user", "Task 2", after=gap)
    r.answer(10_000)
    return r


CASES = [
    ("0.77.0", 0.5, False, True),  # 0.77 - 0.93 check mid-turn only: before a prompt, only the user compacts
    ("0.64.0", 56.0, False, True),  # the prompt a minute later: not a pre-turn compaction
    ("0.121.0", 56.0, False, True),
    ("0.121.0", 0.001, False, False),  # a pre-turn compaction, written just before its prompt
    ("0.77.0", 0.5, True, False),  # a request of the same turn follows: Codex's own (mid-turn)
]


@pytest.mark.parametrize(("version", "gap", "then_tool", "by_user"), CASES)
def test_the_user_s_compact_is_told_by_where_it_lies(version: str, gap: float, then_tool: bool, by_user: bool) -> None:
    r = manual_rollout(version, gap, then_tool)
    path = r.path()
    pol = codex_policy(version, "gpt-5.4")
    assert pol.user_compactions(path) == (frozenset({0}) if by_user else frozenset())
    run = replay(r, version)
    reasons = [c.reason for c in run.compactions]
    if by_user:  # applied where recorded, not the rule's to reproduce
        assert reasons == [CompactionReason.USER] and run.recorded_match.recorded == 0
    else:
        assert run.recorded_match.recorded == 1


def _lines(r: Rollout) -> Iterator[str]:
    return (json.dumps(o) for o in r.lines)


def test_the_shapes_read_as_codex_rollouts(tmp_path: Any) -> None:
    """The synthetic files are what the reader takes real ones for (sniffed, one compaction each)."""
    from sessiontools.transcript.load import load_transcript

    for name, r in (("mid", mid_turn_rollout("0.77.0")), ("pre", pre_turn_rollout("0.105.0")),
                    ("manual", manual_rollout("0.77.0", 0.5))):
        f = tmp_path / f"rollout-{name}.jsonl"
        f.write_text("\n".join(_lines(r)) + "\n")
        t = load_transcript(f)
        assert t.agent.value == "codex" and t.main is not None and len(t.main.compactions) == 1


def test_estimate_errors_agent_count_has_the_reasoning_term_the_walk_counts() -> None:
    """estimate-error judges the walk's own count (`Policy.checkpoint`): the encrypted reasoning of
    the turns before the newest prompt is in it too, not only in the walk's check points."""
    path = mid_turn_rollout("0.77.0").path()
    pol = codex_policy("0.77.0", "gpt-5.4")
    req = path.requests[2]  # turn 2's second request: the reply before it recorded 170,000
    context = [path.messages[i] for i in req.context_indices()]
    cp = pol.checkpoint(path, req, context)
    assert cp.usage_tokens == 170_000
    assert past_reasoning(context) >= 50_000
    assert cp.tokens - cp.usage_tokens >= past_reasoning(context)
