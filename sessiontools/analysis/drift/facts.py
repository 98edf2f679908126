"""Facts of a compaction's summarised span, in four categories, by deterministic rules.

The span of a compaction (`chain.span_start` .. `chain.span_end`) is what the cut sent to the
summariser: from the previous compaction's first kept message (or the start) up to this
compaction's first kept message, a split turn's prefix included. Summary messages in it (the
previous summary, branch summaries) are not sources: a fact must come from the history itself.
Works on the neutral model's units, so it is the same for every agent.

- `files`: paths in tool-call arguments: the values of path-like keys (`path`, `file_path`,
  `filePath`, `file`, `filename`, `notebook_path`, `paths`, `files`), and paths in shell commands
  (keys `command`, `cmd`, `script`; a list is joined with spaces: what `literals.is_path` takes for a
  path, with an extension or 3+ components, not under /dev/) and in patches (`*** Update File: P`).
  A value ending in `/` or `.` is a directory, not a file. A path under the session's working
  directory is taken relative to it, so `/repo/src/a.py` and `src/a.py` are one fact.
- `identifiers`: in user messages and tool results: UUIDs, hex hashes (7-64 lower-case hex
  digits with a letter and a digit), `#123` references, versions (`1.2.3`, `v0.27.3-beta`), and
  other tokens of 12+ letters, digits, `_`, `.` or `-` (not inside a path) with a letter and a digit.
  Not identifiers (measured on real summaries, where they made most of the "lost" ids): URLs (and
  anything inside one), and the chat harness's message and sender ids: `[message_id: ...]` tags,
  the `... (untrusted metadata):` JSON blocks a gateway puts before a message, and tokens such as
  `msg_...`, `toolu_...`, `call_...`, `chatcmpl-...`, `om_...`/`ou_...`/`oc_...`.
- `errors`: the first non-empty line (at most 160 characters; a short parenthesised placeholder such
  as `(no output)` is skipped) of each failed tool result (the
  message's own flag: `isError` / `is_error`, or a shell execution with a non-zero exit code) and of
  each error reply (`errorMessage`) other than a context overflow (`TranscriptPath.overflows`: it is
  about the context, not the work, and the compaction it caused is its answer).
- `constraints`: the user's sentences (split after . ! ? followed by a space, at line ends, and after
  。！？) with must,
  never, always, only, don't / do not (whole words, any case) or 必须, 不要, 只; 4..300 characters.
  Not the user's: text a harness injects into user messages from its system prompt or context
  (`<system-reminder>`, `<system>`, `<INSTRUCTIONS>`, `<environment_context>`, `<user_instructions>`
  blocks, an `# AGENTS.md instructions` message, `System: ...` event lines) and the metadata above.

A fact's `key` is its normalised form (NFKC, case-folded, whitespace collapsed, backticks and `**`
removed, trailing . : ; , dropped): two facts with one key are one fact.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from sessiontools.analysis.drift.literals import PATH_PATTERN, is_path
from sessiontools.transcript.model import Message, Role, UnitKind

CATEGORIES = ("files", "identifiers", "errors", "constraints")

_PATH_KEYS = frozenset({"path", "file_path", "filePath", "file", "filename", "notebook_path", "paths", "files"})
_CMD_KEYS = frozenset({"command", "cmd", "script"})
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (\S.*?)\s*$", re.M)
_WS = re.compile(r"\s+")

_URL = re.compile(r"https?://[^\s<>\"'`)\]}]+")
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_HASH = re.compile(r"(?<![\w-])[0-9a-f]{7,64}(?![\w-])")
_ISSUE = re.compile(r"(?<![\w&#])#\d+\b")
_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+\.\d+(?:-[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?(?![\w.])")
_LONG = re.compile(r"(?<![\w./-])[A-Za-z0-9][\w.-]{10,}[A-Za-z0-9](?![\w/-])")

#: Harness text in user messages and tool results that is no part of the work (see the docstring).
_META_BLOCK = re.compile(r"^[^\n]*\((?:untrusted )?metadata[^\n]*\):?[ \t]*\n```[\w-]*\n.*?\n```[ \t]*$",
                         re.M | re.S | re.I)
_META_HEADER = re.compile(r"^[^\n]*\(metadata, do not treat as instructions[^\n]*$", re.M | re.I)
_MESSAGE_ID = re.compile(r"\[message[_ ]id:[^\]\n]*\]", re.I)
_CHAT_ID = re.compile(r"(?<![\w-])(?:(?:msg|toolu|call|om|ou|oc)_|chatcmpl-)[A-Za-z0-9_-]{6,}(?![\w-])")
_INJECTED = re.compile(
    r"<(system-reminder|system|INSTRUCTIONS|environment_context|user_instructions)>.*?</\1>", re.S | re.I)
_AGENTS_MD = re.compile(r"\A\s*#\s*AGENTS\.md instructions\b.*", re.S | re.I)
_SYSTEM_LINE = re.compile(r"^[ \t]*System:[ \t].*$", re.M)


def _blank(m: re.Match[str]) -> str:
    return " " * (m.end() - m.start())


def work_text(text: str) -> str:
    """A user message or tool result without the chat harness's envelopes and message-id tags."""
    text = _META_BLOCK.sub(" ", text)
    text = _META_HEADER.sub(" ", text)
    return _MESSAGE_ID.sub(" ", text)


def user_text(text: str) -> str:
    """`work_text` of a user message without what a harness injected from its system prompt or context."""
    text = _AGENTS_MD.sub(" ", text)
    text = _INJECTED.sub("\n", text)
    text = _SYSTEM_LINE.sub("", text)
    return work_text(text)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
_CONSTRAINT = re.compile(r"(?i)\b(?:must|never|always|only|don['’]t|do not)\b|必须|不要|只")
_ERROR_LINE_MAX = 160


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact: its category, the text as found, and its normalised key."""

    category: str
    value: str
    key: str


def fact_key(text: str) -> str:
    """The normalised form used to compare facts with each other and with summaries."""
    t = unicodedata.normalize("NFKC", text).replace("`", "").replace("**", "")
    return _WS.sub(" ", t).strip().casefold().rstrip(" .:;,")


def _tool_args(text: str) -> Any:
    """The arguments of a tool-call unit (`name` + arguments JSON); None when they do not parse."""
    i = text.find("{")
    if i < 0:
        return None
    try:
        return orjson.loads(text[i:])
    except orjson.JSONDecodeError:
        return None


def _strings(v: Any) -> Iterator[str]:
    if isinstance(v, str):
        yield v
    elif isinstance(v, list):
        yield from (x for x in v if isinstance(x, str))


def _command_paths(command: str) -> Iterator[str]:
    """Paths in a shell command: a file name with an extension, or 3+ components; not /dev/..."""
    for m in PATH_PATTERN.finditer(command):
        v = m.group(0).rstrip(".,:;")
        parts = [p for p in v.split("/") if p]
        if is_path(v) and _is_file_arg(v) and not v.startswith("/dev/") and ("." in parts[-1] or len(parts) >= 3):
            yield v


def _is_file_arg(v: str) -> bool:
    return bool(v) and "\n" not in v and len(v) < 400 and not v.endswith(("/", "."))


def call_files(text: str) -> list[str]:
    """File paths in one tool call's arguments (see the module docstring)."""
    args = _tool_args(text)
    if not isinstance(args, Mapping):
        return []
    out: list[str] = []
    for k, v in args.items():
        if k in _PATH_KEYS:
            out += [s.strip() for s in _strings(v) if _is_file_arg(s.strip())]
        elif k in _CMD_KEYS:
            command = " ".join(_strings(v))
            out += list(_command_paths(command))
        elif isinstance(v, str) and "*** " in v:
            out += _PATCH_FILE.findall(v)
    return out


def identifiers(text: str) -> list[str]:
    """ID-like tokens of a text, in the order of the patterns (each match masks what it covers)."""
    out: list[str] = []
    rest = _CHAT_ID.sub(_blank, _URL.sub(_blank, text))  # no URL (nor anything inside one), no message id
    for pat in (_UUID, _HASH, _ISSUE, _VERSION, _LONG):
        found = []
        for m in pat.finditer(rest):
            v = m.group(0)
            if pat is _HASH and not (re.search(r"\d", v) and re.search(r"[a-f]", v)):
                continue
            if pat is _LONG and (not (re.search(r"\d", v) and re.search(r"[A-Za-z]", v)) or is_path(v)):
                continue  # a file name (`index2.html`) is a file, not an identifier
            found.append((m.start(), m.end(), v))
        for a, b, v in found:
            out.append(v)
            rest = rest[:a] + " " * (b - a) + rest[b:]
    return out


def constraints(text: str) -> list[str]:
    """The user's constraining sentences of a text."""
    out = []
    for part in _SENTENCE_END.split(text):
        s = part.strip().lstrip("-*• ").strip()
        if 4 <= len(s) <= 300 and _CONSTRAINT.search(s):
            out.append(s)
    return out


def _failed(m: Message) -> bool:
    raw = m.raw if isinstance(m.raw, Mapping) else {}
    if raw.get("isError") is True or raw.get("is_error") is True:
        return True
    code = raw.get("exitCode")
    return raw.get("role") == "bashExecution" and isinstance(code, int) and code != 0


def error_line(text: str) -> str | None:
    """The first non-empty line of a text that is not a parenthesised placeholder such as Pi's
    `(no output)`, at most 160 characters."""
    for line in text.split("\n"):
        line = line.strip()
        if line and not (line.startswith("(") and line.endswith(")") and len(line) < 40):
            return line[:_ERROR_LINE_MAX]
    return None


def _message_facts(m: Message) -> Iterator[tuple[str, str]]:
    if m.role in (Role.SUMMARY, Role.SYSTEM):
        return
    for u in m.units:
        if u.kind == UnitKind.TOOL_CALL:
            yield from (("files", f) for f in call_files(u.text))
        elif u.kind == UnitKind.TOOL_RESULT:
            yield from (("identifiers", v) for v in identifiers(work_text(u.text)))
        elif u.kind == UnitKind.USER and m.role == Role.USER:
            text = user_text(u.text)
            yield from (("identifiers", v) for v in identifiers(text))
            yield from (("constraints", s) for s in constraints(text))
    raw = m.raw if isinstance(m.raw, Mapping) else {}
    if m.role == Role.TOOL and _failed(m):
        line = error_line("\n".join(u.text for u in m.units if u.kind == UnitKind.TOOL_RESULT))
        if line:
            yield "errors", line
    if m.role == Role.ASSISTANT and isinstance(raw.get("errorMessage"), str):
        line = error_line(raw["errorMessage"])
        if line:
            yield "errors", line


def relative(path: str, cwd: str | None) -> str:
    """A path under the session's working directory, relative to it (`/repo/src/a.py` -> `src/a.py`)."""
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1:]
    return path


def span_facts(messages: Sequence[Message], overflows: frozenset[int] = frozenset(),
               cwd: str | None = None) -> dict[str, tuple[Fact, ...]]:
    """The distinct facts of some messages by category, in order of first occurrence; messages whose
    index is in `overflows` (context-overflow error replies: about the context, not the work) are skipped;
    files under `cwd` (the session's working directory) are made relative to it."""
    seen: dict[str, dict[str, Fact]] = {c: {} for c in CATEGORIES}
    for m in messages:
        if m.index in overflows:
            continue
        for category, value in _message_facts(m):
            if category == "files":
                value = relative(value, cwd)
            key = fact_key(value)
            if key:
                seen[category].setdefault(key, Fact(category, value, key))
    return {c: tuple(seen[c].values()) for c in CATEGORIES}


def basenames(facts: Sequence[Fact]) -> dict[str, str | None]:
    """Basename key -> the one full path key with it, or None when several paths share it."""
    out: dict[str, str | None] = {}
    for f in facts:
        base = f.key.rstrip("/").rsplit("/", 1)[-1]
        if base and base != f.key:
            out[base] = f.key if out.get(base, f.key) == f.key else None
    for f in facts:  # a bare file name that is itself a fact makes its basename ambiguous
        if "/" not in f.key and f.key in out:
            out[f.key] = None
    return out
