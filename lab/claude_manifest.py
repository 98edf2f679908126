"""Facts about recorded Claude Code transcripts, computed with plain ``json`` (for MANIFEST.md).

``analyze_claude(path)`` counts, in file order: lines by ``type``, user prompts (user lines whose
``message.content`` is a string, not ``isMeta``, not the compact summary and not starting with
``<`` – local-command lines such as ``<command-name>/compact</command-name>``), assistant lines, API
responses (distinct ``message.id`` of assistant lines whose model is not ``<synthetic>``), tool
calls (``tool_use`` blocks), and every compaction: the ``system``/``compact_boundary`` line with its
``compactMetadata`` (``trigger``, ``preTokens``, ``postTokens``, number of preserved uuids) plus:

* ``last_usage`` – ``input + cache_creation + cache_read + output`` tokens of the last assistant
  line before the boundary and after the previous boundary (None when there is none);
* ``bytes_after`` – UTF-8 bytes of ``json.dumps(message.content, ensure_ascii=False)`` of the user
  and assistant lines after the *first* line of that response (its sibling lines count: Claude
  Code estimates them) or after the previous boundary, up to this boundary; and ``bytes_after // 4``;
* ``text_chars_after`` – characters of the same lines counted as Claude Code's rough estimator sees
  them (text blocks, tool_use name + compact ``JSON.stringify(input)``, tool_result text), and
  ``count = last_usage + ceil(text_chars_after / 4 * 4 / 3)``: Claude Code 2.1.332 compacts when this
  reaches the threshold (checked on every request of the threshold samples, see lab/README.md);
* ``summary_chars`` – length of the text of the ``isCompactSummary`` user line that follows.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class ClaudeFacts:
    file: str
    bytes: int
    lines: int
    skipped: int = 0
    types: dict[str, int] = field(default_factory=dict)
    prompts: int = 0
    assistant_lines: int = 0
    responses: int = 0
    tool_calls: int = 0
    sidechain_lines: int = 0
    compactions: list[dict] = field(default_factory=list)
    version: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def _usage_total(u: dict) -> int:
    return sum(int(u.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                             "cache_read_input_tokens", "output_tokens"))


def text_chars(content) -> int:
    """Characters of a message content as a chars/4 estimator counts them."""
    if isinstance(content, str):
        return len(content)
    n = 0
    for b in content if isinstance(content, list) else []:
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text":
            n += len(b.get("text") or "")
        elif t == "tool_use":
            n += len(b.get("name") or "") + len(json.dumps(b.get("input"), ensure_ascii=False, separators=(",", ":")))
        elif t == "tool_result":
            c = b.get("content")
            n += len(c) if isinstance(c, str) else sum(len(x.get("text") or "") for x in c or [] if isinstance(x, dict))
    return n


def analyze_claude(path: Path) -> ClaudeFacts:
    raw = path.read_bytes()
    facts = ClaudeFacts(file=path.name, bytes=len(raw), lines=0)
    entries: list[tuple[int, dict]] = []
    for n, ln in enumerate(raw.decode("utf-8").splitlines(), 1):
        if not ln.strip():
            continue
        facts.lines += 1
        try:
            d = json.loads(ln)
        except ValueError:
            facts.skipped += 1
            continue
        if isinstance(d, dict):
            entries.append((n, d))
    types: Counter[str] = Counter()
    ids: set[str] = set()
    last_asst: tuple[int, dict] | None = None
    after = chars = 0
    for i, (n, d) in enumerate(entries):
        t = str(d.get("type"))
        types[t] += 1
        facts.version = facts.version or d.get("version")
        if d.get("isSidechain"):
            facts.sidechain_lines += 1
        msg = d.get("message") if isinstance(d.get("message"), dict) else {}
        if (t == "user" and isinstance(msg.get("content"), str) and not d.get("isCompactSummary")
                and not d.get("isMeta") and not msg["content"].startswith("<")):
            facts.prompts += 1
        if t == "assistant":
            facts.assistant_lines += 1
            mid = msg.get("id")
            blocks = msg.get("content") if isinstance(msg.get("content"), list) else []
            facts.tool_calls += sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use")
            if msg.get("model") != "<synthetic>" and mid and (last_asst is None or last_asst[1].get("id") != mid):
                after = chars = 0  # first line of a new response: estimate what follows it (its siblings too)
                ids.add(mid)
                last_asst = (n, msg)
                continue
        if t in ("user", "assistant"):
            after += len(json.dumps(msg.get("content"), ensure_ascii=False).encode())
            chars += text_chars(msg.get("content"))
        if t == "system" and d.get("subtype") == "compact_boundary":
            meta = d.get("compactMetadata") or {}
            last_total = _usage_total(last_asst[1].get("usage") or {}) if last_asst else 0
            seg = (meta.get("preservedMessages") or {}).get("uuids") or []
            summary = next((e for _, e in entries[i + 1:] if e.get("isCompactSummary")), None)
            text = (summary or {}).get("message", {}).get("content", "")
            facts.compactions.append({
                "line": n, "trigger": meta.get("trigger"), "preTokens": meta.get("preTokens"),
                "postTokens": meta.get("postTokens"), "preserved": len(seg),
                "last_usage": last_total if last_asst else None,
                "bytes_after": after, "bytes_after_div4": after // 4, "text_chars_after": chars,
                "count": last_total + math.ceil(chars / 3),
                "summary_chars": len(text) if isinstance(text, str) else None,
            })
            last_asst, after, chars = None, 0, 0
    facts.types = dict(sorted(types.items()))
    facts.responses = len(ids)
    return facts
