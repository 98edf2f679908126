"""Deterministic, deliberately lossy stand-in for the LLM that writes Pi's summaries.

Pi sends three kinds of summarisation request, all with ``SUMMARIZATION_SYSTEM_PROMPT`` as system
prompt and a single user message ``<conversation>…</conversation>`` followed by instructions:

* ``initial``     – the first compaction of a branch (six-section format);
* ``update``      – a later compaction, with the previous summary in ``<previous-summary>`` tags;
* ``turn_prefix`` – the prefix of a split turn (three sections);
* ``branch``      – branch summarisation on tree navigation (five sections, no Critical Context).

The summary is built only from the serialized conversation (``[User]: …``, ``[Assistant]: …``,
``[Assistant tool calls]: read(path="…")``, ``[Tool result]: …``) and the previous summary.

Lossy rule (documented in lab/README.md; a test can recompute it):

* Every summary ends its *Critical Context* section with ``- Summary generation: G``.  An initial
  summary (and a branch summary) has ``G = 1``; an update has ``G = previous G + 1`` (previous G is
  read from the previous summary, 0 when absent).
* On an update, let ``D`` be the list of ``### Done`` items of the previous summary, in order.  If
  ``len(D) >= 2``, the item ``D[k]`` with
  ``k = int.from_bytes(sha256(f"{seed}:drop:{G}").digest()[:4], "big") % len(D)`` is dropped; all
  other previous items are kept, then the new Done items (one per tool call and one per finished
  task, in conversation order) are appended, and only the last ``KEEP_DONE`` (40) items are kept.
* *Key Decisions* keeps only the last ``KEEP_DECISIONS`` (6) entries, *Critical Context* only the
  last ``KEEP_CONTEXT`` (8) facts (before the generation line); older ones are forgotten.
* Goals: the previous goals are kept and new goals (one per new user prompt, first sentence,
  truncated to 120 characters) appended; only the last ``KEEP_GOALS`` (12) are kept.

Facts (what ``diff-summaries`` measures as fact retention; this follows from the rule above, it is
not an extra rule, so the bundled samples stay valid; lab/README.md says it per category): files
of the span are all named (Done items; Pi appends the file lists); of a prompt only the first
sentence is kept, so constraints and identifiers in later sentences are lost at once, and a kept
constraint is never dropped; a tool result keeps the first 80 characters of its first line as a
Critical Context fact (last 8); error lines are kept in Blocked, the span's last three only, and
Blocked is rewritten on every update (errors are gone one compaction later).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

KEEP_DONE = 40
KEEP_DECISIONS = 6
KEEP_CONTEXT = 8
KEEP_GOALS = 12

SUMMARIZATION_SYSTEM_MARKER = "You are a context summarization assistant"


def classify(system: str, user: str) -> str | None:
    """Return the summarisation kind of a request, or None for a normal agent request."""
    if not system.startswith(SUMMARIZATION_SYSTEM_MARKER):
        return None
    if "Create a structured summary of this conversation branch" in user:
        return "branch"
    if "This is the PREFIX of a turn" in user or "Create a concise checkpoint of the user's request" in user:
        return "turn_prefix"
    if "<previous-summary>" in user:
        return "update"
    return "initial"


def drop_index(seed: int, generation: int, n_done: int) -> int | None:
    """Index of the previous Done item dropped by the update producing ``generation``."""
    if n_done < 2:
        return None
    h = hashlib.sha256(f"{seed}:drop:{generation}".encode()).digest()
    return int.from_bytes(h[:4], "big") % n_done


@dataclass
class _Conversation:
    users: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    open_task: str | None = None


_INJECTED_PREFIXES = (
    "The conversation history before this point was compacted",
    "The following is a summary of a branch that this conversation came back from",
)
_BLOCK_RE = re.compile(r"^\[(User|Assistant|Assistant thinking|Assistant tool calls|Tool result)\]: ", re.M)
_CALL_RE = re.compile(r"(\w+)\((.*?)\)(?:; |$)", re.S)


def _blocks(conversation: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    matches = list(_BLOCK_RE.finditer(conversation))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(conversation)
        out.append((m.group(1), conversation[m.end():end].strip()))
    return out


def _first_sentence(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    m = re.search(r"[.!?。！？](\s|$)", text)
    s = text[: m.end()].strip() if m else text
    if len(s) > limit:
        s = s[: limit - 1].rstrip() + "…"
    return s


def _arg(args: str, name: str) -> str | None:
    m = re.search(rf'\b{name}=("(?:[^"\\]|\\.)*")', args)
    if not m:
        return None
    try:
        return json.loads(m.group(1))
    except ValueError:
        return m.group(1).strip('"')


def _describe_call(name: str, args: str) -> str:
    path = _arg(args, "path")
    if name == "read" and path:
        return f"Read `{path}`"
    if name == "edit" and path:
        return f"Edited `{path}`"
    if name == "write" and path:
        return f"Wrote `{path}`"
    if name == "bash":
        cmd = _arg(args, "command") or "?"
        return f"Ran `{cmd}`"
    return f"Called {name}"


def _fact(call: tuple[str, str] | None, result: str) -> str | None:
    """One Critical Context fact from a tool call and its result."""
    lines = [ln.strip() for ln in result.split("\n") if ln.strip()]
    if not lines or call is None:
        return None
    name, args = call
    path = _arg(args, "path")
    if name == "read" and path:
        return f"`{path}` ({len(lines)}+ lines) starts with: {lines[0][:80]}"
    if name == "bash":
        return f"`{(_arg(args, 'command') or '?')[:60]}` -> {lines[0][:80]}"
    if name in ("edit", "write") and path:
        return f"`{path}`: {lines[0][:80]}"
    return None


def _parse(conversation: str) -> _Conversation:
    conv = _Conversation()
    blocks = _blocks(conversation)
    pending_calls: list[tuple[str, str]] = []
    for i, (kind, text) in enumerate(blocks):
        if kind == "User":
            if text.startswith(_INJECTED_PREFIXES):
                continue  # compaction / branch summaries that Pi injects as user messages
            conv.users.append(_first_sentence(text))
            conv.open_task = _first_sentence(text, 80)
        elif kind == "Assistant tool calls":
            pending_calls = [(m.group(1), m.group(2)) for m in _CALL_RE.finditer(text)]
            for name, args in pending_calls:
                conv.done.append(_describe_call(name, args))
        elif kind == "Assistant":
            followed_by_calls = i + 1 < len(blocks) and blocks[i + 1][0] == "Assistant tool calls"
            if conv.open_task and not followed_by_calls:
                conv.done.append(f"Finished: {conv.open_task}")
                conv.decisions.append(f"- **{conv.open_task[:40].rstrip()}**: {_first_sentence(text, 160)}")
                conv.open_task = None
        elif kind == "Tool result":
            call = pending_calls.pop(0) if pending_calls else None
            first = text.split("\n", 1)[0].strip()
            if re.search(r"(?i)\berror\b|could not find|not found|no such file", first):
                conv.blocked.append(first[:160])
            else:
                fact = _fact(call, text)
                if fact:
                    conv.context.append(fact)
    return conv


_SECTION_RE = re.compile(r"^(##+) (.+?)\s*$", re.M)


def _sections(summary: str) -> dict[str, list[str]]:
    """Lines of each ``##``/``###`` section of a previous summary (without Pi's file tags)."""
    summary = re.split(r"\n<read-files>|\n<modified-files>|\n---\n", summary)[0]
    out: dict[str, list[str]] = {}
    matches = list(_SECTION_RE.finditer(summary))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(summary)
        body = [ln.rstrip() for ln in summary[m.end():end].strip("\n").split("\n") if ln.strip()]
        out[m.group(2)] = body
    return out


def _items(lines: list[str], prefix: str) -> list[str]:
    return [ln[len(prefix):].strip() for ln in lines if ln.startswith(prefix)]


def _generation(prev: dict[str, list[str]]) -> int:
    for ln in prev.get("Critical Context", []):
        m = re.match(r"- Summary generation: (\d+)", ln)
        if m:
            return int(m.group(1))
    return 0


def _render(goals: list[str], constraints: list[str], done: list[str], in_progress: list[str],
            blocked: list[str], decisions: list[str], next_steps: list[str], context: list[str] | None,
            generation: int) -> str:
    parts = ["## Goal"]
    parts += [f"- {g}" for g in goals] or ["- (none)"]
    parts += ["", "## Constraints & Preferences"]
    parts += [f"- {c}" for c in constraints] or ["- (none)"]
    parts += ["", "## Progress", "### Done"]
    parts += [f"- [x] {d}" for d in done] or ["- [x] (nothing yet)"]
    parts += ["", "### In Progress"]
    parts += [f"- [ ] {t}" for t in in_progress] or ["- [ ] (none)"]
    parts += ["", "### Blocked"]
    parts += [f"- {b}" for b in blocked] or ["- (none)"]
    parts += ["", "## Key Decisions"]
    parts += decisions or ["- **(none)**: no decisions recorded"]
    parts += ["", "## Next Steps"]
    parts += [f"{i}. {s}" for i, s in enumerate(next_steps, 1)]
    if context is not None:
        parts += ["", "## Critical Context"]
        parts += [f"- {c}" for c in context]
        parts.append(f"- Summary generation: {generation}")
    return "\n".join(parts)


_CONSTRAINT_RE = re.compile(r"(?i)\b(must|never|always|keep|do not|don't)\b|请不要|必须|保持")


def summarize(kind: str, user_text: str, seed: int) -> str:
    """Build the summary text for a summarisation request (see module docstring)."""
    m = re.search(r"<conversation>\n(.*?)\n</conversation>", user_text, re.S)
    conv = _parse(m.group(1) if m else user_text)

    if kind == "turn_prefix":
        request = conv.users[-1] if conv.users else "(unknown request)"
        progress = conv.done[-10:] or ["(no progress yet)"]
        lines = ["## Original Request", request, ""]
        if "## Early Progress" in user_text:
            lines += ["## Early Progress"] + [f"- {d}" for d in progress]
            lines += ["", "## Context for Suffix"]
        else:
            lines += ["## Progress So Far"] + [f"- {d}" for d in progress]
            lines += ["", "## Context Needed to Continue"]
        lines += [f"- {c}" for c in (conv.context[-4:] or ["(none)"])]
        return "\n".join(lines)

    prev: dict[str, list[str]] = {}
    if kind == "update":
        pm = re.search(r"<previous-summary>\n(.*?)\n</previous-summary>", user_text, re.S)
        prev = _sections(pm.group(1)) if pm else {}
    generation = _generation(prev) + 1 if kind == "update" else 1

    goals = _items(prev.get("Goal", []), "- ")
    goals = [g for g in goals if g != "(none)"]
    for u in conv.users:
        if u not in goals:
            goals.append(u)
    goals = goals[-KEEP_GOALS:]

    constraints = [c for c in _items(prev.get("Constraints & Preferences", []), "- ") if c != "(none)"]
    for u in conv.users:
        if _CONSTRAINT_RE.search(u) and u not in constraints:
            constraints.append(u)

    done_prev = [d for d in _items(prev.get("Done", []), "- [x] ") if d != "(nothing yet)"]
    k = drop_index(seed, generation, len(done_prev)) if kind == "update" else None
    if k is not None:
        done_prev = done_prev[:k] + done_prev[k + 1:]
    done = (done_prev + conv.done)[-KEEP_DONE:]

    in_progress = [conv.open_task] if conv.open_task else []
    blocked = conv.blocked[-3:]
    decisions = [d for d in prev.get("Key Decisions", []) if d.startswith("- **") and "(none)" not in d]
    decisions = (decisions + conv.decisions)[-KEEP_DECISIONS:]
    next_steps = (
        [f"Continue: {conv.open_task}"] if conv.open_task else ["Wait for the next task from the user"]
    )
    if blocked:
        next_steps.append("Resolve the blocked items above")
    if kind == "branch":
        return _render(goals, constraints, done, in_progress, blocked, decisions, next_steps, None, generation)
    ctx_prev = [c for c in _items(prev.get("Critical Context", []), "- ")
                if not c.startswith("Summary generation:") and c != "(none)"]
    context = (ctx_prev + conv.context)[-KEEP_CONTEXT:] or ["(none)"]
    return _render(goals, constraints, done, in_progress, blocked, decisions, next_steps, context, generation)
