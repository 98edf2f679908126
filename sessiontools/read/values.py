"""The one home of value checks at the reading boundary: counts, amounts, times, strings.

Every agent's reader hands the values it keeps through these functions, so nothing past `read/` is
ever fed a count that is negative, non-finite or absurd, a role or model id that is not a string, a
timestamp no calendar has, or a string with a lone surrogate (Node's `JSON.stringify` writes lone
surrogates as `\\ud800` escapes, so real files hold them; Python cannot encode them).

Each check returns the value to keep, or `None` and the reason for the `file:line: reason`
diagnostic the reader writes (the value is then dropped, never replaced by a guess).
"""

from __future__ import annotations

import dataclasses
import math
import re
from datetime import datetime
from typing import Any

#: The largest token count one request can carry: 100M, ten times the largest context window any
#: model offers. A larger recorded count is a corrupt value, not a request.
MAX_REQUEST_TOKENS = 100_000_000
#: The largest running total (Codex's `total_token_usage` of a whole session).
MAX_TOTAL_TOKENS = 10**12
#: The largest amount of money (USD) one request can cost.
MAX_COST = 1_000_000.0
#: Milliseconds since 1970 up to the end of year 9999 (what `Date` and `datetime` both represent).
MAX_EPOCH_MS = 253_402_300_799_999

_SURROGATE = re.compile("[\ud800-\udfff]")


def _number(v: Any) -> bool:
    t = type(v)
    return t is int or t is float


def number(v: Any, default: Any = 0) -> Any:
    """`v` when it is a JSON number (an int or a float; a bool is not one), else `default`: the one
    rule for reading a number that may be absent or of the wrong type (`usage.input ?? 0`)."""
    t = type(v)
    if t is int or t is float:  # what JSON gives: the common case, without the isinstance tests
        return v
    return v if isinstance(v, int | float) and not isinstance(v, bool) else default


def integer(v: Any, default: Any = 0) -> Any:
    """`int(v)` when `v` is a finite JSON number (`number`), else `default`."""
    if type(v) is int:
        return v
    n = number(v, None)
    if n is None:
        return default
    try:
        return int(n)
    except (ValueError, OverflowError):  # NaN, infinity (a float past 1.8e308 reads as one)
        return default


def real(v: Any, default: Any = 0.0) -> Any:
    """`float(v)` when `v` is a JSON number (`number`), else `default` (None: "not given", told
    apart from 0)."""
    t = type(v)
    if t is float or t is int:  # what JSON gives, without a call to `number` (a Pi transcript reads five a request)
        return float(v)
    n = number(v, None)
    return default if n is None else float(n)


def finite(v: Any, default: Any = None) -> Any:
    """`float(v)` when `v` is a finite JSON number (`number`: not NaN, not infinite, within a
    double's range), else `default`: for a number a document must give (a coefficient of a
    calibration), told apart from one that is absent or corrupt."""
    n = number(v, None)
    try:
        f = float(n) if n is not None else None
    except OverflowError:  # an integer beyond a double's range
        return default
    return f if f is not None and math.isfinite(f) else default


def number_text(text: str | None, kind: type[int] | type[float] = int, default: Any = None) -> Any:
    """The finite number `text` spells (an environment variable, an HTTP header, a CLI value), read
    by `kind` as Python reads one (`int(" 12 ")`, `float("2.5e3")`), else `default`. With `number`,
    `integer`, `real` and `finite`, the package's one way to read a number it was given."""
    if text is None:
        return default
    try:
        n = kind(text)
    except (ValueError, OverflowError):  # not a number; `int` of a digit string past its limit
        return default
    return n if kind is int or math.isfinite(n) else default


def _in_range(v: Any, limit: float) -> str | None:
    """Why `v` is not a finite number in [0, limit] (None when it is)."""
    if not _number(v):
        return f"not a number ({type(v).__name__})"
    try:
        finite = math.isfinite(v)
    except OverflowError:  # an integer beyond a double's range: JSON.parse reads it as Infinity
        return f"not a finite number (an integer of {v.bit_length():,} bits)"
    if not finite:
        return f"not a finite number ({v!r})"
    if v < 0:
        return f"negative ({v!r})"
    if v > limit:
        return f"out of range ({v!r} > {limit:,})"
    return None


def count(v: Any, limit: int = MAX_REQUEST_TOKENS) -> tuple[int | None, str | None]:
    """A token count: a whole, finite number in [0, limit] (a float such as 1677.0 is kept as 1677)."""
    if type(v) is int and 0 <= v <= limit:  # the common case first
        return v, None
    why = _in_range(v, limit)
    if why is None and v != int(v):
        why = f"not a whole number ({v!r})"
    return (None, why) if why is not None else (int(v), None)


def total_count(v: Any) -> tuple[int | None, str | None]:
    """A running total of tokens (a session's, a compaction's tokens before): up to MAX_TOTAL_TOKENS."""
    return count(v, MAX_TOTAL_TOKENS)


def amount(v: Any, limit: float = MAX_COST) -> tuple[float | int | None, str | None]:
    """A cost: a finite number in [0, limit]."""
    why = _in_range(v, limit)
    return (None, why) if why is not None else (v, None)


def epoch_ms(v: Any) -> tuple[int | float | None, str | None]:
    """A time in milliseconds since 1970: a finite number between 1970 and the end of year 9999."""
    if not _number(v):
        return None, f"not a number ({type(v).__name__})"
    if not math.isfinite(v) or not 0 <= v <= MAX_EPOCH_MS:
        return None, f"not a time ({v!r} ms)"
    return v, None


def iso_seconds(ts: Any) -> float | None:
    """An ISO 8601 timestamp (`Z` or an offset; without one, local time) in seconds since the epoch:
    None when absent, not a string or unreadable. The one reading of the timestamps files record."""
    if not isinstance(ts, str) or not ts:
        return None
    # `datetime` imported with the module (already loaded by then): the import statement in here cost
    # 0.9 of the 1.2 us a reading took, and a replay reads each request's timestamp. (Reading
    # `YYYY-MM-DDTHH:MM:SS.mmmZ` by slices and `int` measured 4x slower than `fromisoformat`.)
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def text(v: Any) -> tuple[str | None, str | None]:
    """A string (without lone surrogates: `clean_surrogates` has replaced them when reading)."""
    if type(v) is str:
        return v, None
    return None, f"not a string ({type(v).__name__})"


def optional_text(v: Any) -> tuple[str | None, str | None]:
    """A string or null."""
    if v is None or type(v) is str:
        return v, None
    return None, f"not a string ({type(v).__name__})"


def an_object(v: Any) -> tuple[Any, str | None]:
    """A JSON object."""
    return (v, None) if type(v) is dict else (None, f"not an object ({type(v).__name__})")


def optional_object(v: Any) -> tuple[Any, str | None]:
    """A JSON object or null."""
    return (v, None) if v is None else an_object(v)


def a_list(v: Any) -> tuple[Any, str | None]:
    """A JSON array."""
    return (v, None) if type(v) is list else (None, f"not a list ({type(v).__name__})")


def content(v: Any) -> tuple[Any, str | None]:
    """Message content, as every agent writes it: a string or a list of blocks."""
    if type(v) is str or type(v) is list:
        return v, None
    return None, f"not a string or a list ({type(v).__name__})"


def clean_surrogates(value: Any) -> tuple[Any, int]:
    """`value` with every lone surrogate in its strings (keys too) replaced by U+FFFD, and how many
    strings changed. U+FFFD is one UTF-16 unit like the surrogate, so Pi's character counts stay
    exact. Only lines the standard library decoded can hold them (orjson refuses them)."""
    if type(value) is str:
        if _SURROGATE.search(value) is None:
            return value, 0
        return _SURROGATE.sub("\ufffd", value), 1
    if type(value) is list:
        out_l, n = [], 0
        for item in value:
            item, k = clean_surrogates(item)
            out_l.append(item)
            n += k
        return out_l, n
    if type(value) is dict:
        out_d: dict[Any, Any] = {}
        n = 0
        for key, item in value.items():
            key, k1 = clean_surrogates(key)
            item, k2 = clean_surrogates(item)
            out_d[key] = item
            n += k1 + k2
        return out_d, n
    return value, 0


def fast_pass(check: Any, types: tuple[type, ...] = (), numbers: tuple[type, ...] = (), low: float = 0,
              high: float = 0) -> Any:
    """Mark `check` with the values it keeps unchanged, so `check_fields` need not call it for them:
    a value whose type is one of `types`, or one of `numbers` within [low, high] (NaN compares false
    and infinities fall outside: both still go to the check). The check itself is the rule; this is
    only its common case, which tests/read/test_values_fast.py holds equal to it."""
    check.fast = (frozenset(types), frozenset(numbers), low, high)
    return check


def clean_strings(value: Any, skip: frozenset[str] = frozenset({"raw", "native"})) -> Any:
    """`value` with every lone surrogate in its strings replaced by U+FFFD (`clean_surrogates`),
    through dicts, lists, tuples and dataclasses (whose fields named in `skip` are left as they are:
    a neutral `Message.raw` and `TranscriptPath.native` are the agent's own objects, which Pi's exact
    rules read as written).
    Copy on write: what holds no lone surrogate is returned as it is (the same object).

    This is the cleaned view of what the toolkit reports: Pi's entries keep lone surrogates, as Pi
    does (its port must see them: `JSON.stringify` writes one as a six-character escape, so Pi's
    character counts depend on it), while the values made from them for people and tables (the
    neutral transcript, inspect's facts, replay records, dataset rows) are cleaned once, here.
    Also a file name that is not UTF-8 (Python decodes its bytes to lone surrogates)."""
    t = type(value)
    if t is str:
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) is not None else value
    if t is list or t is tuple:
        items = [clean_strings(v, skip) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if t is list else tuple(items)
    if t is dict:
        changed = False
        out: dict[Any, Any] = {}
        for k, v in value.items():
            k2, v2 = clean_strings(k, skip), clean_strings(v, skip)
            changed = changed or k2 is not k or v2 is not v
            out[k2] = v2
        return out if changed else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if f.name in skip or not f.init:
                continue
            v = getattr(value, f.name)
            v2 = clean_strings(v, skip)
            if v2 is not v:
                changes[f.name] = v2
        return dataclasses.replace(value, **changes) if changes else value
    return value


def needs_cleaning(source: Any) -> bool:
    """Whether the values made from `source` (any reader's file) need `clean_strings`: its reader kept
    lone surrogates (`surrogates`, the Pi reader), or its file name is not UTF-8. Cheap: no walk."""
    return bool(getattr(source, "surrogates", 0)) or _SURROGATE.search(str(getattr(source, "path", ""))) is not None


def cleaned_for(source: Any, value: Any) -> Any:
    """`value` (made from `source`) in its cleaned view: `clean_strings` when `needs_cleaning(source)`."""
    return clean_strings(value) if needs_cleaning(source) else value


def cleaned_call(fn: Any, source: Any, /, **options: Any) -> Any:
    """`fn(source, **options)` in its cleaned view (`cleaned_for`): for a per-file function whose
    result is reported (`partial(cleaned_call, fn)` is picklable, for `--jobs` workers)."""
    return cleaned_for(source, fn(source, **options))


def scan_fields_reference(obj: dict[str, Any], checks: dict[str, Any]) -> list[tuple[str, Any, str | None]] | None:
    """The fields of `obj` that `checks` (field -> check function) would change: None when every
    value is kept as it is (the common case), else `(key, kept, reason)` of each other one, in the
    object's order. This is the reference; `read._native.scan_fields` (C, built by the install and
    then used as `scan_fields`) is the same (tests/read/test_native.py)."""
    changes: list[tuple[str, Any, str | None]] | None = None
    get = checks.get
    for key, v in obj.items():  # an object has fewer fields than its checks: walk the object's
        check = get(key)
        if check is None:
            continue
        fast = getattr(check, "fast", None)
        if fast is not None:  # the common case without a call (most fields of most lines)
            t = type(v)
            if t in fast[0] or (t in fast[1] and fast[2] <= v <= fast[3]):
                continue
        kept, why = check(v)
        if why is not None or kept is not v:
            if changes is None:
                changes = []
            changes.append((key, kept, why))
    return changes


try:
    from sessiontools.read._native import scan_fields
except ImportError:  # not built on this machine: the reference, with the same results
    scan_fields = scan_fields_reference


#: A fast mark no value passes: a check without one sends its object to the Python check.
_NEVER = (frozenset(), frozenset(), 0, 0)


def tree_spec(checks: dict[str, Any], **nested: Any) -> dict[str, Any]:
    """A check table (field -> check) as a spec of `read._native.check_tree(s)`: each field's check's
    fast mark (a value that passes it is one the check keeps as it is), and for the fields in
    `nested` the spec (or `[spec]`, for each object of a list) its value is checked by further."""
    out: dict[str, Any] = {k: getattr(c, "fast", None) or _NEVER for k, c in checks.items()}
    for k, sub in nested.items():
        out[k] = (out.get(k), sub)
    return out


def check_fields(obj: dict[str, Any], checks: dict[str, Any], where: str) -> list[str]:
    """Apply `checks` (field -> check function) to `obj` in place: a field that fails is removed.
    Returns one reason per removed field (`where.field: reason; dropped`), in the order of `checks`."""
    changes = scan_fields(obj, checks)
    return [] if changes is None else apply_changes(obj, checks, changes, where)


def apply_changes(obj: dict[str, Any], checks: dict[str, Any], changes: list[tuple[str, Any, str | None]],
                  where: str) -> list[str]:
    """`scan_fields`' changes made to `obj`: a failed field removed (its reason returned, in the
    order of `checks`), a value the check rewrote (a whole float count as an int) replaced."""
    if len(changes) > 1:
        order = {k: i for i, k in enumerate(checks)}
        changes.sort(key=lambda c: order[c[0]])
    problems: list[str] = []
    for key, kept, why in changes:
        if why is not None:
            del obj[key]
            problems.append(f"{where}{key}: {why}; dropped")
        else:
            obj[key] = kept
    return problems


_NUM = (int, float)
fast_pass(count, numbers=(int,), high=MAX_REQUEST_TOKENS)
fast_pass(total_count, numbers=(int,), high=MAX_TOTAL_TOKENS)
fast_pass(amount, numbers=_NUM, high=MAX_COST)
fast_pass(epoch_ms, numbers=_NUM, high=MAX_EPOCH_MS)
fast_pass(text, (str,))
fast_pass(optional_text, (str, type(None)))
fast_pass(an_object, (dict,))
fast_pass(optional_object, (dict, type(None)))
fast_pass(a_list, (list,))
fast_pass(content, (str, list))
