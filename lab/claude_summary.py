"""Answers Claude Code's compact (summarise) request with the lab summariser's lossy rule.

Claude Code sends the conversation as Anthropic messages followed by a user message with its
compact prompt (it contains ``Respond with TEXT ONLY``). The answer is
``<analysis>…</analysis>\\n\\n<summary>\\nS\\n</summary>`` where ``S`` is ``lab.summarizer.summarize``
applied to:

* the conversation serialised the way Pi serialises it (``[User]: …``, ``[Assistant]: …``,
  ``[Assistant tool calls]: read(path="src/a.py"); bash(command="ls")``, ``[Tool result]: …``), with
  Claude Code's tools mapped back to the workload's names (``Read`` -> ``read``, ``Edit`` -> ``edit``,
  ``Bash`` -> ``bash``, and a ``Bash`` here-document ``cat > P <<'LAB_EOF'`` -> ``write(path=P)``),
  absolute paths made relative to the workspace; user texts that are ``<system-reminder>`` blocks,
  local-command output or Claude Code's compact summary message are left out;
* the previous summary, when the history holds Claude Code's summary message (``This session is
  being continued from a previous conversation …``): its text from after ``Summary:`` up to and
  including the ``- Summary generation: G`` line. Then the request is an ``update`` (generation
  ``G + 1``, one previous Done item dropped by ``lab.summarizer.drop_index(seed, G + 1, len(D))``),
  else an ``initial`` summary (generation 1).
"""

from __future__ import annotations

import json
import re

from lab.summarizer import summarize

COMPACT_MARKER = "Respond with TEXT ONLY"
#: Older releases (2.0.x to 2.1.6x at least) send the compact prompt without the TEXT ONLY line.
OLD_COMPACT_MARKER = "Your task is to create a detailed summary of the conversation so far"
COMPACT_MARKERS = (COMPACT_MARKER, OLD_COMPACT_MARKER)
CONTINUATION_MARKER = "This session is being continued from a previous conversation"
_PREV_RE = re.compile(r"Summary:\s*\n(.*?- Summary generation: \d+)", re.S)
_WRITE_RE = re.compile(r"^cat > (\S+) <<'LAB_EOF'\n", re.S)
_SKIP_USER = ("<system-reminder>", "<local-command", "<command-name>", "<command-message>", "Caveat:")


def _blocks(msg: dict) -> list[dict]:
    c = msg.get("content")
    if isinstance(c, str):
        return [{"type": "text", "text": c}]
    return [b for b in (c or []) if isinstance(b, dict)]


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def is_summarise_request(messages: list[dict]) -> bool:
    """True when the last user message carries Claude Code's compact prompt."""
    for m in reversed(messages):
        if m.get("role") == "user":
            return any(marker in b.get("text", "") for b in _blocks(m) if b.get("type") == "text"
                       for marker in COMPACT_MARKERS)
    return False


def _call(block: dict, workspace: str) -> str:
    name, inp = block.get("name", ""), block.get("input") or {}
    ws = workspace.rstrip("/") + "/"

    def rel(p: str) -> str:
        return p[len(ws):] if p.startswith(ws) else p

    if name == "Read":
        return f"read(path={json.dumps(rel(inp.get('file_path', '')), ensure_ascii=False)})"
    if name == "Edit":
        return f"edit(path={json.dumps(rel(inp.get('file_path', '')), ensure_ascii=False)})"
    if name == "Bash":
        cmd = inp.get("command", "")
        m = _WRITE_RE.match(cmd)
        if m:
            return f"write(path={json.dumps(m.group(1), ensure_ascii=False)})"
        return f"bash(command={json.dumps(cmd, ensure_ascii=False)})"
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in inp.items())
    return f"{name.lower()}({args})"


def serialise(messages: list[dict], workspace: str) -> tuple[str, str | None]:
    """(Pi-style conversation text, previous lab summary or None) of the history before the prompt."""
    out: list[str] = []
    prev: str | None = None
    for m in messages:
        blocks = _blocks(m)
        if m.get("role") == "assistant":
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text").strip()
            calls = [_call(b, workspace) for b in blocks if b.get("type") == "tool_use"]
            if text:
                out.append(f"[Assistant]: {text}")
            if calls:
                out.append("[Assistant tool calls]: " + "; ".join(calls))
            continue
        for b in blocks:
            if b.get("type") == "tool_result":
                out.append(f"[Tool result]: {_text(b.get('content'))}")
            elif b.get("type") == "text":
                t = b.get("text", "").strip()
                if t.startswith(CONTINUATION_MARKER):
                    pm = _PREV_RE.search(t)
                    prev = pm.group(1) if pm else prev
                elif t and not t.startswith(_SKIP_USER) and COMPACT_MARKER not in t:
                    out.append(f"[User]: {t}")
    return "\n\n".join(out), prev


def summarise(messages: list[dict], seed: int, workspace: str) -> str:
    """The compact answer (``<analysis>`` + ``<summary>``) for a summarise request."""
    history = messages[:-1] if messages and messages[-1].get("role") == "user" else messages
    conv, prev = serialise(history, workspace)
    user = f"<conversation>\n{conv}\n</conversation>\n"
    if prev is not None:
        user += f"\n<previous-summary>\n{prev}\n</previous-summary>\n"
    summary = summarize("update" if prev is not None else "initial", user, seed)
    n_calls = conv.count("[Assistant tool calls]: ")
    analysis = (f"The lab summariser read {conv.count('[User]: ')} user prompts and {n_calls} tool-call messages"
                + (" and the previous summary." if prev is not None else "."))
    return f"<analysis>\n{analysis}\n</analysis>\n\n<summary>\n{summary}\n</summary>"
