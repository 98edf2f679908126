"""The typed boundary of the Codex reader: the fields the toolkit reads from a rollout line, checked
once when the line is read (the checks live in `read.values`). A field that fails is removed from
the line and named in a `file:line: field: reason; dropped` diagnostic (kind `recovered`); a usage
with a bad count is dropped whole (a request's counts are only meaningful together)."""

from __future__ import annotations

from typing import Any

from sessiontools.read.values import (
    MAX_REQUEST_TOKENS,
    MAX_TOTAL_TOKENS,
    apply_changes,
    check_fields,
    content,
    count,
    fast_pass,
    optional_object,
    optional_text,
    scan_fields,
    text,
    total_count,
    tree_spec,
)

try:
    from sessiontools.read._native import check_tree
except ImportError:  # not built on this machine: every line checked in Python, with the same results
    check_tree = None


def _output(v: Any) -> tuple[Any, str | None]:
    if type(v) is str or type(v) is list or type(v) is dict:
        return v, None
    return None, f"not a string, list or object ({type(v).__name__})"


USAGE_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens",
              "total_tokens", "cache_write_input_tokens")
LINE = {"timestamp": text}
def _optional_content(v: Any) -> tuple[Any, str | None]:
    return (v, None) if v is None else content(v)  # (a reasoning item's content is null)


fast_pass(_output, (str, list, dict))
fast_pass(_optional_content, (str, list, type(None)))


PAYLOAD = {"type": text, "role": optional_text, "model": optional_text, "content": _optional_content,
           "output": _output, "arguments": text, "input": text, "name": text, "call_id": text,
           "message": optional_text, "model_context_window": total_count, "turn_id": optional_text,
           "info": optional_object}
BLOCK = {"type": text, "text": text}
INFO = {"model_context_window": total_count}


def _usage(holder: dict[str, Any], key: str, limit: int, where: str) -> list[str]:
    u = holder.get(key)
    if u is None:
        return []
    if type(u) is not dict:
        del holder[key]
        return [f"{where}{key}: not an object ({type(u).__name__}); dropped"]
    for k in USAGE_KEYS:
        if k in u:
            v = u[k]
            if type(v) is int and 0 <= v <= limit:  # `count`'s common case, without the call
                continue
            _, why = count(v, limit)
            if why is not None:
                del holder[key]
                return [f"{where}{key}.{k}: {why}; the usage dropped"]
    return []


def _usage_tree(check: Any) -> tuple[Any, dict[str, Any]]:
    return optional_object.fast, dict.fromkeys(USAGE_KEYS, check.fast)  # (`_usage`: null kept, else an object)


#: `check_line`'s checks of a wrapped line as a spec of `read._native.check_tree` (`values.tree_spec`),
#: nested exactly where `check_line` checks further: a line that passes it has nothing to drop.
TREE = tree_spec(LINE, payload={
    **tree_spec(PAYLOAD, content=[tree_spec(BLOCK)], output=[tree_spec(BLOCK)],
                info={**tree_spec(INFO), "total_token_usage": _usage_tree(total_count),
                      "last_token_usage": _usage_tree(count)}),
    "usage": _usage_tree(count), "latest_token_usage_record": (None, {"usage": _usage_tree(count)})})


def check_line(obj: dict[str, Any]) -> list[str]:
    """Check one line object in place; the reasons for what was dropped (empty when all is well)."""
    if check_tree is not None and type(obj.get("payload")) is dict and check_tree(obj, TREE):
        return []  # (every checked field passes its check's fast mark: nothing to drop or change)
    problems = check_fields(obj, LINE, "")
    p = obj.get("payload")
    if type(p) is not dict:
        p = obj if "payload" not in obj else None  # a legacy bare item is its own payload
        if p is None:
            return problems
        where = ""
    else:
        where = "payload."
    problems += check_fields(p, PAYLOAD, where)
    info = p.get("info")
    if type(info) is dict:
        problems += check_fields(info, INFO, where + "info.")
        problems += _usage(info, "total_token_usage", MAX_TOTAL_TOKENS, where + "info.")
        problems += _usage(info, "last_token_usage", MAX_REQUEST_TOKENS, where + "info.")
    problems += _usage(p, "usage", MAX_REQUEST_TOKENS, where)
    latest = p.get("latest_token_usage_record")
    if type(latest) is dict:
        problems += _usage(latest, "usage", MAX_REQUEST_TOKENS, where + "latest_token_usage_record.")
    for key in ("content", "output"):
        blocks = p.get(key)
        if type(blocks) is list:
            for i, block in enumerate(blocks):
                if type(block) is dict and (changes := scan_fields(block, BLOCK)) is not None:
                    problems += apply_changes(block, BLOCK, changes, f"{where}{key}[{i}].")
    return problems
