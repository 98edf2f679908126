"""A deterministic synthetic corpus of Codex CLI rollouts (0.171 schema) for `make bench`.

Imitates sample_sessions/codex (the real CLI against the lab server): a `session_meta` with the
base instructions, per turn `task_started`, the developer/user messages, `turn_context`, then model
steps: an optional `reasoning` item, a `function_call` (or the final assistant `message`), its
`token_usage_record`, an `item_completed` event carrying the command's output, the
`function_call_output`, and a `token_count` whose usage grows with the context (sometimes
repeated unchanged, as Codex does). When the context passes the limit, a compaction: the
summarisation call (its reply, usage record and count), the `compacted` line (Codex's summary
prefix + the summary, the replacement history, the latest usage record), `turn_context`, the
zero-usage count with Codex's estimate, and the `ContextCompaction` event. Text is English, code
or Chinese (bench/corpus.py's generator); everything comes from the seeded generator.
"""

from __future__ import annotations

import math
import random

import orjson

from bench.corpus import _text
from bench.corpus_agents import Generated, Lines, main, stamp_time

SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its thinking "
    "process. You also have access to the state of the tools that were used by that language model. "
    "Use this to build on the work that has already been done and avoid duplicating work. Here is the "
    "summary produced by the other language model, use the information in this summary to assist with "
    "your own analysis:\n"
)
WINDOW = 258_400
LIMIT = 120_000


def _usage(inp: int, cached: int, out: int) -> dict:
    return {"input_tokens": inp, "cached_input_tokens": cached, "cache_write_input_tokens": 0,
            "output_tokens": out, "reasoning_output_tokens": 0, "total_tokens": inp + out}


class _Rollout:
    def __init__(self, rng: random.Random, n: int) -> None:
        self.rng, self.n = rng, n
        self.f = Lines()
        self.k = 0
        self.lang = rng.choice(["en", "en", "code", "zh"])
        self.ratio = {"en": 1.3, "code": 1.4, "zh": 2.6}[self.lang]
        self.sid = f"0199{n:04x}-0000-7000-8000-{n:012x}"
        self.ctx = 0  # chars of the model-visible history
        self.total = _usage(0, 0, 0)
        self.requests = self.compactions = self.calls = 0
        self.turn = ""
        self.history: list[dict] = []  # user messages (what a compaction keeps)
        self.pending_count: dict = {}
        self.last_prompt = 0

    def line(self, kind: str, payload: dict) -> int:
        self.k += 1
        return self.f.add({"timestamp": stamp_time(self.k), "ordinal": self.k - 1, "type": kind, "payload": payload})

    def text(self, lo: int, hi: int) -> str:
        return _text(self.rng, self.rng.randrange(lo, hi), self.lang)

    def item(self, payload: dict) -> None:
        self.line("response_item", {**payload, "internal_chat_message_metadata_passthrough": {"turn_id": self.turn}})

    def message(self, role: str, text: str) -> dict:
        kind = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "id": f"msg_{self.n:04x}{self.k:06x}", "role": role,
                "content": [{"type": kind, "text": text}]}

    def model_call(self, out_tokens: int, prompt_tokens: int | None = None) -> None:
        """The usage record and the count of one model response."""
        prompt = prompt_tokens or 3000 + math.ceil(self.ratio * self.ctx / 4)
        cached = int(prompt * 0.85)
        last = _usage(prompt, cached, out_tokens)
        self.total = {k: self.total[k] + last[k] for k in self.total}
        self.line("token_usage_record", {"thread_id": self.sid, "turn_id": self.turn,
                                         "response_id": f"resp_{self.n:04x}{self.k:08x}", "usage": last})
        self.pending_count = {"type": "token_count", "info": {
            "total_token_usage": dict(self.total), "last_token_usage": last,
            "last_usage_includes_reasoning": False, "model_context_window": WINDOW},
            "rate_limits": {"limit_id": "codex", "primary": None, "secondary": None}}
        self.last_prompt = prompt

    def count(self) -> None:
        self.line("event_msg", self.pending_count)
        if self.rng.random() < 0.15:  # Codex repeats an unchanged count
            self.line("event_msg", self.pending_count)

    def start(self) -> None:
        base = _text(self.rng, 6000, "en")
        self.line("session_meta", {"id": self.sid, "session_id": self.sid, "timestamp": stamp_time(0),
                                   "cwd": f"/work/bench{self.n}", "originator": "codex_exec", "cli_version": "0.171.0",
                                   "source": "exec", "model_provider": "openai", "base_instructions": {"text": base}})
        self.ctx += len(base)

    def step(self, final: bool) -> None:
        """One model response: maybe reasoning, then a tool call (with its output) or the final answer."""
        rng = self.rng
        self.requests += 1
        if rng.random() < 0.3:
            self.item({"type": "reasoning", "id": f"rs_{self.n:04x}{self.k:06x}",
                       "summary": [{"type": "summary_text", "text": self.text(40, 400)}], "content": None,
                       "encrypted_content": "gAAAA" + "x" * rng.randrange(100, 800)})
        if final:
            reply = self.text(40, 1200)
            self.item({**self.message("assistant", reply), "status": "completed"})
            self.ctx += len(reply)
            self.model_call(rng.randrange(50, 800))
            self.count()
            return
        self.calls += 1
        call = f"call_{self.n:04x}_{self.calls}"
        args = orjson.dumps({"cmd": f"sed -n 1,200p src/mod{rng.randrange(50)}.py", "yield_time_ms": 10000}).decode()
        self.item({"type": "function_call", "status": "completed", "id": f"fc_{call}", "name": "exec_command",
                   "arguments": args, "call_id": call})
        self.model_call(rng.randrange(15, 300))
        output = _text(rng, rng.choice([200, 1500, 6000, 20000]), self.lang)
        self.line("event_msg", {"type": "item_completed", "thread_id": self.sid, "turn_id": self.turn,
                                "item": {"type": "CommandExecution", "id": call, "status": "completed",
                                         "aggregated_output": output, "exit_code": 0}})
        self.item({"type": "function_call_output", "id": f"fco_{call}", "call_id": call,
                   "output": f"Process exited with code 0\nOutput:\n{output}"})
        self.ctx += len(args) + len(output) + 60
        self.count()

    def compact(self) -> None:
        """The summarisation call, the `compacted` line and what Codex writes after it."""
        summary = "## Goal\n" + self.text(600, 3000)
        self.item({**self.message("assistant", summary), "status": "completed"})
        prompt = 3000 + math.ceil(self.ratio * self.ctx / 4)
        self.model_call(self.rng.randrange(400, 1500), prompt_tokens=prompt)
        record = {"response_id": f"resp_{self.n:04x}{self.k:08x}", "usage": self.pending_count["info"]["last_token_usage"]}
        self.count()
        kept = self.history[-8:]
        text = SUMMARY_PREFIX + summary
        replacement = [*kept, self.message("user", text)]
        self.line("compacted", {"message": text, "replacement_history": replacement, "window_number": self.compactions + 1,
                                "latest_token_usage_record": record})
        self.compactions += 1
        self.line("turn_context", {"turn_id": self.turn, "cwd": f"/work/bench{self.n}", "model": "gpt-5.3-codex",
                                   "approval_policy": "never", "summary": "none"})
        self.ctx = sum(len(m["content"][0]["text"]) for m in replacement) + 6000
        estimate = 3000 + math.ceil(self.ratio * self.ctx / 4)
        self.line("event_msg", {"type": "token_count", "info": {
            "total_token_usage": dict(self.total), "last_token_usage": {**_usage(0, 0, 0), "total_tokens": estimate},
            "last_usage_includes_reasoning": True, "model_context_window": WINDOW}})
        self.line("event_msg", {"type": "item_completed", "thread_id": self.sid, "turn_id": self.turn,
                                "item": {"type": "ContextCompaction", "id": f"cc_{self.n:04x}{self.k:06x}"}})

    def turn_(self, t: int) -> None:
        rng = self.rng
        self.turn = f"0199{self.n:04x}-{t:04x}-7000-8000-000000000000"
        self.line("event_msg", {"type": "task_started", "turn_id": self.turn, "model_context_window": WINDOW,
                                "turn_attribution": {"turn_id": self.turn, "turn_trigger": "exec"}})
        if t == 0:
            self.item(self.message("developer", _text(rng, 2500, "en")))
        prompt = self.message("user", self.text(80, 800))
        self.item(prompt)
        self.history.append(prompt)
        self.ctx += len(prompt["content"][0]["text"])
        self.line("turn_context", {"turn_id": self.turn, "cwd": f"/work/bench{self.n}", "model": "gpt-5.3-codex",
                                   "approval_policy": "never", "summary": "none"})
        steps = rng.randrange(1, 9)
        for s in range(steps):
            self.step(final=s == steps - 1)
            if self.last_prompt > LIMIT and s < steps - 1:
                self.compact()
        self.line("event_msg", {"type": "task_complete", "turn_id": self.turn, "last_agent_message": None})


def session(rng: random.Random, n: int, target_bytes: int) -> Generated:
    """One rollout of roughly `target_bytes`."""
    r = _Rollout(rng, n)
    r.start()
    t = 0
    while r.f.size < target_bytes:
        r.turn_(t)
        t += 1
    return Generated({f"rollout-{n:04d}.jsonl": r.f.data()}, r.requests, r.compactions)


if __name__ == "__main__":
    main(session, "bench/corpus-codex", __doc__)
