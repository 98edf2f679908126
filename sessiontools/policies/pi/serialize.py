"""What Pi sends to the summariser: `convertToLlm`, `serializeConversation` (tool results cut at
2,000 UTF-16 units), and the file operations appended to every summary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessiontools.jsvalues import _NEEDS_ESCAPE, UNDEFINED, js_entries, js_truthy, json_stringify, utf16_len

Message = Mapping[str, Any]

TOOL_RESULT_MAX_CHARS = 2000

COMPACTION_SUMMARY_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"


def _js_str(v: Any) -> str:
    """String(v) inside a template literal, for the values that occur here."""
    if v is None:
        return "null"
    if isinstance(v, str):
        return v
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, Mapping):
        return "[object Object]"
    if isinstance(v, list):  # Array.prototype.toString: elements joined by ",", null as ""
        return ",".join("" if x is None else _js_str(x) for x in v)
    s = json_stringify(v)
    return s if s is not None else "undefined"


def _join(parts: Iterable[Any], sep: str) -> str:
    """Array.prototype.join: null and undefined become empty strings."""
    return sep.join("" if p is None else _js_str(p) for p in parts)


def bash_execution_to_text(msg: Message) -> str:
    """Pi's `bashExecutionToText`."""
    text = f"Ran `{_js_str(msg.get('command'))}`\n"
    output = msg.get("output")
    if js_truthy(output):
        text += f"```\n{_js_str(output)}\n```"
    else:
        text += "(no output)"
    if js_truthy(msg.get("cancelled")):
        text += "\n\n(command cancelled)"
    elif msg.get("exitCode") is not None and msg.get("exitCode") != 0:
        text += f"\n\nCommand exited with code {_js_str(msg.get('exitCode'))}"
    if js_truthy(msg.get("truncated")) and js_truthy(msg.get("fullOutputPath")):
        text += f"\n\n[Output truncated. Full output: {_js_str(msg.get('fullOutputPath'))}]"
    return text


def convert_to_llm(messages: Sequence[Message], pi_version: str) -> list[Message]:
    """Pi's `convertToLlm`: custom roles become user messages; 1.x passes system messages through."""
    out: list[Message] = []
    for m in messages:
        role = m.get("role")
        ts = m.get("timestamp")
        if role == "bashExecution":
            if js_truthy(m.get("excludeFromContext")):
                continue
            out.append({"role": "user", "content": [{"type": "text", "text": bash_execution_to_text(m)}], "timestamp": ts})
        elif role == "custom":
            content = m.get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            out.append({"role": "user", "content": content, "timestamp": ts})
        elif role == "branchSummary":
            text = BRANCH_SUMMARY_PREFIX + _js_str(m.get("summary")) + BRANCH_SUMMARY_SUFFIX
            out.append({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts})
        elif role == "compactionSummary":
            text = COMPACTION_SUMMARY_PREFIX + _js_str(m.get("summary")) + COMPACTION_SUMMARY_SUFFIX
            out.append({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts})
        elif role in ("user", "assistant", "toolResult") or (role == "system" and pi_version != "0"):
            out.append(m)
    return out


def utf16_head(text: str, units: int, *, keep_pairs: bool) -> str:
    """`text.slice(0, units)` (0.x), or 1.x `sliceHead`, which never splits a surrogate pair."""
    if text.isascii():
        return text[:units]
    # The first units + 1 code points hold the first units UTF-16 units and the one after them.
    raw = text[: units + 1].encode("utf-16-le", "surrogatepass")
    cut = raw[: 2 * units]
    if keep_pairs and len(cut) >= 2 and len(raw) > len(cut):
        last = int.from_bytes(cut[-2:], "little")
        nxt = int.from_bytes(raw[len(cut): len(cut) + 2], "little")
        if 0xD800 <= last <= 0xDBFF and 0xDC00 <= nxt <= 0xDFFF:
            cut = cut[:-2]
    return cut.decode("utf-16-le", "surrogatepass")


def truncate_for_summary(text: str, max_chars: int, pi_version: str) -> str:
    n = utf16_len(text)
    if n <= max_chars:
        return text
    head = utf16_head(text, max_chars, keep_pairs=pi_version != "0")
    return f"{head}\n\n[... {n - max_chars} more characters truncated]"


def _text_blocks(content: Any, sep: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return _join((b.get("text") for b in content
                  if (type(b) is dict or isinstance(b, Mapping)) and b.get("type") == "text"), sep)


def _tool_call_text(block: Mapping[str, Any]) -> str:
    args = block.get("arguments")
    items = js_entries(args) if isinstance(args, Mapping) else []
    args_str = ", ".join(f"{k}={json_stringify(v)}" for k, v in items)
    name = _js_str(block["name"]) if "name" in block else "undefined"  # `${block.name}` of a missing key
    return f"{name}({args_str})"


def serialize_conversation(messages: Sequence[Message], pi_version: str) -> str:
    """Pi's `serializeConversation` over already-converted LLM messages."""
    parts: list[str] = []
    for msg in messages:
        role = msg.get("role")
        content = msg.get("content")
        if role == "user":
            text = _text_blocks(content, "")
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
            calls = [_tool_call_text(b) for b in blocks if b.get("type") == "toolCall"]
            if pi_version == "0":
                texts = [b.get("text") for b in blocks if b.get("type") == "text"]
                thinking = [b.get("thinking") for b in blocks if b.get("type") == "thinking"]
                if thinking:
                    parts.append(f"[Assistant thinking]: {_join(thinking, chr(10))}")
                if texts:
                    parts.append(f"[Assistant]: {_join(texts, chr(10))}")
            elif any(b.get("type") == "text" for b in blocks):
                parts.append(f"[Assistant]: {_text_blocks(blocks, chr(10))}")
            if calls:
                parts.append(f"[Assistant tool calls]: {'; '.join(calls)}")
        elif role == "toolResult":
            text = _text_blocks(content, "")
            if text:
                parts.append(f"[Tool result]: {truncate_for_summary(text, TOOL_RESULT_MAX_CHARS, pi_version)}")
    return "\n\n".join(parts)


_USER, _TOOL_RESULT = "[User]: ", "[Tool result]: "
_ASSISTANT, _THINKING, _CALLS = "[Assistant]: ", "[Assistant thinking]: ", "[Assistant tool calls]: "


def _truncated_length(text: str, pi_version: str) -> int:
    """len(truncate_for_summary(text, TOOL_RESULT_MAX_CHARS, pi_version))."""
    n = utf16_len(text)
    if n <= TOOL_RESULT_MAX_CHARS:
        return len(text)
    head = utf16_head(text, TOOL_RESULT_MAX_CHARS, keep_pairs=pi_version != "0")
    return len(head) + len(f"\n\n[... {n - TOOL_RESULT_MAX_CHARS} more characters truncated]")


def _js_str_length(v: Any) -> int:
    """len(_js_str(v)), and 0 for None (as Array.prototype.join writes it)."""
    if type(v) is str:
        return len(v)
    return 0 if v is None else len(_js_str(v))


def _tool_call_length(block: Mapping[str, Any]) -> int:
    """len(_tool_call_text(block)): the order of the arguments does not change the length."""
    name = block.get("name", UNDEFINED)
    n = 2 + (len(name) if type(name) is str else 9 if name is UNDEFINED else len(_js_str(name)))  # `${undefined}`
    args = block.get("arguments")
    if (type(args) is dict or isinstance(args, Mapping)) and args:
        for k, v in args.items():
            if type(v) is str and _NEEDS_ESCAPE.search(v) is None:
                n += (len(k) if type(k) is str else len(f"{k}")) + 3 + len(v)  # JSON.stringify adds the quotes only
                continue
            sv = json_stringify(v)
            n += (len(k) if type(k) is str else len(f"{k}")) + 1 + (len(sv) if sv is not None else len(f"{sv}"))
        n += 2 * (len(args) - 1)
    return n


def _assistant_length(content: Any, pi_version: str) -> int:
    """The length of an assistant message's parts in `serialize_conversation`, joined."""
    if not isinstance(content, list):
        return 0
    texts = thinking = calls = 0  # how many blocks of each kind
    text_len = thinking_len = calls_len = 0
    for b in content:
        if type(b) is not dict and not isinstance(b, Mapping):
            continue
        t = b.get("type")
        if t == "text":
            texts += 1
            v = b.get("text")
            text_len += len(v) if type(v) is str else _js_str_length(v)
        elif t == "toolCall":
            calls += 1
            calls_len += _tool_call_length(b)
        elif t == "thinking":
            thinking += 1
            thinking_len += _js_str_length(b.get("thinking"))
    lengths = []
    if thinking and pi_version == "0":
        lengths.append(len(_THINKING) + thinking_len + thinking - 1)
    if texts:  # 0.x: the text blocks joined by newlines; 1.x: `_text_blocks(blocks, "\n")`, the same
        lengths.append(len(_ASSISTANT) + text_len + texts - 1)
    if calls:
        lengths.append(len(_CALLS) + calls_len + 2 * (calls - 1))
    return sum(lengths) + 2 * (len(lengths) - 1) if lengths else 0


def _ascii_text_length(content: Any) -> int | None:
    """len(_text_blocks(content, "")) when content is a list of dicts whose text blocks hold ASCII
    strings (then the length is the sum, and UTF-16 units are characters); else None."""
    if type(content) is not list:
        return None
    n = 0
    for b in content:
        if type(b) is not dict:
            return None
        if b.get("type") == "text":
            t = b.get("text")
            if type(t) is not str or not t.isascii():
                return None
            n += len(t)
    return n


def serialized_length(message: Message, pi_version: str) -> int:
    """len(serialize_conversation(convert_to_llm([message], pi_version), pi_version)): one message's
    part of the summariser's input (Python length), without building the parts where it can."""
    role = message.get("role")
    if role == "toolResult" or role == "user":
        n = _ascii_text_length(message.get("content"))
        if n is not None:  # the joined text is not built: its length says everything
            if not n:
                return 0
            if role == "user":
                return len(_USER) + n
            if n <= TOOL_RESULT_MAX_CHARS:
                return len(_TOOL_RESULT) + n
            return len(_TOOL_RESULT) + TOOL_RESULT_MAX_CHARS + len(
                f"\n\n[... {n - TOOL_RESULT_MAX_CHARS} more characters truncated]")
    if role == "toolResult":
        text = _text_blocks(message.get("content"), "")
        return len(_TOOL_RESULT) + _truncated_length(text, pi_version) if text else 0
    if role == "user":
        text = _text_blocks(message.get("content"), "")
        return len(_USER) + len(text) if text else 0
    if role == "assistant":
        return _assistant_length(message.get("content"), pi_version)
    # Converted first (custom roles become user messages).
    return len(serialize_conversation(convert_to_llm([message], pi_version), pi_version))


@dataclass(slots=True)
class FileOps:
    """Files touched by tool calls, in first-seen order (JavaScript Sets)."""

    read: dict[str, None] = field(default_factory=dict)
    written: dict[str, None] = field(default_factory=dict)
    edited: dict[str, None] = field(default_factory=dict)


def _file_op(name: Any, args: Any) -> tuple[int, str] | None:
    """What one tool call does to a file: (0 read, 1 written, 2 edited; its path), None when nothing."""
    path = args.get("path") if isinstance(args, Mapping) else None
    if not isinstance(path, str) or not path:
        return None
    if name == "read":
        return 0, path
    if name == "write":
        return 1, path
    if name == "edit":
        return 2, path
    return None


def _file_ops_of(message: Message, pi_version: str) -> list[tuple[int, str]]:
    """Pi's `extractFileOpsFromMessage` as a list: the `_file_op` of each call of `message` it reads, in
    order (1.x also reads codemode `nestedCalls` on tool results)."""
    out: list[tuple[int, str]] = []
    role = message.get("role")
    if role == "assistant":
        content = message.get("content")
        if type(content) is not list:
            return out
        for block in content:
            if type(block) is not dict or block.get("type") != "toolCall":
                continue
            if "arguments" not in block or "name" not in block:
                continue
            args = block.get("arguments")
            if pi_version == "0" and not js_truthy(args):
                continue
            if (op := _file_op(block.get("name"), args)) is not None:
                out.append(op)
    elif role == "toolResult" and pi_version != "0":
        nested = message.get("nestedCalls")
        calls = nested.get("calls") if isinstance(nested, Mapping) else None
        for call in calls or ():
            if isinstance(call, Mapping) and (op := _file_op(call.get("name"), call.get("arguments"))) is not None:
                out.append(op)
    return out


def extract_file_ops(message: Message, ops: FileOps, pi_version: str) -> None:
    """Pi's `extractFileOpsFromMessage`: the files of `message`'s tool calls added to `ops`, in order."""
    for kind, path in _file_ops_of(message, pi_version):
        (ops.read, ops.written, ops.edited)[kind][path] = None


def own_file_ops(message: Message, pi_version: str) -> FileOps | None:
    """`extract_file_ops` of `message` alone, None when it touches no file (no FileOps made for it: most
    messages touch none)."""
    found = _file_ops_of(message, pi_version)
    if not found:
        return None
    one = FileOps()
    for kind, path in found:
        (one.read, one.written, one.edited)[kind][path] = None
    return one


def _js_sort(items: Iterable[str]) -> list[str]:
    """Array.prototype.sort() on strings: UTF-16 code unit order (code point order, Python's, for ASCII)."""
    items = list(items)
    if "".join(items).isascii():  # every item ASCII
        return sorted(items)
    return sorted(items, key=lambda s: s.encode("utf-16-be", "surrogatepass"))


def compute_file_lists(ops: FileOps) -> tuple[list[str], list[str]]:
    """Pi's `computeFileLists`: (files only read, files modified), each sorted."""
    modified = dict.fromkeys([*ops.edited, *ops.written])
    read_only = _js_sort([f for f in ops.read if f not in modified])
    return read_only, _js_sort(modified)


def format_file_operations(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    """Pi's `formatFileOperations`: the `<read-files>`/`<modified-files>` tail of a summary."""
    sections = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""
