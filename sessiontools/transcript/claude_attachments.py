"""Claude Code's ``attachment`` lines that become text the model is sent, rendered as Claude Code renders
them (its `normalizeAttachmentForAPI`, read in the bundled JS of 2.1.112, 2.1.132 and 2.1.150).

An attachment line (``"type": "attachment"``) records context Claude Code adds to the conversation
beside a prompt or a tool result: a file the user edited, a todo reminder, the skills list, a hook's
output. Claude Code sends each as a ``user`` message wrapped in ``<system-reminder>`` and, from 2.1.45
on (2.1.30 not yet; `policies.claude_code_rules`), its auto-compact estimate counts it like any other
message. Only the types whose rendered text the line fully determines are rendered here:

- ``edited_text_file`` (``filename``, ``snippet``): "Note: {filename} was modified, either by the
  user or by a linter. ... Here are the relevant changes (shown with line numbers):\\n{snippet}"
  (the same template in 2.1.112, 2.1.132 and 2.1.150; 2.1.132 writes another sentence when the
  snippet is empty). A real 2.1.132 file compacted at the prompt after one with an 8,158-character
  snippet at ``preTokens`` 168,212: usage + the estimate with this attachment gives 168,210, without
  it 166,067 (the check one request later).

- ``queued_command`` (``prompt``, a string or text blocks): a prompt the user typed while a turn
  ran: "The user sent a new message while you were working:\n{prompt}\n\nIMPORTANT: ..." (the same in
  2.1.45, 2.1.63, 2.1.112 and 2.1.132; the other origins, a task notification, a coordinator, a
  channel, a peer, have other templates and are not rendered). A real 2.1.114 file compacted after 15
  of them at 179,245 (the response before at 161,223).

Every other type is left out (not modelled: their text depends on state the line does not record, or
on templates not read), as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

_EDITED = ("Note: {filename} was modified, either by the user or by a linter. This change was intentional, "
           "so make sure to take it into account as you proceed (ie. don't revert it unless the user asks "
           "you to). Don't tell the user this, since they are already aware. ")
_EDITED_SNIPPET = _EDITED + "Here are the relevant changes (shown with line numbers):\n{snippet}"
_EDITED_OMITTED = _EDITED + ("The diff was omitted because other modified files in this turn already exceeded "
                             "the snippet budget; use the Read tool if you need the current content.")


def system_reminder(text: str) -> str:
    """Claude Code's wrapper of a meta message's text."""
    return f"<system-reminder>\n{text}\n</system-reminder>"


def _edited_text_file(a: Mapping[str, Any]) -> str | None:
    filename, snippet = a.get("filename"), a.get("snippet")
    if not isinstance(filename, str) or not isinstance(snippet, str):
        return None
    template = _EDITED_SNIPPET if snippet else _EDITED_OMITTED
    return system_reminder(template.format(filename=filename, snippet=snippet))


_QUEUED = ("The user sent a new message while you were working:\n{prompt}\n\nIMPORTANT: After completing your "
           "current task, you MUST address the user's message above. Do not ignore it.")


def _queued_command(a: Mapping[str, Any]) -> str | None:
    """A prompt the user typed while a turn ran, sent with the next request (origin none or `human`;
    the other origins' templates are not rendered)."""
    origin = a.get("origin")
    kind = origin.get("kind") if isinstance(origin, Mapping) else None
    if kind not in (None, "human") or a.get("commandMode") == "task-notification":
        return None
    p = a.get("prompt")
    if isinstance(p, list):  # text blocks joined by newlines (an image block is not rendered)
        p = "\n".join(b["text"] for b in p if isinstance(b, Mapping) and b.get("type") == "text"
                      and isinstance(b.get("text"), str))
    return system_reminder(_QUEUED.format(prompt=p)) if isinstance(p, str) else None


_RENDER: Mapping[str, Callable[[Mapping[str, Any]], str | None]] = {
    "edited_text_file": _edited_text_file, "queued_command": _queued_command}


def attachment_text(raw: Mapping[str, Any]) -> str | None:
    """The text Claude Code sends for an attachment line, or None (not an attachment line, a type not
    rendered here, or its fields missing)."""
    a = raw.get("attachment")
    if raw.get("type") != "attachment" or not isinstance(a, Mapping):
        return None
    kind = a.get("type")
    render = _RENDER.get(kind) if isinstance(kind, str) else None  # any JSON value may stand there
    return render(a) if render is not None else None
