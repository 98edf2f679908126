"""Facts about recorded session files, computed from the files themselves (for MANIFEST.md).

``analyze(path)`` reads a Pi session file with plain ``json`` and counts what it shows:
prompts, tool calls, compactions split by kind, overflow errors, branch summaries, leaves,
the Pi-recorded usage and Pi's own chars/4 estimate of the same context.

Compaction kinds:

* ``overflow``  – the compaction's parent entry (skipping ``context_edit`` entries) is an assistant
  message with ``stopReason: "error"`` whose ``errorMessage`` matches a context-overflow pattern
  (0.x writes the recovery compaction right after the failed response; 1.x first writes a
  ``context_edit`` that omits the failed response, then the compaction);
* ``threshold`` – every other automatic compaction;
* ``split``     – (a flag, not a kind) the summary contains Pi's ``**Turn Context (split turn):**``.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

OVERFLOW_RE = re.compile(
    r"maximum context length is \d+ tokens|exceeds the context window|prompt is too long|"
    r"context[_ ]length[_ ]exceeded|reduce the length of the messages",
    re.I,
)


@dataclass
class FileFacts:
    file: str
    bytes: int
    lines: int
    version: int | None
    skipped: int = 0
    prompts: int = 0
    assistant_messages: int = 0
    tool_calls: int = 0
    tool_names: dict[str, int] = field(default_factory=dict)
    compactions: int = 0
    threshold_compactions: int = 0
    overflow_compactions: int = 0
    split_turn_compactions: int = 0
    overflow_errors: int = 0
    branch_summaries: int = 0
    leaves: int = 0
    branch_points: int = 0
    cjk_share: float = 0.0
    max_context_tokens: int = 0
    # sum of recorded usage.output / sum of Pi's chars/4 estimate of the same assistant messages
    output_vs_chars4: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)


def read_lines(path: Path) -> tuple[list[dict], int]:
    entries, skipped = [], 0
    for ln in path.read_text(encoding="utf-8").splitlines():
        if not ln.strip():
            continue
        try:
            entries.append(json.loads(ln))
        except ValueError:
            skipped += 1
    return entries, skipped


def _text_of(obj) -> str:
    if isinstance(obj, str):
        return obj
    if isinstance(obj, list):
        return "".join(_text_of(x) for x in obj)
    if isinstance(obj, dict):
        return "".join(_text_of(v) for k, v in obj.items() if k in ("text", "content", "summary", "arguments"))
    return ""


def _chars4(m: dict) -> int:
    """Pi's estimateTokens() for an assistant message: ceil(chars / 4)."""
    n = 0
    for b in m.get("content") or []:
        if b.get("type") == "text":
            n += len(b.get("text", ""))
        elif b.get("type") == "thinking":
            n += len(b.get("thinking", ""))
        elif b.get("type") == "toolCall":
            n += len(b.get("name", "")) + len(json.dumps(b.get("arguments"), ensure_ascii=False,
                                                          separators=(",", ":")))
    return math.ceil(n / 4)


def analyze(path: Path) -> FileFacts:
    from lab.tokenizer import cjk_count

    entries, skipped = read_lines(path)
    header = entries[0] if entries and entries[0].get("type") == "session" else {}
    facts = FileFacts(path.name, path.stat().st_size, len(entries) + skipped, header.get("version", 1 if header else None),
                      skipped=skipped)
    by_id = {e["id"]: e for e in entries if "id" in e and e.get("type") != "session"}
    children: Counter[str | None] = Counter()
    tools: Counter[str] = Counter()
    chars = cjk = 0
    out_tokens = out_est = 0
    for e in entries[1:]:
        t = e.get("type")
        if "parentId" in e:
            children[e["parentId"]] += 1
        if t == "message":
            m = e.get("message", {})
            role = m.get("role")
            text = _text_of(m.get("content"))
            chars += len(text)
            cjk += cjk_count(text)
            if role == "user":
                facts.prompts += 1
            elif role == "assistant":
                facts.assistant_messages += 1
                for b in m.get("content") or []:
                    if isinstance(b, dict) and b.get("type") == "toolCall":
                        tools[b.get("name", "?")] += 1
                if m.get("stopReason") == "error" and OVERFLOW_RE.search(m.get("errorMessage") or ""):
                    facts.overflow_errors += 1
                u = m.get("usage") or {}
                if m.get("stopReason") != "error":
                    out_tokens += u.get("output", 0)
                    out_est += _chars4(m)
                ctx = (u.get("input", 0) + u.get("cacheRead", 0) + u.get("cacheWrite", 0) + u.get("output", 0))
                facts.max_context_tokens = max(facts.max_context_tokens, ctx)
        elif t == "compaction":
            facts.compactions += 1
            parent = by_id.get(e.get("parentId"))
            # 1.x writes a context_edit (omitting the failed response) between the error and the compaction
            while parent is not None and parent.get("type") == "context_edit":
                parent = by_id.get(parent.get("parentId"))
            pm = (parent or {}).get("message", {}) if (parent or {}).get("type") == "message" else {}
            if pm.get("role") == "assistant" and pm.get("stopReason") == "error" and OVERFLOW_RE.search(
                    pm.get("errorMessage") or ""):
                facts.overflow_compactions += 1
            else:
                facts.threshold_compactions += 1
            if "**Turn Context (split turn):**" in (e.get("summary") or ""):
                facts.split_turn_compactions += 1
        elif t == "branch_summary":
            facts.branch_summaries += 1
    facts.tool_calls = sum(tools.values())
    facts.tool_names = dict(sorted(tools.items()))
    ids = [e["id"] for e in entries[1:] if "id" in e]
    facts.leaves = sum(1 for i in ids if children[i] == 0) if ids else 0
    facts.branch_points = sum(1 for i in ids if children[i] > 1)
    facts.cjk_share = round(cjk / chars, 3) if chars else 0.0
    facts.output_vs_chars4 = round(out_tokens / out_est, 2) if out_est else 0.0
    return facts


def workload_signature(path: Path) -> list:
    """The sequence of tool calls and final answers in file order (pair files must agree)."""
    entries, _ = read_lines(path)
    sig = []
    for e in entries:
        if e.get("type") != "message":
            continue
        m = e["message"]
        if m.get("role") == "assistant" and m.get("stopReason") != "error":
            for b in m.get("content") or []:
                if b.get("type") == "toolCall":
                    sig.append(("call", b["id"], b["name"], json.dumps(b["arguments"], sort_keys=True)))
                elif b.get("type") == "text" and m.get("stopReason") == "stop":
                    sig.append(("final", b["text"]))
        elif m.get("role") == "user":
            sig.append(("user", _text_of(m.get("content"))))
    return sig
