"""`estimate-error`: how far token estimators are from the prompt size providers recorded.

For every request (an assistant message with usable usage, Pi's rule, and a non-zero prompt) on
the analysed path(s), the truth is its actual prompt tokens A = input + cacheRead + cacheWrite and
each estimator gives E over the context of that request (the messages Pi sent: the context built
from the path up to, not including, the assistant message):

- `chars4`: the sum of Pi's `estimateTokens` over the messages;
- `pi`: what Pi itself computes before deciding to compact (last usage + chars/4 of the trailing
  messages; 1.x: the projected view that distrusts usage older than an edit or compaction);
- `cl100k`, `o200k`: tiktoken over the same text units chars/4 counts (images 1200 tokens);
- `calibrated`: A ~ a + b * x per provider/model (x = o200k by default), judged out of sample
  (leave-one-session-out when the model has several sessions, else a two-fold time split).

The error is e = E - A (negative: underestimate). Each message is measured once (keyed by its
object while a session is analysed and by a content hash across sessions), and each distinct text
is tokenized once per encoding, in batches; a request only sums cached per-message counts.

For 1.x contexts, the system messages are replayed into one (as pi-ai sends them) before counting.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sessiontools.errors import UsageError
from sessiontools.policies.pi.usage import current_system_message, estimate_context_tokens, estimate_pi_view
from sessiontools.read.pi.entries import Entry, Session
from sessiontools.tokens.calibrated import ANY_MODEL, Calibration, Fit, fit_line, model_key
from sessiontools.tokens.chars4 import _ceil4
from sessiontools.tokens.tiktoken_counter import MessageUnits, TiktokenCounter, message_units, units_chars
from sessiontools.transcript.pi.incremental import iter_request_contexts_gen
from sessiontools.transcript.pi.requests import skip_reason
from sessiontools.transcript.pi.tree import SessionTree
from sessiontools.transcript.pi.usage import prompt_tokens

Message = Mapping[str, Any]

#: Estimators in output order.
ESTIMATORS = ("chars4", "pi", "cl100k", "o200k", "calibrated")
#: tiktoken encodings behind the tokenizer estimators.
TOKENIZERS = {"cl100k": "cl100k_base", "o200k": "o200k_base"}
#: `--by` choices.
GROUPINGS = ("model", "provider", "content", "size")
#: Default `--threshold-grid`: fractions of the largest A seen.
DEFAULT_THRESHOLD_GRID = "0.5,0.6,0.7,0.8,0.9"
#: Default x of the calibrated estimator.
DEFAULT_CALIBRATION_X = "o200k"

#: Pi chars by role, as CSV/Parquet columns (both summary roles share one column).
ROLE_COLUMNS = {
    "user": "chars_user",
    "assistant": "chars_assistant",
    "toolResult": "chars_tool_result",
    "bashExecution": "chars_bash",
    "custom": "chars_custom",
    "branchSummary": "chars_summary",
    "compactionSummary": "chars_summary",
    "system": "chars_system",
}
CHAR_COLUMNS = tuple(dict.fromkeys(ROLE_COLUMNS.values()))
#: Roles whose text counts as tool output for the tool-result share.
TOOL_ROLES = ("toolResult", "bashExecution")

#: CJK code points (ideographs, CJK punctuation, kana, Hangul, full-width forms), as in lab/tokenizer.py.
CJK_RE = re.compile(
    "[\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f]"
)

_CJK_RANGES = np.array([(0x2E80, 0x2FDF), (0x3000, 0x303F), (0x3040, 0x30FF), (0x3100, 0x312F), (0x3400, 0x4DBF),
                        (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0xFF00, 0xFFEF), (0x20000, 0x2FA1F)],
                       dtype=np.uint32)


def cjk_count(text: str) -> int:
    """How many characters of `text` match CJK_RE (vectorised: a code point array against the ranges)."""
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    edges = _CJK_RANGES.ravel()
    # A code point is CJK when it falls in an odd bucket of the sorted range edges (inclusive ends).
    pos = np.searchsorted(edges, cps, side="right")
    inside = (pos % 2 == 1) | np.isin(cps, _CJK_RANGES[:, 1])
    return int(inside.sum())


#: `--by content` buckets: CJK share and tool-result share of the context's characters.
CJK_BUCKETS = ((0.05, "cjk<5%"), (0.30, "cjk 5-30%"), (math.inf, "cjk>30%"))
TOOL_BUCKETS = ((0.30, "tools<30%"), (0.70, "tools 30-70%"), (math.inf, "tools>70%"))
#: `--by size` buckets over A (tokens).
SIZE_BUCKETS = (
    (8_000, "<8k"),
    (16_000, "8k-16k"),
    (32_000, "16k-32k"),
    (64_000, "32k-64k"),
    (128_000, "64k-128k"),
    (math.inf, ">=128k"),
)

ProgressFn = Callable[[int, int, str], None]


# --------------------------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ThresholdSpec:
    """One `--threshold-grid` value: a fraction of the largest A (<= 1) or a token count."""

    text: str
    fraction: float | None = None
    tokens: int | None = None

    def resolve(self, max_actual: int) -> int:
        """The threshold in tokens."""
        if self.tokens is not None:
            return self.tokens
        assert self.fraction is not None
        return int(round(self.fraction * max_actual))


def parse_estimators(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """`chars4,pi,...` -> estimator names in canonical order; raises UsageError on unknown names."""
    if text is None:
        return ESTIMATORS
    parts = text.split(",") if isinstance(text, str) else [p for t in text for p in t.split(",")]
    names = [p.strip() for p in parts if p.strip()]
    unknown = [n for n in names if n not in ESTIMATORS]
    if unknown:
        raise UsageError(f"--estimators: unknown {', '.join(unknown)} (choose from {', '.join(ESTIMATORS)})")
    if not names:
        raise UsageError("--estimators: give at least one estimator")
    return tuple(e for e in ESTIMATORS if e in names)


def parse_threshold_grid(text: str | None) -> tuple[ThresholdSpec, ...]:
    """`0.7,0.8` (fractions of the largest A) and/or `100000,150000` (tokens; `150k` works too)."""
    text = DEFAULT_THRESHOLD_GRID if text is None else text
    specs: list[ThresholdSpec] = []
    for raw in text.split(","):
        s = raw.strip().lower().replace("_", "")
        if not s:
            continue
        mult = 1
        if s.endswith("k"):
            s, mult = s[:-1], 1000
        try:
            v = float(s) * mult
        except ValueError as exc:
            raise UsageError(f"--threshold-grid: {raw.strip()!r} is not a number") from exc
        if not math.isfinite(v) or v <= 0:
            raise UsageError(f"--threshold-grid: {raw.strip()!r} must be positive")
        if v <= 1 and mult == 1:
            specs.append(ThresholdSpec(raw.strip(), fraction=v))
        else:
            specs.append(ThresholdSpec(raw.strip(), tokens=int(round(v))))
    if not specs:
        raise UsageError("--threshold-grid: give at least one threshold")
    return tuple(specs)


def parse_mape_gate(text: str) -> tuple[str, float]:
    """`ESTIMATOR>PCT` (e.g. `chars4>20` or `chars4>20%`) -> (estimator, MAPE fraction)."""
    m = re.fullmatch(r"\s*([A-Za-z0-9_]+)\s*>\s*([0-9]*\.?[0-9]+)\s*%?\s*", text)
    if not m:
        raise UsageError(f"--fail-if-mape: {text!r} is not ESTIMATOR>PCT (e.g. chars4>20)")
    name = m.group(1)
    if name not in ESTIMATORS:
        raise UsageError(f"--fail-if-mape: unknown estimator {name!r} (choose from {', '.join(ESTIMATORS)})")
    return name, float(m.group(2)) / 100.0


@dataclass(frozen=True, slots=True)
class EstimateErrorOptions:
    """What to compute. `calibration` (loaded from a file) replaces the fitted coefficients for E."""

    estimators: tuple[str, ...] = ESTIMATORS
    by: str = "model"
    thresholds: tuple[ThresholdSpec, ...] = field(default_factory=lambda: parse_threshold_grid(None))
    leaf: str | None = None
    all_leaves: bool = False
    pi_version: str | None = None
    calibration: Calibration | None = None
    calibration_x: str = DEFAULT_CALIBRATION_X
    fit: bool = False  # fit the calibration even when the calibrated estimator is not reported

    def __post_init__(self) -> None:
        if self.by not in GROUPINGS:
            raise UsageError(f"--by: unknown grouping {self.by!r} (choose from {', '.join(GROUPINGS)})")
        if self.calibration_x not in ("o200k", "cl100k", "chars4"):
            raise UsageError(f"--calibration-x: {self.calibration_x!r} (choose from o200k, cl100k, chars4)")
        if self.leaf and self.all_leaves:
            raise UsageError("--leaf and --all-leaves cannot be used together")


# --------------------------------------------------------------------------------------------
# measuring messages once
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class MessageMeasure:
    """Counts of one message: Pi's chars and chars/4, composition, and tokens per encoding."""

    role: str
    chars: int
    chars4: int
    text_chars: int  # code points of the text units
    cjk_chars: int
    images: int
    units: MessageUnits
    tokens: dict[str, int] = field(default_factory=dict)


class MessageMeasurer:
    """Measures messages once: by object while a session is analysed, by content across sessions."""

    def __init__(self, tokenizers: Mapping[str, TiktokenCounter]) -> None:
        self.tokenizers = dict(tokenizers)
        self._by_object: dict[int, tuple[Message, MessageMeasure]] = {}
        self._by_content: dict[tuple[bytes, str, str], MessageMeasure] = {}
        self.messages_measured = 0

    def reset_objects(self) -> None:
        """Forget object identities (call between sessions; content-keyed counts stay cached)."""
        self._by_object.clear()

    def measure(self, message: Message, pi_version: str) -> MessageMeasure:
        """Chars, chars/4 and composition of a message (tokens are filled by `count_tokens`)."""
        hit = self._by_object.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        units = message_units(message, pi_version)
        role = str(message.get("role"))
        ckey = (units.key, role, pi_version)
        m = self._by_content.get(ckey)
        if m is None:
            self.messages_measured += 1
            chars = units_chars(units)
            m = MessageMeasure(
                role=role,
                chars=chars,
                chars4=_ceil4(chars),
                text_chars=sum(len(t) for t in units.texts),
                cjk_chars=sum(cjk_count(t) for t in units.texts if not t.isascii()),
                images=units.images,
                units=units,
            )
            self._by_content[ckey] = m
        self._by_object[id(message)] = (message, m)
        return m

    def count_tokens(self, measures: Iterable[MessageMeasure]) -> None:
        """Fill `tokens` of each measure for every tokenizer, one batch per tokenizer."""
        todo = [m for m in measures if len(m.tokens) < len(self.tokenizers)]
        for name, counter in self.tokenizers.items():
            need = [m for m in todo if name not in m.tokens]
            for m, n in zip(need, counter.count_units(m.units for m in need), strict=True):
                m.tokens[name] = n


# --------------------------------------------------------------------------------------------
# requests
# --------------------------------------------------------------------------------------------


def _num(v: Any) -> int:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0


def _timestamp(v: Any) -> int | None:
    """A message's millisecond timestamp as an integer, or None."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return int(v)


def sent_messages(messages: Sequence[Message], pi_version: str) -> list[Message]:
    """The messages as counted: 1.x system messages replayed into one (first), others as they are."""
    if pi_version == "0" or not any(m.get("role") == "system" for m in messages):
        return list(messages)
    system = current_system_message(messages)
    rest = [m for m in messages if m.get("role") != "system"]
    return ([system] if system is not None else []) + rest


def _bucket(value: float, buckets: Sequence[tuple[float, str]]) -> str:
    for upper, label in buckets:
        if value < upper:
            return label
    return buckets[-1][1]


def content_group(cjk_share: float, tool_share: float) -> str:
    """The `--by content` bucket of a request."""
    return f"{_bucket(cjk_share, CJK_BUCKETS)} · {_bucket(tool_share, TOOL_BUCKETS)}"


def size_group(actual: int) -> str:
    """The `--by size` bucket of a request (by A)."""
    return _bucket(actual, SIZE_BUCKETS)


def group_order(by: str) -> Callable[[str], Any]:
    """Sort key for group labels: bucket order for content/size, alphabetical otherwise."""
    if by == "size":
        order = {label: i for i, (_, label) in enumerate(SIZE_BUCKETS)}
        return lambda g: (order.get(g, 99), g)
    if by == "content":
        order = {
            f"{c} · {t}": i * 10 + j
            for i, (_, c) in enumerate(CJK_BUCKETS)
            for j, (_, t) in enumerate(TOOL_BUCKETS)
        }
        return lambda g: (order.get(g, 99), g)
    return lambda g: (0, g)


@dataclass(slots=True)
class _Pending:
    entry: Entry
    index: int
    message: Message
    messages: list[Message]
    pi_tokens: int
    generation: Any = 0  # (path, rebuild count): contexts of one generation extend each other


@dataclass(slots=True)
class SessionRequests:
    """The requests of one session as rows (JSON-ready dicts), and the skipped assistant messages."""

    session: str
    pi_version: str
    rows: list[dict[str, Any]]
    skipped: Counter[str]


def _request_points(tree: SessionTree, leaf: str | None, all_leaves: bool) -> list[tuple[tuple[Entry, ...], list[int]]]:
    """(path entries, indices of its assistant messages), each assistant entry once over all paths."""
    paths = tree.all_paths() if all_leaves else [tree.path(leaf)]
    seen: set[int] = set()
    out = []
    for p in paths:
        idx = []
        for i, e in enumerate(p.entries):
            if e.role == "assistant" and id(e) not in seen:
                seen.add(id(e))
                idx.append(i)
        if idx:
            out.append((p.entries, idx))
    return out


def _increments(pending: Sequence[_Pending]) -> Iterable[tuple[_Pending, Sequence[Message], bool]]:
    """(request, messages not in the previous request's context, whether to start the sum anew).

    Contexts along a path grow by appending; a context of another generation (after a rebuild at a
    compaction or edit) or that does not extend the previous one starts over.
    """
    prev: _Pending | None = None
    for p in pending:
        k = len(prev.messages) if prev is not None else 0
        extends = (
            prev is not None and p.generation == prev.generation and len(p.messages) >= k
            and (k == 0 or (p.messages[k - 1] is prev.messages[k - 1] and p.messages[0] is prev.messages[0]))
        )
        yield (p, p.messages[k:], False) if extends else (p, p.messages, True)
        prev = p


def session_requests(
    session: Session,
    measurer: MessageMeasurer,
    *,
    leaf: str | None = None,
    all_leaves: bool = False,
    pi_version: str | None = None,
) -> SessionRequests:
    """One row per request of a session: A, usage, composition, and E of chars4, pi and tokenizers.

    The context of each request is what `build_context` gives for the path before it (so
    compactions and context edits are honoured), built incrementally; only cached per-message
    counts are summed.
    """
    version = pi_version or session.pi_version
    tree = SessionTree(session)
    measurer.reset_objects()
    skipped: Counter[str] = Counter()
    pending: list[_Pending] = []
    for entries, indices in _request_points(tree, leaf, all_leaves):
        usable = []
        for i in indices:
            msg = entries[i].message
            assert msg is not None
            reason = skip_reason(msg, version)
            if reason is not None:
                skipped[reason] += 1
            else:
                usable.append(i)
        for i, ctx, gen in iter_request_contexts_gen(entries, usable, version):
            e = entries[i]
            msg = e.message
            assert msg is not None
            if version == "1":
                pi_tokens = estimate_pi_view(ctx, entries[:i]).tokens
            else:
                pi_tokens = estimate_context_tokens(ctx.messages, "0").tokens
            pending.append(_Pending(e, i, msg, sent_messages(ctx.messages, version), pi_tokens, (id(entries), gen)))

    # Each distinct message is measured once; a request sums one row per message of a matrix.
    slot: dict[int, int] = {}
    measures: list[MessageMeasure] = []
    steps = list(_increments(pending))
    for _, new, _ in steps:
        for m in new:
            if id(m) not in slot:
                slot[id(m)] = len(measures)
                measures.append(measurer.measure(m, version))
    measurer.count_tokens(measures)
    encodings = [enc for enc in TOKENIZERS.values() if enc in measurer.tokenizers]
    fields = ["chars", "chars4", "text_chars", "cjk_chars", "images", "tool_chars", *CHAR_COLUMNS, *encodings]
    matrix = np.zeros((max(1, len(measures)), len(fields)), dtype=np.int64)
    col_of = {f: k for k, f in enumerate(fields)}
    for r, m in enumerate(measures):
        matrix[r, :6] = (m.chars, m.chars4, m.text_chars, m.cjk_chars, m.images, m.chars if m.role in TOOL_ROLES else 0)
        role_col = ROLE_COLUMNS.get(m.role)
        if role_col is not None:
            matrix[r, col_of[role_col]] = m.chars
        for enc in encodings:
            matrix[r, col_of[enc]] = m.tokens[enc]

    rows = []
    # Contexts along a path grow by appending, so keep a running total and add only the new
    # messages; a context that does not extend the previous one (a compaction, an edit) is summed anew.
    acc = np.zeros(len(fields), dtype=np.int64)
    for p, new, reset in steps:
        if reset:
            acc = np.zeros(len(fields), dtype=np.int64)
        if new:
            idx = np.fromiter((slot[id(m)] for m in new), dtype=np.int64, count=len(new))
            acc = acc + matrix[idx].sum(axis=0)
        tot = dict(zip(fields, acc.tolist(), strict=True))
        usage = p.message["usage"]
        provider, model = p.message.get("provider"), p.message.get("model")
        row: dict[str, Any] = {
            "session": session.path,
            "pi_version": version,
            "entry_id": p.entry.id,
            "index": p.index,
            "line": p.entry.line,
            "timestamp": _timestamp(p.message.get("timestamp")),
            "provider": provider if isinstance(provider, str) else None,
            "model": model if isinstance(model, str) else None,
            "model_key": model_key(provider, model),
            "actual": prompt_tokens(usage),
            "input": _num(usage.get("input")),
            "cache_read": _num(usage.get("cacheRead")),
            "cache_write": _num(usage.get("cacheWrite")),
            "output": _num(usage.get("output")),
            "messages": len(p.messages),
            "images": tot["images"],
            "chars_total": tot["chars"],
            "text_chars": tot["text_chars"],
            "cjk_chars": tot["cjk_chars"],
            **{c: tot[c] for c in CHAR_COLUMNS},
            "cjk_share": round(tot["cjk_chars"] / tot["text_chars"], 6) if tot["text_chars"] else 0.0,
            "tool_share": round(tot["tool_chars"] / tot["chars"], 6) if tot["chars"] else 0.0,
            "est_chars4": tot["chars4"],
            "est_pi": p.pi_tokens,
        }
        for short, enc in TOKENIZERS.items():
            row[f"est_{short}"] = tot[enc] if enc in tot else None
        rows.append(row)
    return SessionRequests(session.path, version, rows, skipped)


# --------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------


def quantile(sorted_values: Sequence[float], q: float) -> float | None:
    """Linear-interpolation quantile (numpy's default) of already sorted values; None when empty."""
    n = len(sorted_values)
    if n == 0:
        return None
    pos = (n - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _r(v: float | None, digits: int = 6) -> float | None:
    return None if v is None else round(float(v), digits)


def mape(estimates: Sequence[float | None], actuals: Sequence[int]) -> float | None:
    """Mean |E - A| / A over pairs with an estimate; None when there is none."""
    pairs = [(e, a) for e, a in zip(estimates, actuals, strict=True) if e is not None and a > 0]
    return sum(abs(e - a) / a for e, a in pairs) / len(pairs) if pairs else None


def error_stats(estimates: Sequence[float | None], actuals: Sequence[int]) -> dict[str, Any]:
    """n, bias (mean e/A), MAPE, p50/p95/max |e| (tokens) and the median of A/E."""
    pairs = [(e, a) for e, a in zip(estimates, actuals, strict=True) if e is not None and a > 0]
    n = len(pairs)
    if not n:
        return {"n": 0, "bias": None, "mape": None, "p50_abs": None, "p95_abs": None, "max_abs": None, "median_ratio": None}
    rel = [(e - a) / a for e, a in pairs]
    abs_err = sorted(abs(e - a) for e, a in pairs)
    ratios = sorted(a / e for e, a in pairs if e > 0)
    return {
        "n": n,
        "bias": _r(sum(rel) / n),
        "mape": _r(sum(abs(x) for x in rel) / n),
        "p50_abs": _r(quantile(abs_err, 0.5), 1),
        "p95_abs": _r(quantile(abs_err, 0.95), 1),
        "max_abs": _r(abs_err[-1], 1),
        "median_ratio": _r(quantile(ratios, 0.5)),
    }


def decision_stats(estimator: str, estimates: Sequence[float | None], actuals: Sequence[int], threshold: int) -> dict[str, Any]:
    """Compaction decisions E > T against the truth A > T: confusion counts, early and late rates.

    early = the estimator compacts while A <= T (rate over requests with A <= T);
    late = it does not while A > T (rate over requests with A > T).
    """
    keep = [e is not None for e in estimates]
    e_arr = np.fromiter((e for e in estimates if e is not None), dtype=np.float64)
    a_arr = np.fromiter((a for a, k in zip(actuals, keep, strict=True) if k), dtype=np.float64)
    e_over, a_over = e_arr > threshold, a_arr > threshold
    above = int(a_over.sum())
    below = len(a_arr) - above
    both = int((e_over & a_over).sum())
    early = int((e_over & ~a_over).sum())
    late = int((~e_over & a_over).sum())
    return {
        "estimator": estimator,
        "threshold": threshold,
        "n": len(a_arr),
        "actual_over": above,
        "compact_correct": both,
        "keep_correct": below - early,
        "early": early,
        "late": late,
        "early_rate": _r(early / below) if below else None,
        "late_rate": _r(late / above) if above else None,
    }


# --------------------------------------------------------------------------------------------
# calibration
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class CalibrationOutcome:
    """Fits over all data, and per-row in-sample and out-of-sample predictions."""

    x: str
    fitted: Calibration
    methods: dict[str, str]
    sessions: dict[str, int]
    in_sample: list[float | None]
    out_of_sample: list[float | None]


def _fit(idx: Sequence[int], xs: Sequence[float], ys: Sequence[int], x_name: str) -> Fit | None:
    if not idx:
        return None
    a, b = fit_line([xs[i] for i in idx], [ys[i] for i in idx])
    return Fit(x_name, a, b, len(idx))


def _out_of_sample(
    group: Sequence[int], all_idx: Sequence[int], sessions: Sequence[str], xs: Sequence[float], ys: Sequence[int], x_name: str
) -> tuple[dict[int, float], str]:
    """Out-of-sample predictions for the rows of `group`; other rows (other models) only back up
    a fold whose own training part is empty."""
    pred: dict[int, float] = {}
    names = list(dict.fromkeys(sessions[i] for i in group))
    if len(names) >= 2:
        method = "leave-one-session-out"
        folds = [[i for i in group if sessions[i] == s] for s in names]
    elif len(group) >= 2:
        method = "time-split"
        half = (len(group) + 1) // 2
        folds = [list(group[:half]), list(group[half:])]
    else:
        method = "none"
        folds = [list(group)]
    for test in folds:
        test_set = set(test)
        train = [i for i in group if i not in test_set]
        if not train:  # a model with a single request: judged by the other models' fit
            train = [i for i in all_idx if i not in test_set]
        fit = _fit(train, xs, ys, x_name)
        if fit is None:
            continue
        for i in test:
            pred[i] = fit.predict(xs[i])
    return pred, method


def fit_calibration(rows: Sequence[Mapping[str, Any]], x: str = DEFAULT_CALIBRATION_X) -> CalibrationOutcome:
    """A ~ a + b * x per provider/model and over all models (`*`), least squares.

    Out of sample: leave-one-session-out for a model seen in several sessions, else a two-fold
    time split (the first half of its requests judged by a fit on the second, and vice versa).
    Rows must be in session order and, within a session, in path order.
    """
    col = f"est_{x}"
    idx_all = [i for i, r in enumerate(rows) if r.get(col) is not None]
    xs = [float(r[col]) if r.get(col) is not None else 0.0 for r in rows]
    ys = [int(r["actual"]) for r in rows]
    sessions = [str(r["session"]) for r in rows]
    by_model: dict[str, list[int]] = {}
    for i in idx_all:
        by_model.setdefault(str(rows[i]["model_key"]), []).append(i)
    in_sample: list[float | None] = [None] * len(rows)
    oos: list[float | None] = [None] * len(rows)
    fits: dict[str, Fit] = {}
    methods: dict[str, str] = {}
    session_counts: dict[str, int] = {}
    for key in sorted(by_model):
        group = by_model[key]
        full = _fit(group, xs, ys, x)
        assert full is not None
        for i in group:
            in_sample[i] = full.predict(xs[i])
        pred, method = _out_of_sample(group, idx_all, sessions, xs, ys, x)
        for i, v in pred.items():
            oos[i] = v
        fits[key] = Fit(
            x, full.a, full.b, full.n,
            mape([in_sample[i] for i in group], [ys[i] for i in group]),
            mape([pred.get(i) for i in group], [ys[i] for i in group]),
        )
        methods[key] = method
        session_counts[key] = len({sessions[i] for i in group})
    if idx_all:
        pooled = _fit(idx_all, xs, ys, x)
        assert pooled is not None
        pred, method = _out_of_sample(idx_all, idx_all, sessions, xs, ys, x)
        fits[ANY_MODEL] = Fit(
            x, pooled.a, pooled.b, pooled.n,
            mape([pooled.predict(xs[i]) for i in idx_all], [ys[i] for i in idx_all]),
            mape([pred.get(i) for i in idx_all], [ys[i] for i in idx_all]),
        )
        methods[ANY_MODEL] = method
        session_counts[ANY_MODEL] = len({sessions[i] for i in idx_all})
    return CalibrationOutcome(x, Calibration(fits), methods, session_counts, in_sample, oos)


def fit_tokenizer_profile(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Least squares A ~ overhead + other/chars_per_token + cjk*cjk_tokens_per_char + per_message*messages.

    Describes the provider's tokenizer in Pi's units: characters per token of non-CJK text, tokens
    per CJK character, a per-message cost (framing) and a fixed overhead (system prompt and tools
    when the session does not record them). A term whose column is constant (no CJK text) is left
    out and reported as null. None when there are too few requests to fit.
    """
    names = ["overhead", "other_chars", "cjk_chars", "messages"]
    cols = [
        [1.0] * len(rows),
        [float(r["text_chars"] - r["cjk_chars"]) for r in rows],
        [float(r["cjk_chars"]) for r in rows],
        [float(r["messages"]) for r in rows],
    ]
    keep = [k for k, c in enumerate(cols) if k == 0 or any(v != c[0] for v in c)]
    if 1 not in keep or len(rows) < len(keep) + 2:
        return None
    x = np.array([cols[k] for k in keep], dtype=np.float64).T
    y = np.array([float(r["actual"]) for r in rows])
    scale = np.maximum(np.abs(x).max(axis=0), 1.0)
    coef, _, rank, _ = np.linalg.lstsq(x / scale, y, rcond=None)
    if rank < len(keep):
        return None
    coef = coef / scale
    c: dict[str, float | None] = dict.fromkeys(names, None)
    for k, v in zip(keep, coef.tolist(), strict=True):
        c[names[k]] = v
    pred = (x @ coef).tolist()
    other = c["other_chars"]
    return {
        "n": len(rows),
        "chars_per_token": _r(1 / other) if other else None,
        "cjk_tokens_per_char": _r(c["cjk_chars"]),
        "tokens_per_message": _r(c["messages"]),
        "overhead": _r(c["overhead"], 1),
        "mape_in_sample": _r(mape(pred, [int(r["actual"]) for r in rows])),
    }


def _calibration_section(
    outcome: CalibrationOutcome, alternative: CalibrationOutcome | None, loaded: Calibration | None,
    rows: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """`models`: the fit on these requests; `applied`: the loaded coefficients the estimator used (or null)."""
    models = {}
    for key, fit in outcome.fitted.to_dict()["models"].items():
        models[key] = {**fit, "method": outcome.methods[key], "sessions": outcome.sessions[key]}
    out: dict[str, Any] = {
        "source": "file" if loaded is not None else "fit",
        "x": outcome.x,
        "models": models,
        "applied": loaded.to_dict()["models"] if loaded is not None else None,
    }
    by_model: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_model.setdefault(str(r["model_key"]), []).append(r)
    out["tokenizer"] = {key: fit_tokenizer_profile(by_model[key]) for key in sorted(by_model)}
    if alternative is not None:
        out["chars4"] = {
            key: {**fit, "chars_per_token": _r(4 / fit["b"]) if fit["b"] else None}
            for key, fit in alternative.fitted.to_dict()["models"].items()
        }
    return out


# --------------------------------------------------------------------------------------------
# the whole analysis
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class EstimateErrorReport:
    """Rows (one per request), the JSON body of the report, and the calibration fitted on the rows."""

    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    fitted: Calibration
    estimators: tuple[str, ...]


def _estimator_block(rows: Sequence[Mapping[str, Any]], estimators: Sequence[str], in_sample: Sequence[float | None] | None) -> dict[str, Any]:
    actuals = [r["actual"] for r in rows]
    out = {}
    for est in estimators:
        stats = error_stats([r[f"est_{est}"] for r in rows], actuals)
        if est == "calibrated":
            stats["mape_in_sample"] = _r(mape(in_sample, actuals)) if in_sample is not None else None
        out[est] = stats
    return out


def _timing_block(rows: Sequence[Mapping[str, Any]], estimators: Sequence[str], thresholds: Sequence[int]) -> list[dict[str, Any]]:
    actuals = [r["actual"] for r in rows]
    out = []
    for est in estimators:
        estimates = [r[f"est_{est}"] for r in rows]
        out.extend(decision_stats(est, estimates, actuals, t) for t in thresholds)
    return out


def group_key(row: Mapping[str, Any], by: str) -> str:
    """The `--by` group of a request row."""
    if by == "model":
        return str(row["model_key"])
    if by == "provider":
        return str(row["provider"] or "?")
    if by == "content":
        return content_group(row["cjk_share"], row["tool_share"])
    if by == "size":
        return size_group(row["actual"])
    raise ValueError(by)


#: Bump when the rows `session_requests` produces change shape or meaning (invalidates cached rows).
ROWS_VERSION = 1


def _code_hash() -> str:
    """The package version and a hash of all its sources: the rows depend on read/, tree/,
    compaction/ and tokens/ as much as on this module, so any code change invalidates them."""
    from sessiontools import fingerprint

    return fingerprint.code_fingerprint()


def _cached_session_requests(
    s: Session, measurer: MessageMeasurer, options: EstimateErrorOptions, store: Any | None
) -> SessionRequests:
    """`session_requests`, reusing the rows stored for the same file content and options."""
    import orjson

    from sessiontools import __version__

    key = None
    if store is not None and s.content_hash:
        key = "estimate-error:" + orjson.dumps([
            ROWS_VERSION, __version__, _code_hash(), s.content_hash, s.path, options.leaf, options.all_leaves,
            options.pi_version, sorted(measurer.tokenizers),
        ]).decode()
        hit = store.get_result(key)
        if hit is not None:
            data = orjson.loads(hit)
            return SessionRequests(data["session"], data["pi_version"], data["rows"], Counter(data["skipped"]))
    sr = session_requests(s, measurer, leaf=options.leaf, all_leaves=options.all_leaves, pi_version=options.pi_version)
    if key is not None:
        store.put_result(key, orjson.dumps({"session": sr.session, "pi_version": sr.pi_version, "rows": sr.rows,
                                            "skipped": dict(sr.skipped)}))
    return sr


def estimate_error(
    sessions: Sequence[Session],
    options: EstimateErrorOptions | None = None,
    *,
    tokenizers: Mapping[str, TiktokenCounter] | None = None,
    progress: ProgressFn | None = None,
    token_store: Any | None = None,
) -> EstimateErrorReport:
    """Estimated vs actual prompt tokens for every request of the sessions (see the module doc).

    `tokenizers` maps encoding names to counters (default: loaded on demand for the tokenizer
    estimators asked for, and for the calibrated estimator's x, sharing `token_store`, a
    persistent `TokenStore`, when given). `progress(done, total, label)` is
    called after each session.
    """
    options = options or EstimateErrorOptions()
    measurer = make_measurer(options, tokenizers=tokenizers, token_store=token_store)
    per_session: list[SessionRequests] = []
    for k, s in enumerate(sessions):
        per_session.append(_cached_session_requests(s, measurer, options, token_store))
        if progress is not None:
            progress(k + 1, len(sessions), s.path)
    return summarize_requests(per_session, options)


def needed_encodings(options: EstimateErrorOptions) -> set[str]:
    """The tiktoken encodings the estimators (and the calibration's x) of `options` need."""
    need: set[str] = {TOKENIZERS[e] for e in options.estimators if e in TOKENIZERS}
    if "calibrated" in options.estimators or options.fit:
        xs_needed = {options.calibration_x, "chars4"}
        if options.calibration is not None:
            xs_needed |= {f.x for f in options.calibration.models.values()}
        need |= {TOKENIZERS[x] for x in xs_needed if x in TOKENIZERS}
    return need


def make_measurer(
    options: EstimateErrorOptions, *, tokenizers: Mapping[str, TiktokenCounter] | None = None,
    token_store: Any | None = None,
) -> MessageMeasurer:
    need = needed_encodings(options)
    counters = dict(tokenizers or {})
    for enc in sorted(need):
        if enc not in counters:
            counters[enc] = TiktokenCounter(enc, store=token_store)
    return MessageMeasurer({k: v for k, v in counters.items() if k in need})


class SessionWorker:
    """`session_requests` for one session as a picklable callable (for `--jobs`): each process
    keeps one measurer (loaded vocabularies, in-memory counts) and one cache connection."""

    _per_process: dict[Any, tuple[MessageMeasurer, Any]] = {}

    def __init__(self, options: EstimateErrorOptions, store_path: str | None) -> None:
        self.options = options
        self.store_path = store_path

    def __call__(self, session: Session) -> SessionRequests:
        key = (repr(self.options), self.store_path)
        state = SessionWorker._per_process.get(key)
        if state is None:
            store = None
            if self.store_path is not None:
                from sessiontools.tokens.store import TokenStore

                store = TokenStore(self.store_path)  # type: ignore[arg-type]
            state = SessionWorker._per_process[key] = (make_measurer(self.options, token_store=store), store)
        measurer, store = state
        return _cached_session_requests(session, measurer, self.options, store)

    @classmethod
    def notes(cls) -> list[str]:
        """Cache notes of this process's workers (e.g. a corrupt cache that was rebuilt)."""
        return [n for _, store in cls._per_process.values() if store is not None for n in store.notes]

    def drain_notes(self) -> list[str]:
        """Cache notes raised in this process since the last call (sent back to the parent by
        `parallel.map_sessions`, so that notes from `--jobs` workers are not lost)."""
        out = []
        for _, store in SessionWorker._per_process.values():
            if store is not None and store.notes:
                out.extend(store.notes)
                store.notes.clear()
        return out


def summarize_requests(per_session: Sequence[SessionRequests], options: EstimateErrorOptions) -> EstimateErrorReport:
    """Aggregates, calibration and early/late over the rows of every session (in order)."""
    estimators = options.estimators
    cal_x = options.calibration_x
    calibrate = "calibrated" in estimators or options.fit
    rows: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()
    for sr in per_session:
        rows.extend(sr.rows)
        skipped.update(sr.skipped)

    outcome = fit_calibration(rows if calibrate else [], cal_x)
    alternative = fit_calibration(rows, "chars4") if calibrate and cal_x != "chars4" else None
    in_sample: list[float | None] | None = outcome.in_sample if calibrate else None
    if "calibrated" in estimators:
        if options.calibration is not None:
            in_sample = None
            for r in rows:
                fit = options.calibration.lookup(r["provider"], r["model"])
                x = r.get(f"est_{fit.x}") if fit is not None else None
                r["est_calibrated"] = _r(fit.predict(x), 1) if fit is not None and x is not None else None
        else:
            for r, v in zip(rows, outcome.out_of_sample, strict=True):
                r["est_calibrated"] = _r(v, 1)
    for r in rows:
        for est in ESTIMATORS:
            if est not in estimators:
                r.pop(f"est_{est}", None)
                continue
            e = r.get(f"est_{est}")
            r[f"err_{est}"] = _r(e - r["actual"], 1) if e is not None else None
            r[f"rel_err_{est}"] = _r((e - r["actual"]) / r["actual"]) if e is not None else None

    max_actual = max((r["actual"] for r in rows), default=0)
    thresholds = [spec.resolve(max_actual) for spec in options.thresholds]

    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(group_key(r, options.by), []).append(i)
    group_list = []
    for g in sorted(groups, key=group_order(options.by)):
        sub = [rows[i] for i in groups[g]]
        sub_in = [in_sample[i] for i in groups[g]] if in_sample is not None else None
        group_list.append(
            {
                "by": options.by,
                "group": g,
                "requests": len(sub),
                "estimators": _estimator_block(sub, estimators, sub_in),
                "timing": _timing_block(sub, estimators, thresholds),
            }
        )

    session_list = []
    start = 0
    for sr in per_session:
        n = len(sr.rows)
        sub = rows[start:start + n]
        sub_in = in_sample[start:start + n] if in_sample is not None else None
        start += n
        session_list.append(
            {
                "session": sr.session,
                "pi_version": sr.pi_version,
                "requests": n,
                "skipped_requests": dict(sorted(sr.skipped.items())),
                "estimators": _estimator_block(sub, estimators, sub_in),
                "tokenizer": fit_tokenizer_profile(sub),
            }
        )

    summary: dict[str, Any] = {
        "requests": len(rows),
        "skipped_requests": {"total": sum(skipped.values()), **dict(sorted(skipped.items()))},
        "by": options.by,
        "thresholds": [
            {"spec": spec.text, "tokens": t} for spec, t in zip(options.thresholds, thresholds, strict=True)
        ],
        "estimators": _estimator_block(rows, estimators, in_sample),
        "groups": group_list,
        "calibration": _calibration_section(outcome, alternative, options.calibration, rows) if calibrate else None,
        "timing": _timing_block(rows, estimators, thresholds),
        "sessions": session_list,
    }
    return EstimateErrorReport(rows, summary, outcome.fitted, estimators)


def requests_columns(estimators: Sequence[str]) -> list[str]:
    """Column order of the per-request table (CSV/Parquet)."""
    base = [
        "session", "pi_version", "entry_id", "index", "line", "timestamp", "provider", "model", "model_key",
        "actual", "input", "cache_read", "cache_write", "output", "messages", "images", "chars_total",
        "text_chars", "cjk_chars", *CHAR_COLUMNS, "cjk_share", "tool_share",
    ]
    for est in estimators:
        base += [f"est_{est}", f"err_{est}", f"rel_err_{est}"]
    return base

