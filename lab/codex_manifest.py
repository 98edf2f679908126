"""Facts about a Codex rollout computed with plain ``json`` (independent of ``sessiontools``).

Used by ``lab.generate_codex`` for MANIFEST.md and by tests as the reference the reader must match.

* **requests**: ``event_msg``/``token_count`` lines with ``info`` whose ``total_token_usage`` differs
  from the previous such line's (Codex repeats an unchanged count, e.g. before a compaction or when
  a turn ends); the request is ``info.last_token_usage``. A token_count with all-zero
  input/output in ``last_token_usage`` (written right after a compaction, carrying only an estimate in
  ``total_tokens``) is not a request either.
* **compaction calls**: the last request before each ``compacted`` line (the summarisation call);
  the others are agent requests.
* **tokens before** a compaction: ``total_tokens`` of the last agent request before its compaction
  call. **estimate**: ``ceil(bytes / 4)`` of each response item after the newest model-generated item
  (function call, assistant message, reasoning) before the compaction, serialised as
  ``{"type","call_id","output"}`` / ``{"type","role","content"}`` with compact separators and UTF-8 -
  what codex-rs ``estimate_item_token_count`` adds to the last total (approximately: it serialises
  its own struct).
* **user prompts**: user messages whose text is not Codex's own (``NOT_PROMPTS``: context tags,
  AGENTS.md, the apply_patch warning of 0.77 - 0.1xx) and carries no summary.
* **when**: ``mid-turn`` when the newest response item before the compaction call is a
  ``function_call_output`` (the turn needs a follow-up), else ``pre-turn``.
* **overflows**: ``event_msg`` ``task_complete`` lines whose ``error.codex_error_info`` is
  ``context_window_exceeded`` (0.171; older versions: an ``event_msg`` ``error`` whose message mentions
  the context window). One per failed turn.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

MODEL_ITEMS = ("function_call", "reasoning", "custom_tool_call", "local_shell_call", "web_search_call")
#: User-role texts Codex writes itself (context, AGENTS.md, its apply_patch warning): not prompts.
NOT_PROMPTS = ("<", "# AGENTS.md instructions", "Warning: apply_patch was requested via")


def _bytes4(item: dict) -> int:
    kind = item.get("type")
    if kind == "function_call_output":
        obj = {"type": kind, "call_id": item.get("call_id"), "output": item.get("output")}
    elif kind == "message":
        obj = {"type": kind, "role": item.get("role"), "content": item.get("content")}
    else:
        obj = {k: v for k, v in item.items() if k not in ("id", "internal_chat_message_metadata_passthrough")}
    n = len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    return (n + 3) // 4


def _model_generated(item: dict) -> bool:
    return item.get("type") in MODEL_ITEMS or (item.get("type") == "message" and item.get("role") == "assistant")


@dataclass
class CompactionFact:
    line: int
    tokens_before: int | None
    estimate_after: int
    when: str
    call_input: int
    call_output: int
    replacement_items: int
    summary_generation: int | None


@dataclass
class RolloutFacts:
    file: str
    lines: int
    bad_lines: int
    session_metas: int
    cli_versions: list[str]
    model_context_window: int | None
    user_prompts: int
    tool_calls: int
    agent_requests: int
    compaction_calls: int
    overflows: int
    max_total_tokens: int
    compactions: list[CompactionFact] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def read_lines(path: Path) -> tuple[list[tuple[int, dict]], int]:
    out, bad = [], 0
    with open(path, encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                bad += 1
                continue
            if isinstance(obj, dict):
                out.append((n, obj))
            else:
                bad += 1
    return out, bad


def _summary_generation(message: str) -> int | None:
    marker = "- Summary generation: "
    i = message.rfind(marker)
    if i < 0:
        return None
    digits = "".join(ch for ch in message[i + len(marker):i + len(marker) + 6] if ch.isdigit())
    return int(digits) if digits else None


def analyze(path: Path) -> RolloutFacts:
    lines, bad = read_lines(path)
    facts = RolloutFacts(path.name, len(lines) + bad, bad, 0, [], None, 0, 0, 0, 0, 0, 0)
    prev_total = None
    requests: list[tuple[int, dict]] = []  # (line, last_token_usage) since the last compaction
    items: list[dict] = []
    agent_totals: list[int] = []
    for n, obj in lines:
        kind, p = obj.get("type"), obj.get("payload") or {}
        if kind == "session_meta":
            facts.session_metas += 1
            v = p.get("cli_version")
            if v and v not in facts.cli_versions:
                facts.cli_versions.append(v)
        elif kind == "response_item":
            items.append(p)
            if p.get("type") == "function_call":
                facts.tool_calls += 1
            if p.get("type") == "message" and p.get("role") == "user":
                text = "".join(c.get("text", "") for c in p.get("content") or [] if isinstance(c, dict))
                if text and not text.lstrip().startswith(NOT_PROMPTS) and "- Summary generation: " not in text:
                    facts.user_prompts += 1
        elif kind == "event_msg" and p.get("type") == "token_count" and p.get("info"):
            info = p["info"]
            facts.model_context_window = info.get("model_context_window") or facts.model_context_window
            total, last = info.get("total_token_usage"), info.get("last_token_usage") or {}
            if total == prev_total:
                continue
            prev_total = total
            if not (last.get("input_tokens") or last.get("output_tokens")):
                continue
            requests.append((n, last))
            facts.max_total_tokens = max(facts.max_total_tokens, int(last.get("total_tokens") or 0))
        elif kind == "event_msg" and p.get("type") in ("error", "task_complete"):
            err = p.get("error") if p.get("type") == "task_complete" else p
            if isinstance(err, dict) and (err.get("codex_error_info") == "context_window_exceeded"
                                          or "context window" in str(err.get("message", "")).lower()):
                facts.overflows += 1
        elif kind == "compacted":
            call = requests.pop() if requests else None
            facts.agent_requests += len(requests)
            agent_totals += [int(u.get("total_tokens") or 0) for _, u in requests]
            facts.compaction_calls += 1 if call else 0
            hist = [it for it in items if not (it.get("type") == "message" and it.get("role") == "assistant"
                                                and "- Summary generation: " in json.dumps(it.get("content")))]
            idx = max((i for i, it in enumerate(hist) if _model_generated(it)), default=-1)
            last_item = hist[-1] if hist else {}
            facts.compactions.append(CompactionFact(
                line=n, tokens_before=agent_totals[-1] if agent_totals else None,
                estimate_after=sum(_bytes4(it) for it in hist[idx + 1:]),
                when="mid-turn" if last_item.get("type") == "function_call_output" else "pre-turn",
                call_input=int(call[1].get("input_tokens") or 0) if call else 0,
                call_output=int(call[1].get("output_tokens") or 0) if call else 0,
                replacement_items=len(p.get("replacement_history") or []),
                summary_generation=_summary_generation(str(p.get("message", ""))),
            ))
            requests, items = [], []
    facts.agent_requests += len(requests)
    return facts
