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

Pseudo-replies (``is_pseudo_reply``): assistant messages a harness wrote that were never model
requests: ``stopReason`` is not ``"error"`` and every usage count (input, output, cacheRead,
cacheWrite, totalTokens) is 0. ``model_replies`` counts the other non-error assistant messages.

Runs: a run starts at each user message (a prompt) and lasts until the next one, in file order;
``overflows_per_run[i]`` / ``overflow_recoveries_per_run[i]`` count the overflow errors / overflow
compactions of run ``i``. ``recovered_between_overflows`` is true when, in every run with two or
more overflow errors, a successful model reply lies between each two consecutive overflow errors.
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
    model_replies: int = 0
    pseudo_replies: int = 0
    pseudo_models: dict[str, int] = field(default_factory=dict)
    overflows_per_run: list[int] = field(default_factory=list)
    overflow_recoveries_per_run: list[int] = field(default_factory=list)
    max_overflows_in_run: int = 0
    recovered_between_overflows: bool = True

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


USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def is_pseudo_reply(m: dict) -> bool:
    """An assistant message with no error and all-zero usage: written by a harness, not a model."""
    if m.get("role") != "assistant" or m.get("stopReason") == "error":
        return False
    u = m.get("usage") or {}
    return all(not u.get(k) for k in USAGE_KEYS)


def _runs(entries: list[dict], overflow_compaction_ids: set[str]) -> tuple[list[int], list[int], bool]:
    """Per run (user message to next user message): overflow errors, overflow compactions, and
    whether a successful model reply separates every two consecutive overflow errors."""
    errors: list[int] = []
    recoveries: list[int] = []
    separated = True
    since_overflow: bool | None = None  # None: no overflow yet in this run
    for e in entries:
        m = e.get("message", {}) if e.get("type") == "message" else {}
        if m.get("role") == "user":
            errors.append(0)
            recoveries.append(0)
            since_overflow = None
        elif not errors:
            continue
        elif m.get("role") == "assistant" and m.get("stopReason") == "error" and OVERFLOW_RE.search(
                m.get("errorMessage") or ""):
            errors[-1] += 1
            if since_overflow is False:
                separated = False
            since_overflow = False
        elif m.get("role") == "assistant" and not is_pseudo_reply(m) and since_overflow is False:
            since_overflow = True
        elif e.get("type") == "compaction" and e.get("id") in overflow_compaction_ids:
            recoveries[-1] += 1
    return errors, recoveries, separated


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
    pseudo: Counter[str] = Counter()
    overflow_ids: set[str] = set()
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
                if is_pseudo_reply(m):
                    pseudo[str(m.get("model"))] += 1
                elif m.get("stopReason") != "error":
                    facts.model_replies += 1
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
                overflow_ids.add(e.get("id"))
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
    facts.pseudo_replies = sum(pseudo.values())
    facts.pseudo_models = dict(sorted(pseudo.items()))
    errs, recs, separated = _runs(entries[1:], overflow_ids)
    facts.overflows_per_run, facts.overflow_recoveries_per_run = errs, recs
    facts.max_overflows_in_run = max(errs, default=0)
    facts.recovered_between_overflows = separated
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
