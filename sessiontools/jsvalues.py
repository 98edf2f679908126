"""JavaScript value semantics that Pi's estimates depend on.

Pi measures text with `String.prototype.length` (UTF-16 code units, so an emoji counts 2) and
tool-call arguments with `JSON.stringify` (no spaces, JavaScript number formatting, integer-like
keys first). Python's `len` and `json.dumps` differ on all three; these helpers do what V8 does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any

#: JavaScript's `undefined` where a missing key and a key holding null must be told apart
#: (`obj.key ?? fallback`, `JSON.stringify` dropping undefined members). One sentinel for the package.
UNDEFINED: Any = object()


def utf16_len(s: str) -> int:
    """`s.length` in JavaScript: the number of UTF-16 code units."""
    if s.isascii():
        return len(s)
    # a code point beyond the BMP is 2 units, a lone surrogate 1 (as V8 keeps it): what UTF-16 holds
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def js_truthy(v: Any) -> bool:
    """JavaScript truthiness of a JSON value ([] and {} are truthy, "" and 0 are not)."""
    if v is None or v is False:
        return False
    if isinstance(v, str):
        return v != ""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return v != 0 and v == v
    return True


def js_number(x: int | float) -> str:
    """`Number.prototype.toString()` for a finite number (what JSON.stringify writes)."""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        if abs(x) < 2**53:
            return str(x)
        x = float(x)  # JSON.parse would have rounded it to a double
    if x != x or math.isinf(x):
        return "null"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    r = repr(abs(x))  # shortest round-trip digits, like V8
    if "e" in r:
        mant, exp_s = r.split("e")
        exp = int(exp_s)
    else:
        mant, exp = r, 0
    if "." in mant:
        ip, fp = mant.split(".")
    else:
        ip, fp = mant, ""
    digits = (ip + fp).lstrip("0")
    # position of the decimal point relative to the start of `digits`
    lead_zeros = len(ip + fp) - len((ip + fp).lstrip("0"))
    n = len(ip) + exp - lead_zeros
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    es = f"e+{e}" if e >= 0 else f"e-{-e}"
    if k == 1:
        return sign + digits + es
    return sign + digits[0] + "." + digits[1:] + es


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')


def _escape_char(m: re.Match[str]) -> str:
    c = m.group(0)
    if c in _ESCAPES:
        return _ESCAPES[c]
    return f"\\u{ord(c):04x}"


_SURROGATE = re.compile("[\ud800-\udfff]")


def js_string(s: str) -> str:
    """JSON.stringify of a string (well-formed: lone surrogates escaped, U+2028 kept)."""
    if s.isascii() or _SURROGATE.search(s) is None:
        # Fast path (json's C encoder, non-ASCII kept): without a surrogate it escapes exactly what V8
        # does, as `_escape_char` would (tests/tokens/test_jsvalues.py compares the two).
        return encode_basestring(s)
    return js_string_escaped(s)


def js_string_escaped(s: str) -> str:
    """`js_string` by its rule, character by character (the reference for its fast path)."""
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, s) + '"'


_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")  # fullmatch: "$" would accept a trailing "\n"


def js_entries(obj: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Own property order of a JavaScript object: array-index keys ascending, then insertion order."""
    for k in obj:  # most objects have no key that can be an array index: their order is insertion order
        if k and "0" <= k[0] <= "9":
            break
    else:
        return list(obj.items())
    index_keys = []
    other = []
    for k, v in obj.items():
        # Only a key starting with an ASCII digit can be an array index (most keys skip the regex).
        if k and "0" <= k[0] <= "9" and _ARRAY_INDEX.fullmatch(k) and int(k) < 2**32 - 1:
            index_keys.append((int(k), k, v))
        else:
            other.append((k, v))
    if not index_keys:
        return other
    index_keys.sort()
    return [(k, v) for _, k, v in index_keys] + other


def json_stringify(value: Any) -> str | None:
    """`JSON.stringify(value)` for JSON-shaped Python values; None where JavaScript gives undefined."""
    t = type(value)  # the commonest types first, by exact type (the chain below decides every value)
    if t is str:
        return js_string(value)
    if t is dict:
        return _js_object(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return js_string(value)
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, dict):
        return _js_object(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(json_stringify(v) or "null" for v in value) + "]"
    return None


def _js_object(value: dict[str, Any]) -> str:
    """`JSON.stringify` of an object: its members in JavaScript's order, undefined ones left out."""
    parts = []
    for k, v in js_entries(value):
        sv = json_stringify(v)
        if sv is not None:
            parts.append(js_string(str(k)) + ":" + sv)
    return "{" + ",".join(parts) + "}"
