"""Hypothesis strategies for raw Pi session files (lists of JSON-able records, header first).

Kinds:
    v1    linear file, header without "version", no ids; compaction points back with
          firstKeptEntryIndex (an index into the file's entries, header = 0)
    v2    tree (id/parentId), "hookMessage" role, branch summaries, labels, custom entries
    v3    Pi 0.x (version 3): custom role, custom_message, session_info, ...
    1x    Pi 1.x features on a version-3 file: context_edit, system-role messages (sections,
          toolsAdded/toolsRemoved), compaction.systemMessage/usage, usage entries,
          toolResult.nestedCalls

`session_files()` draws any kind, `session_files("v1")` one kind. Trees branch from earlier
entries (sometimes from no parent at all); the last record is the default leaf. Texts range from
empty to tens of thousands of characters and include CJK, combining marks, astral emoji (so
UTF-16 lengths differ from code points), control characters and, rarely, lone surrogates.
Tool-call arguments carry floats such as 1.0, 1e21 and 1e-7, integer-like keys ("10", "2") and
nested values. `to_jsonl_lines(records)` writes records the way Pi does (JSON.stringify).
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import strategies as st

__all__ = [
    "KINDS",
    "js_json",
    "js_number",
    "json_values",
    "session_files",
    "session_lines",
    "texts",
    "to_jsonl_lines",
]

KINDS = ("v1", "v2", "v3", "1x")

# ---------------------------------------------------------------------------------------------
# JSON.stringify-compatible serialization
# ---------------------------------------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_INDEX = 2**32 - 1  # array-index property keys are the canonical strings of 0 .. 2**32 - 2


def js_number(value: float | int) -> str:
    """A number as JavaScript prints it (Number::toString on the IEEE double)."""
    if isinstance(value, int) and abs(value) < 2**53:
        return str(value)
    try:
        x = float(value)
    except OverflowError:
        return "null"
    if math.isnan(x) or math.isinf(x):
        return "null"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    text = repr(abs(x))  # shortest round-trip digits, like JS
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    exponent -= len(frac_part)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    k = len(digits)
    n = exponent + k  # value = 0.digits * 10**n
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        out = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + out


def _is_index_key(key: str) -> bool:
    return key.isdigit() and key.isascii() and str(int(key)) == key and int(key) < _MAX_INDEX


def _js_string(value: str) -> str:
    text = json.dumps(value, ensure_ascii=False)
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def js_json(value: Any) -> str:
    """`JSON.stringify(value)` for a JSON-able Python value (as JS would hold it after JSON.parse).

    Object keys that are array indices ("0", "10", not "01") come first in ascending numeric
    order, then the other keys in insertion order; integral numbers print without ".0", big
    ones in JS form (1e+21, 123456789012345680000), NaN/Infinity as null, lone surrogates as
    \\udXXX escapes. Non-ASCII characters are written as they are.
    """
    parts: list[str] = []
    _emit(value, parts.append)
    return "".join(parts)


def _emit(value: Any, out: Callable[[str], Any]) -> None:
    if value is None:
        out("null")
    elif value is True:
        out("true")
    elif value is False:
        out("false")
    elif isinstance(value, str):
        out(_js_string(value))
    elif isinstance(value, int | float):
        out(js_number(value))
    elif isinstance(value, dict):
        keys = [str(k) for k in value]
        items = list(zip(keys, value.values(), strict=True))
        index_items = sorted((kv for kv in items if _is_index_key(kv[0])), key=lambda kv: int(kv[0]))
        other_items = [kv for kv in items if not _is_index_key(kv[0])]
        out("{")
        first = True
        for key, item in index_items + other_items:
            if not first:
                out(",")
            first = False
            out(_js_string(key))
            out(":")
            _emit(item, out)
        out("}")
    elif isinstance(value, list | tuple):
        out("[")
        for i, item in enumerate(value):
            if i:
                out(",")
            _emit(item, out)
        out("]")
    else:
        raise TypeError(f"not JSON-able: {type(value).__name__}")


def to_jsonl_lines(records: Iterable[Any], *, js_numbers: bool = True) -> list[str]:
    """One line per record, serialized like Pi's JSON.stringify (compact, non-ASCII kept).

    With `js_numbers=False` Python's own json formatting is used instead (``1.0``, ``1e-07``,
    insertion key order): still valid JSON that Pi reads, as hand-edited files may contain.
    """
    if js_numbers:
        return [js_json(r) for r in records]
    lines = []
    for record in records:
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        if _SURROGATE.search(text):
            text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
        lines.append(text)
    return lines


# ---------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------

_SNIPPETS = [
    "",
    "ok",
    "hello world",
    "Fix the failing test in src/app.py",
    "日本語のテキストと中文字符",
    "한국어 문장입니다",
    "😀",
    "🚀🔥👩\u200d💻",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛",
    "e\u0301 combining",
    "line1\nline2\r\nline3",
    "tab\there",
    'quote " and backslash \\',
    "</summary> <read-files>",
    "\x00\x01\x1f control",
    "\u2028\u2029 separators",
    "\ufeffBOM inside",
    "def f(x):\n    return {'a': [1, 2.0]}\n",
    "```bash\nls -la\n```",
]
_RARE = ["\ud800 lone high", "lone low \udc00", "\udbff"]
_WORDS = ["the", "session", "compaction", "token", "函数", "テスト", "🙂", "path", "{", "}", "\n", " ", "x"]

_big_chunks = st.sampled_from(["abcd", "0123456789\n", "日本語", "😀🚀", "word ", "import os\n", "Ωmega "])


@functools.cache
def texts(max_repeat: int = 4000) -> st.SearchStrategy[str]:
    """Strings from empty to tens of thousands of characters."""
    return st.one_of(
        st.sampled_from(_SNIPPETS),
        st.text(max_size=24),
        st.lists(st.sampled_from(_WORDS), max_size=12).map("".join),
        st.tuples(_big_chunks, st.integers(1, max_repeat)).map(lambda t: t[0] * t[1]),
        st.sampled_from(_RARE),
    )


_SPECIAL_NUMBERS = [0, -1, 1, 1.0, 1.5, -0.0, 0.1, 1e21, 1e-7, 1e300, 2**53, 2**53 + 1, 123456789012345680000.0, 3.14159]
_KEYS = ["path", "content", "10", "2", "0", "01", "-1", "limit", "offset", "a b", "ключ", "😀", "__proto__", "4294967295"]


@functools.cache
def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Nested JSON values with JS-sensitive numbers and keys."""
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from(_SPECIAL_NUMBERS),
        st.integers(-(2**60), 2**60),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(_SNIPPETS),
        st.text(max_size=8),
    )
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(st.one_of(st.sampled_from(_KEYS), st.text(max_size=5)), children, max_size=4),
        ),
        max_leaves=max_leaves,
    )


_OVERFLOW_ERRORS = [
    "prompt is too long: 213462 tokens > 200000 maximum",
    '413 {"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}',
    "Your input exceeds the context window of this model",
    "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)",
    "This model's maximum prompt length is 131072 but the request contains 537812 tokens",
    "This endpoint's maximum context length is 128000 tokens. However, you requested about 130000 tokens",
    "400 status code (no body)",
    "Prompt too long",
    "Requested token count exceeds the model's maximum context length of 131072 tokens",
]
_OTHER_ERRORS = [
    "Request was aborted.",
    "rate limit exceeded: too many tokens per minute",
    "ThrottlingException: Too many tokens, please wait before trying again.",
    "Service unavailable: overloaded",
    "Connection error.",
    "",
]
_TOOLS = ["read", "write", "edit", "bash", "grep", "ls", "custom_tool"]
_PATHS = ["/repo/src/app.py", "src/日本.ts", "README.md", "/tmp/😀.txt", "a/b/c.json", "", "src/app.py"]


class _Ctx:
    """Mutable generation state for one session."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any], kind: str) -> None:
        self.draw = draw
        self.kind = kind
        self.ms = draw(st.integers(1_700_000_000_000, 1_800_000_000_000))
        self.id_base = draw(st.integers(0, 2**32 - 1))
        self.count = 0
        self.records: list[dict] = []
        self.ids: list[str] = []
        self.parent: dict[str, str | None] = {}
        self.leaf: str | None = None
        self.tool_calls: list[tuple[str, str]] = []

    # time ------------------------------------------------------------------------------------
    def tick(self) -> int:
        self.ms += self.draw(st.integers(0, 90_000))
        return self.ms

    def iso(self) -> str:
        t = _dt.datetime.fromtimestamp(self.tick() / 1000, tz=_dt.UTC)
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"

    # ids ---------------------------------------------------------------------------------------
    def new_id(self) -> str:
        self.count += 1
        return f"{(self.id_base + self.count * 2654435761) % 2**32:08x}"

    def path_ids(self) -> list[str]:
        out = []
        cur = self.leaf
        seen = set()
        while cur is not None and cur not in seen:
            seen.add(cur)
            out.append(cur)
            cur = self.parent.get(cur)
        out.reverse()
        return out

    def text(self) -> str:
        return self.draw(texts())

    def short(self) -> str:
        return self.draw(st.sampled_from(_SNIPPETS))

    # records -----------------------------------------------------------------------------------
    def add(self, entry_type: str, fields: dict) -> dict:
        if self.kind == "v1":
            record = {"type": entry_type, "timestamp": self.iso(), **fields}
        else:
            entry_id = self.new_id()
            record = {"type": entry_type, "id": entry_id, "parentId": self.leaf, "timestamp": self.iso(), **fields}
            self.parent[entry_id] = self.leaf
            self.ids.append(entry_id)
            self.leaf = entry_id
        self.records.append(record)
        return record


def _image_block(draw) -> dict:
    return {"type": "image", "data": draw(st.sampled_from(["iVBORw0KGgo=", "", "R0lGODlh" * 50])), "mimeType": "image/png"}


def _content_blocks(c: _Ctx, images: bool = True) -> list[dict]:
    draw = c.draw
    blocks = []
    for _ in range(draw(st.integers(0, 3))):
        choice = draw(st.integers(0, 9))
        if images and choice == 0:
            blocks.append(_image_block(draw))
        elif choice == 1:
            blocks.append({"type": "text", "text": ""})
        else:
            blocks.append({"type": "text", "text": c.text()})
    return blocks


def _user_message(c: _Ctx) -> dict:
    draw = c.draw
    content: Any = c.text() if draw(st.booleans()) else _content_blocks(c)
    return {"role": "user", "content": content, "timestamp": c.tick()}


def _usage(c: _Ctx) -> dict | None:
    draw = c.draw
    shape = draw(st.integers(0, 5))
    if shape == 0:
        return None
    if shape == 1:
        return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    n = draw(st.integers(0, 250_000))
    usage: dict[str, Any] = {
        "input": n,
        "output": draw(st.integers(0, 8000)),
        "cacheRead": draw(st.sampled_from([0, 0, 12345, 130604])),
        "cacheWrite": draw(st.sampled_from([0, 512, 2048])),
    }
    if shape != 2:
        usage["totalTokens"] = sum(usage.values())
    if shape == 3:
        usage["totalTokens"] = 0  # falls back to the sum of the parts
    usage["cost"] = {"input": 0.013875000000000002, "output": 0.0035, "cacheRead": 0.0, "cacheWrite": 1.0, "total": 0.1}
    return usage


def _tool_arguments(c: _Ctx, name: str) -> dict:
    draw = c.draw
    path: Any = draw(st.sampled_from(_PATHS))
    if draw(st.integers(0, 9)) == 0:
        path = draw(st.sampled_from([None, 42, ["x"], {"nested": "p"}]))
    if name == "read":
        args: dict[str, Any] = {"path": path}
        if draw(st.booleans()):
            args["offset"] = draw(st.sampled_from([1, 1.0, 10, 2.5]))
        if draw(st.booleans()):
            args["limit"] = draw(st.sampled_from([100, 1e21, 2000]))
    elif name == "write":
        args = {"path": path, "content": c.text()}
    elif name == "edit":
        args = {"path": path, "oldText": c.short(), "newText": c.text()}
    elif name == "bash":
        args = {"command": c.text()}
        if draw(st.booleans()):
            args["timeout"] = draw(st.sampled_from([1.0, 30, 1e-7, 0.5]))
    else:
        args = draw(st.dictionaries(st.sampled_from(_KEYS), json_values(), max_size=5))
    if draw(st.integers(0, 7)) == 0:
        args[draw(st.sampled_from(["10", "2", "0"]))] = draw(json_values(4))
    return args


def _assistant_message(c: _Ctx, tool_calls: int, stop_reason: str | None = None) -> dict:
    draw = c.draw
    content: list[dict] = []
    if draw(st.integers(0, 3)) == 0:
        block = {"type": "thinking", "thinking": c.text()}
        if draw(st.booleans()):
            block["thinkingSignature"] = "sig"
        content.append(block)
    if draw(st.integers(0, 2)) > 0:
        content.append({"type": "text", "text": c.text()})
    c.tool_calls = []
    for _ in range(tool_calls):
        name = draw(st.sampled_from(_TOOLS))
        call_id = f"toolu_{c.new_id()}"
        content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": _tool_arguments(c, name)})
        c.tool_calls.append((call_id, name))
    if stop_reason is None:
        stop_reason = "toolUse" if tool_calls else draw(st.sampled_from(["stop", "stop", "stop", "aborted", "error", "length"]))
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": draw(st.sampled_from(["anthropic", "openai", "cerebras"])),
        "model": draw(st.sampled_from(["claude-opus-4-5", "gpt-5", "qwen"])),
    }
    usage = _usage(c)
    if usage is not None:
        message["usage"] = usage
    message["stopReason"] = stop_reason
    if stop_reason == "error":
        message["errorMessage"] = draw(st.sampled_from(_OVERFLOW_ERRORS + _OTHER_ERRORS))
    elif stop_reason == "aborted" and draw(st.booleans()):
        message["errorMessage"] = "Request was aborted."
    message["timestamp"] = c.tick()
    return message


def _tool_result(c: _Ctx, call_id: str, name: str) -> dict:
    draw = c.draw
    message: dict[str, Any] = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": _content_blocks(c) or [{"type": "text", "text": c.text()}],
        "isError": draw(st.booleans()),
        "timestamp": c.tick(),
    }
    if draw(st.integers(0, 4)) == 0:
        message["details"] = {"diff": c.short(), "exitCode": 0}
    if c.kind == "1x" and draw(st.integers(0, 4)) == 0:
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            tool = draw(st.sampled_from(["read", "write", "edit", "bash"]))
            calls.append({"name": tool, "arguments": _tool_arguments(c, tool)})
        message["nestedCalls"] = {"calls": calls}
    return message


def _bash_message(c: _Ctx) -> dict:
    draw = c.draw
    message: dict[str, Any] = {
        "role": "bashExecution",
        "command": c.text(),
        "output": c.text(),
        "exitCode": draw(st.sampled_from([0, 0, 1, 127, None])),
        "cancelled": draw(st.booleans()),
        "truncated": draw(st.booleans()),
        "timestamp": c.tick(),
    }
    if message["truncated"] and draw(st.booleans()):
        message["fullOutputPath"] = "/tmp/pi-bash-output.txt"
    if c.kind != "v1" and draw(st.integers(0, 3)) == 0:
        message["excludeFromContext"] = True
    return message


def _custom_role_message(c: _Ctx) -> dict:
    draw = c.draw
    message: dict[str, Any] = {
        "role": "hookMessage" if c.kind in ("v1", "v2") else "custom",
        "customType": draw(st.sampled_from(["todo", "note", "ext:reminder"])),
        "content": c.text() if draw(st.booleans()) else _content_blocks(c),
        "display": draw(st.booleans()),
        "timestamp": c.tick(),
    }
    if draw(st.booleans()):
        message["details"] = {"count": draw(st.integers(0, 9))}
    return message


def _system_message(c: _Ctx) -> dict:
    draw = c.draw
    message: dict[str, Any] = {
        "role": "system",
        "content": c.text() if draw(st.booleans()) else [{"type": "text", "text": c.text()}],
    }
    if draw(st.booleans()):
        names = draw(st.lists(st.sampled_from(["<rules>", "env", "skills", "10", "2", "日本"]), max_size=4, unique=True))
        message["sections"] = {n: (None if draw(st.integers(0, 3)) == 0 else c.text()) for n in names}
    if draw(st.booleans()):
        message["toolsAdded"] = [
            {"name": draw(st.sampled_from(_TOOLS)), "description": c.short(),
             "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}
            for _ in range(draw(st.integers(1, 3)))
        ]
    if draw(st.integers(0, 3)) == 0:
        message["toolsRemoved"] = [{"name": draw(st.sampled_from(_TOOLS))}]
    message["timestamp"] = c.tick()
    return message


# ---------------------------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------------------------


def _turn(c: _Ctx) -> None:
    draw = c.draw
    c.add("message", {"message": _user_message(c)})
    for _ in range(draw(st.integers(0, 3))):
        n_calls = draw(st.integers(1, 3))
        c.add("message", {"message": _assistant_message(c, n_calls, "toolUse")})
        for call_id, name in list(c.tool_calls):
            if draw(st.integers(0, 9)) == 0:
                break  # interrupted: missing tool results
            c.add("message", {"message": _tool_result(c, call_id, name)})
    if draw(st.integers(0, 4)) > 0:
        c.add("message", {"message": _assistant_message(c, 0)})


def _compaction(c: _Ctx) -> None:
    draw = c.draw
    fields: dict[str, Any] = {"summary": c.text()}
    if c.kind == "v1":
        existing = len(c.records)  # index into the file's entries (header is 0)
        fields["firstKeptEntryIndex"] = draw(
            st.one_of(st.integers(0, existing), st.sampled_from([existing + 5, -1, 2.5, "3"]))
        )
    else:
        path = c.path_ids()
        choice = draw(st.integers(0, 9))
        if path and choice < 7:
            fields["firstKeptEntryId"] = draw(st.sampled_from(path))
        elif choice == 7:
            fields["firstKeptEntryId"] = "deadbeef"  # missing id
        elif choice == 8:
            fields["firstKeptEntryId"] = None  # retain none: patched below to the entry's own id
        # choice 9: no firstKeptEntryId at all
    fields["tokensBefore"] = draw(st.integers(0, 300_000))
    if draw(st.integers(0, 3)) > 0:
        fields["details"] = {
            "readFiles": draw(st.lists(st.sampled_from(_PATHS), max_size=3)),
            "modifiedFiles": draw(st.lists(st.sampled_from(_PATHS), max_size=3)),
        }
        if draw(st.integers(0, 7)) == 0:
            fields["details"]["readFiles"] = "not-an-array"
    if draw(st.integers(0, 7)) == 0:
        fields["fromHook"] = True
    if c.kind == "1x":
        if draw(st.booleans()):
            fields["systemMessage"] = _system_message(c)
        if draw(st.booleans()):
            usage = _usage(c)
            if usage is not None:
                fields["usage"] = usage
    record = c.add("compaction", fields)
    if c.kind != "v1" and "firstKeptEntryId" in record and record["firstKeptEntryId"] is None:
        record["firstKeptEntryId"] = record["id"]


def _branch_summary(c: _Ctx) -> None:
    draw = c.draw
    fields: dict[str, Any] = {
        "fromId": draw(st.sampled_from(c.ids)) if c.ids else "root",
        "summary": draw(st.one_of(st.just(""), texts())),
    }
    if draw(st.booleans()):
        fields["details"] = {"readFiles": [], "modifiedFiles": [draw(st.sampled_from(_PATHS))]}
    if draw(st.integers(0, 5)) == 0:
        fields["fromHook"] = True
    c.add("branch_summary", fields)


def _custom_message_entry(c: _Ctx) -> None:
    draw = c.draw
    fields: dict[str, Any] = {
        "customType": draw(st.sampled_from(["todo", "ext:context"])),
        "content": c.text() if draw(st.booleans()) else _content_blocks(c),
        "display": draw(st.booleans()),
    }
    if draw(st.booleans()):
        fields["details"] = {"k": draw(json_values(3))}
    c.add("custom_message", fields)


def _context_edit(c: _Ctx) -> None:
    draw = c.draw
    path = c.path_ids()
    target = draw(st.sampled_from(path)) if path and draw(st.integers(0, 5)) > 0 else "cafebabe"
    shape = draw(st.integers(0, 2))
    if shape == 0:
        replacement: Any = None
    elif shape == 1:
        replacement = {"content": c.text()}
    else:
        replacement = {"content": [{"type": "text", "text": c.text()}] + ([_image_block(draw)] if draw(st.booleans()) else [])}
    c.add("context_edit", {"targetId": target, "replacement": replacement})


def _simple(entry_type: str) -> Callable[[_Ctx], None]:
    def build(c: _Ctx) -> None:
        draw = c.draw
        if entry_type == "model_change":
            fields: dict[str, Any] = {"provider": draw(st.sampled_from(["anthropic", "openai"])),
                                      "modelId": draw(st.sampled_from(["claude-opus-4-5", "gpt-5"]))}
        elif entry_type == "thinking_level_change":
            fields = {"thinkingLevel": draw(st.sampled_from(["off", "minimal", "low", "medium", "high"]))}
        elif entry_type == "label":
            fields = {"targetId": draw(st.sampled_from(c.ids)) if c.ids else "nowhere",
                      "label": draw(st.sampled_from(["checkpoint", "", None, "重要"]))}
        elif entry_type == "session_info":
            fields = {"name": draw(st.sampled_from(["refactor", "  ", "調査 🚀"]))}
        elif entry_type == "custom":
            fields = {"customType": "ext-state", "data": draw(json_values(4))}
        elif entry_type == "usage":
            fields = {"kind": "summary", "provider": "anthropic", "model": "claude-opus-4-5", "usage": _usage(c) or {}}
        else:  # pragma: no cover
            raise ValueError(entry_type)
        c.add(entry_type, fields)

    return build


def _message_step(make: Callable[[_Ctx], dict]) -> Callable[[_Ctx], None]:
    def build(c: _Ctx) -> None:
        c.add("message", {"message": make(c)})

    return build


def _quirk(c: _Ctx) -> None:
    """Entries real (old, forked, hand-edited) files can contain; Pi throws on some of them."""
    draw = c.draw
    variants = ["no_content", "null_message", "bad_tool_call", "bash_no_output", "unknown_role",
                "compaction_no_summary", "null_text", "unknown_type"]
    if c.kind != "v1":
        variants += ["orphan", "no_id", "duplicate_id"]
    variant = draw(st.sampled_from(variants))
    if variant == "no_content":
        role = draw(st.sampled_from(["user", "assistant", "toolResult", "custom", "system"]))
        message: dict[str, Any] = {"role": role, "timestamp": c.tick()}
        if draw(st.booleans()):
            message["content"] = None
        c.add("message", {"message": message})
    elif variant == "null_message":
        c.add("message", {"message": None})
    elif variant == "bad_tool_call":
        call: dict[str, Any] = {"type": "toolCall", "id": "toolu_x", "name": draw(st.sampled_from(["read", "edit"]))}
        shape = draw(st.integers(0, 2))
        if shape == 1:
            call["arguments"] = None
        elif shape == 2:
            del call["name"]
            call["arguments"] = {"path": "x"}
        c.add("message", {"message": {"role": "assistant", "content": [call], "stopReason": "toolUse", "timestamp": c.tick()}})
    elif variant == "bash_no_output":
        c.add("message", {"message": {"role": "bashExecution", "command": "ls", "exitCode": 0, "timestamp": c.tick()}})
    elif variant == "unknown_role":
        c.add("message", {"message": {"role": "weird", "content": c.short(), "timestamp": c.tick()}})
    elif variant == "compaction_no_summary":
        fields: dict[str, Any] = {"tokensBefore": 5}
        if c.kind == "v1":
            fields["firstKeptEntryIndex"] = 1
        elif c.ids:
            fields["firstKeptEntryId"] = draw(st.sampled_from(c.ids))
        c.add("compaction", fields)
    elif variant == "null_text":
        block: dict[str, Any] = {"type": "text"}
        if draw(st.booleans()):
            block["text"] = None
        role = draw(st.sampled_from(["user", "assistant", "toolResult"]))
        c.add("message", {"message": {"role": role, "content": [block, {"type": "text", "text": "after"}], "timestamp": c.tick()}})
    elif variant == "unknown_type":
        c.add("mystery", {"payload": c.short()})
    elif variant == "orphan":
        c.leaf = "ffffffff"  # parent that does not exist: the path stops here
        c.add("message", {"message": _user_message(c)})
    elif variant == "no_id":
        record = c.add("message", {"message": _user_message(c)})
        c.ids.remove(record["id"])
        c.parent.pop(record["id"])
        c.leaf = record["parentId"]
        del record["id"]
    elif variant == "duplicate_id":
        record = c.add("message", {"message": _user_message(c)})
        if len(c.ids) > 1:
            old = draw(st.sampled_from(c.ids[:-1]))
            c.ids.pop()
            c.parent.pop(record["id"])
            record["id"] = old  # later duplicates win in Pi's id index; may even close a cycle
            c.leaf = old


_STEPS: dict[str, list[tuple[Callable[[_Ctx], None], int]]] = {}
_COMMON = [
    (_turn, 12),
    (_message_step(_bash_message), 2),
    (_compaction, 2),
    (_simple("model_change"), 1),
    (_simple("thinking_level_change"), 1),
]
_STEPS["v1"] = _COMMON + [(_message_step(_custom_role_message), 1)]
_STEPS["v2"] = _COMMON + [
    (_message_step(_custom_role_message), 1),
    (_branch_summary, 1),
    (_simple("label"), 1),
    (_simple("custom"), 1),
]
_STEPS["v3"] = _STEPS["v2"] + [(_custom_message_entry, 1), (_simple("session_info"), 1)]
_STEPS["1x"] = _STEPS["v3"] + [
    (_context_edit, 2),
    (_message_step(_system_message), 1),
    (_simple("usage"), 1),
]
_WEIGHTED = {kind: [step for step, weight in steps for _ in range(weight)] for kind, steps in _STEPS.items()}


def _header(c: _Ctx) -> dict:
    draw = c.draw
    header: dict[str, Any] = {"type": "session"}
    if c.kind == "v2":
        header["version"] = 2
    elif c.kind in ("v3", "1x"):
        header["version"] = 3
    header["id"] = f"{c.new_id()}-4060-ac13-7745215f90ff"
    header["timestamp"] = c.iso()
    header["cwd"] = draw(st.sampled_from(["/repo", "/Users/ボブ/code", "C:\\work"]))
    if c.kind == "v1" and draw(st.booleans()):
        header.update({"provider": "anthropic", "modelId": "claude-opus-4-5", "thinkingLevel": "off"})
    if c.kind != "v1" and draw(st.integers(0, 5)) == 0:
        header["parentSession"] = "/sessions/older.jsonl"
    return header


@st.composite
def _session(draw, kind: str, max_steps: int, quirks: bool) -> list[dict]:
    c = _Ctx(draw, kind)
    c.records.append(_header(c))
    steps = _WEIGHTED[kind] + ([_quirk] if quirks else [])
    for _ in range(draw(st.integers(0, max_steps))):
        if kind != "v1" and c.ids:
            jump = draw(st.integers(0, 19))
            if jump == 0:
                c.leaf = draw(st.sampled_from(c.ids))  # branch from an earlier entry
            elif jump == 1 and draw(st.integers(0, 4)) == 0:
                c.leaf = None  # a new root (navigated before the first entry)
        draw(st.sampled_from(steps))(c)
    return c.records


def session_files(
    kind: str | None = None, *, max_steps: int = 14, quirks: bool = True
) -> st.SearchStrategy[list[dict]]:
    """Raw session files (records, header first) of `kind` (one of KINDS) or any kind.

    `max_steps` bounds the number of generation steps (a step is one entry or a whole turn).
    With `quirks`, a step is sometimes an odd entry (missing content, null message, unknown
    role/type, orphan parent, missing or duplicate id, ...) on which Pi may throw.
    """
    if kind is None:
        return st.one_of(*[_session(k, max_steps, quirks) for k in KINDS])
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {KINDS}")
    return _session(kind, max_steps, quirks)


_JUNK_LINES = ["", "   ", "{not json", "null", "0", '"just a string"', "[]", "{}", '{"type":"message"']


@st.composite
def session_lines(
    draw, kind: str | None = None, *, max_steps: int = 14, quirks: bool = True, corrupt: bool = True
) -> list[str]:
    """Session file lines (records via to_jsonl_lines), sometimes with blank, malformed, bare-value
    or concatenated lines inserted after the header, as real files sometimes have."""
    records = draw(session_files(kind, max_steps=max_steps, quirks=quirks))
    lines = to_jsonl_lines(records, js_numbers=draw(st.integers(0, 4)) > 0)
    if corrupt and len(lines) > 1 and draw(st.integers(0, 2)) == 0:
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(1, len(lines)))
            if draw(st.booleans()) and at < len(lines):
                lines[at - 1] = lines[at - 1] + lines.pop(at)  # two records on one line
            else:
                lines.insert(at, draw(st.sampled_from(_JUNK_LINES)))
    return lines


@contextmanager
def no_local_constants() -> Iterator[None]:
    """Hypothesis (6.13x+) mixes into what it draws the literals of every local module loaded at the
    time (`providers._get_local_constants`: sessiontools.*, tests.*). So the examples a test drew
    depended on which tests ran before in the same pytest process: run after tests/robust and
    tests/read (which load the CLI), tests/parity/test_strategies.py drew other sessions and failed (and `PARITY_EXAMPLES=400` compared other sessions on two branches). With the pool
    empty, a fixed seed draws the same examples whatever was imported before."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - another Hypothesis layout: nothing to turn off
        yield
        return
    get = getattr(providers, "_get_local_constants", None)
    cache = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", None)
    if get is None or not hasattr(providers, "Constants"):
        yield
        return
    empty = providers.Constants()
    providers._get_local_constants = lambda: empty
    if cache is not None:
        cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = get
        if cache is not None:
            cache.clear()
