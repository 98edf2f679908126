"""The token truth model: what a provider would have counted for a context Pi never sent.

Fitted per session from its own recorded usage:

- `overhead` O and `ratio` r from least squares over requests: A_j ~ O + r * X_j, where X_j is
  the counter's size of request j's recorded context (system prompt and tool definitions are
  not in the session, so they land in O).
- Per-entry actual tokens t(e) attributed from differences of recorded prompt totals: when the
  context of request j extends that of the previous request, A_j - A_{j-1} is shared among the
  new entries in proportion to their counted size; after a recorded compaction, the entries not
  known yet (the summary and anything new) share A_j - O - (known entries).
- Everything else is modelled as r * (counted size). A context's truth is O + sum of t.

With attribution exact, the model gives back the recorded A for every context Pi really sent,
so "recorded while the simulated context equals the recorded one" holds by construction; the
`source` of each number still says which it was.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessiontools.read.pi.entries import Entry
from sessiontools.replay.priors import TruthPrior, prior_text
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.pi.context import entry_messages_v0, entry_messages_v1
from sessiontools.transcript.pi.incremental import iter_request_projections
from sessiontools.transcript.pi.workload import Workload

MessageCounter = Callable[[Mapping[str, Any]], int]

#: Summary size used when a session has no recorded summary to learn from (tokens).
DEFAULT_SUMMARY_TOKENS = 1500


def chars4_counter(pi_version: str) -> MessageCounter:
    return lambda m: estimate_tokens(m, pi_version)


def entry_messages(e: Entry, pi_version: str) -> tuple[Mapping[str, Any], ...]:
    """The messages an entry contributes to a context (ignoring edits and compaction selection)."""
    if e.type == "compaction":
        return ()
    return entry_messages_v1(e) if pi_version == "1" else _v0_messages(e)


def _v0_messages(e: Entry) -> tuple[Mapping[str, Any], ...]:
    return entry_messages_v0(e)


def recorded_contexts(
    path: Sequence[Entry], pi_version: str, positions: Mapping[int, Any], size: Mapping[int, int] | None = None
) -> list[tuple[int, list[Entry], int, int]]:
    """The source entries of the context Pi built before each path position in `positions`, with
    the total of `size` (keyed by id of entry) over them; contexts from the one incremental builder
    (`transcript.pi.incremental`).

    Each element is (position, sources, n, total): the context's sources are `sources[:n]`. Contexts
    of one generation (no rebuild between them) share one `sources` list, which only grows, so an
    earlier context of the same list is a prefix of a later one (linear, not quadratic)."""
    sz = size or {}
    if pi_version == "0" and not any(e.type == "compaction" for e in path):
        return _contexts_v0_linear(path, positions, sz)
    return _contexts_incremental(path, pi_version, positions, sz)


def _contexts_incremental(
    path: Sequence[Entry], pi_version: str, positions: Mapping[int, Any], sz: Mapping[int, int]
) -> list[tuple[int, list[Entry], int, int]]:
    out = []
    sources: list[Entry] = []
    total = seen = 0
    last_gen = None
    for i, projected, _, gen in iter_request_projections(path, positions, pi_version):
        if gen != last_gen:  # rebuilt (a compaction or an edit): start over; else only the new entries
            sources, total, seen, last_gen = [], 0, 0, gen
        for pe in projected[seen:]:
            if pe.messages:
                sources.append(pe.source)
                total += sz.get(id(pe.source), 0)
        seen = len(projected)
        out.append((i, sources, len(sources), total))
    return out


def _contexts_v0_linear(
    path: Sequence[Entry], positions: Mapping[int, Any], sz: Mapping[int, int]
) -> list[tuple[int, list[Entry], int, int]]:
    """`recorded_contexts` of a 0.x path without compactions: the builder never rebuilds there (one
    generation), and the context before position i is every entry before i that gives a message
    (`entry_messages_v0`), so the sources are collected in one pass without projecting entries."""
    out = []
    sources: list[Entry] = []
    total = j = 0
    get = sz.get
    for i in sorted(set(positions)):
        while j < i:
            e = path[j]
            j += 1
            if e.data.get("message") is not None if e.type == "message" else entry_messages_v0(e):
                sources.append(e)
                total += get(id(e), 0)
        out.append((i, sources, len(sources), total))
    return out


@dataclass(slots=True)
class TruthModel:
    """Fitted truth for one workload."""

    overhead: float
    ratio: float
    tokens: dict[int, float]  # id(entry) -> attributed actual tokens
    counted: dict[int, int]  # id(entry) -> counter size
    summary_tokens: float  # predicted truth tokens of a new summary
    summary_chars_per_token: float
    fit: TruthFit | None = None
    attributed: int = 0
    modelled: int = 0
    notes: list[str] = field(default_factory=list)
    counter_is_chars4_of: str | None = None  # `counted` is Pi's chars/4 of this version, reusable as Pi's view
    shared: dict[Any, Any] = field(default_factory=dict, repr=False)  # per-version work shared by a grid

    def entry_tokens(self, e: Entry) -> float:
        t = self.tokens.get(id(e))
        return t if t is not None else self.ratio * self.counted.get(id(e), 0)

    def text_tokens(self, chars: int) -> float:
        """Truth of a text of `chars` characters (Pi-style chars/4 scaled by the fitted ratio)."""
        return self.ratio * -(-chars // 4)

    @property
    def prior_dominated(self) -> bool:
        """Too few requests for the data alone to decide the fit (or none fitted)."""
        return self.fit is None or self.fit.prior_dominated

    def to_dict(self) -> dict[str, Any]:
        """The run record's `truth_model`."""
        return {
            "overhead_tokens": round(self.overhead),
            "ratio_to_chars4": round(self.ratio, 4),
            "entries_attributed": self.attributed,
            "entries_modelled": self.modelled,
            "summary_tokens": round(self.summary_tokens),
            "requests_fitted": self.fit.n if self.fit else 0,
            "prior_dominated": self.prior_dominated,
            "notes": self.notes,
        }


#: With at least this many requests (and two distinct context sizes) the data alone decide the fit.
MIN_REQUESTS = 8
#: Prior tokens-per-chars/4 ratio (chars/4 is right on average for English prose and code).
PRIOR_RATIO = 1.0
#: Physical bounds of the ratio: 4 characters per token down to 1 character per token (CJK) is
#: 1x-4x; below 0.25 no tokenizer counts (16+ characters per token).
RATIO_BOUNDS = (0.25, 4.0)


@dataclass(frozen=True, slots=True)
class TruthFit:
    """Overhead O and ratio r of A ~ O + r * X, and how much the data decided them."""

    overhead: float
    ratio: float
    n: int  # requests fitted
    prior_dominated: bool  # fewer than MIN_REQUESTS (or one context size): shrunk toward the prior
    bounded: bool = False  # the ratio hit RATIO_BOUNDS


def fit_overhead_ratio(xs: Sequence[float], ys: Sequence[float], prior_ratio: float = PRIOR_RATIO) -> TruthFit:
    """Fit O and r by `tokens.fit.least_squares`.

    Enough data (>= MIN_REQUESTS, two distinct X): ordinary least squares, refitted through the origin
    when the overhead comes out negative or the ratio non-positive. Fewer requests: shrinkage toward
    the prior (r = `prior_ratio`, PRIOR_RATIO unless one was learnt from other sessions:
    `replay.priors`; O = what the smallest request leaves at that ratio, >= 0) with the
    weight of MIN_REQUESTS - n pseudo-requests, non-negative. Then the ratio is kept within
    RATIO_BOUNDS and the overhead within [0, smallest recorded prompt].
    """
    from sessiontools.tokens.fit import least_squares

    n = len(xs)
    if n == 0:
        return TruthFit(0.0, prior_ratio, 0, True)
    if n >= MIN_REQUESTS and len(set(xs)) > 1:
        a, b = least_squares([[1.0, x] for x in xs], ys).coef
        if a < 0 or b <= 0:  # no negative overhead: fit a ratio through the origin instead
            (b,) = least_squares([[x] for x in xs], ys).coef
            a = 0.0
        prior = False
    else:
        k = min(range(n), key=lambda j: xs[j])
        o0 = max(0.0, ys[k] - prior_ratio * xs[k])
        pseudo = MIN_REQUESTS - min(n, MIN_REQUESTS - 1)
        mean_x2 = sum(x * x for x in xs) / n
        a, b = least_squares([[1.0, x] for x in xs], ys, ridge=[float(pseudo), pseudo * max(mean_x2, 1.0)],
                             prior=[o0, prior_ratio], nonneg=True).coef
        prior = True
    lo, hi = RATIO_BOUNDS
    bounded = not lo <= b <= hi
    b = min(max(b, lo), hi)
    a = min(max(a, 0.0), min(ys))
    return TruthFit(a, b, n, prior, bounded)


def attribute(
    contexts: Sequence[tuple[Any, Sequence[Any], int, Any]], wanted: Mapping[Any, float], counted: Mapping[Any, int],
    overhead: float, key: Callable[[Any], Any] = id,
) -> dict[Any, float]:
    """Each message's (entry's) actual tokens from the differences of recorded prompt totals: the one
    attribution of recorded usage to messages, for every agent (Pi: `fit_truth`, keyed by id of
    entry; any transcript: `replay.neutral.attribute_messages`, keyed by message index).

    `contexts`: (position, sources, n, _) of each request with usable usage, in order; its context is
    `sources[:n]`, and `wanted[position]` its recorded prompt. When a request's context extends the
    previous one (a prefix of it), the growth of the prompt is shared among the new sources in
    proportion to their counted size (`counted`, by `key` of a source); otherwise (after a
    compaction, a context edit, a branch) the sources not known yet share what the prompt leaves after
    the overhead and the known sources. So the truth of every recorded context, overhead + its
    sources' tokens, is its recorded prompt whenever no prompt shrank while its context grew."""
    tokens: dict[Any, float] = {}
    prev_list: Sequence[Any] | None = None
    prev_n = 0
    prev_a: float = overhead
    size = counted.get
    for at, lst, n, _ in contexts:
        a = wanted[at]
        # The previous context is a prefix of this one: same generation (one growing list), or equal heads.
        if lst is prev_list or prev_n == 0 or (
            n >= prev_n and prev_list is not None and lst[:prev_n] == prev_list[:prev_n]
        ):
            delta = a - prev_a
            new = []  # (key, size) of the sources not attributed yet (a loop: usually one or two)
            total = 0
            for j in range(prev_n, n):
                k = key(lst[j])
                if k not in tokens:
                    c = size(k, 0)
                    new.append((k, c))
                    total += c
            if new and delta >= 0:
                if total:
                    for k, c in new:
                        tokens[k] = delta * (c / total)
                else:
                    for k, _ in new:
                        tokens[k] = delta * (1 / len(new))
        else:
            keys = [key(x) for x in lst[:n]]
            unknown = [k for k in keys if k not in tokens]
            known = sum(tokens[k] for k in keys if k in tokens)
            rest = a - overhead - known
            total = sum(counted.get(k, 0) for k in unknown)
            if unknown and rest >= 0:
                for k in unknown:
                    tokens[k] = rest * (counted.get(k, 0) / total if total else 1 / len(unknown))
        prev_list, prev_n, prev_a = lst, n, a
    return tokens


def _model_counter(workload: Workload, notes: list[str], had_prior: bool) -> MessageCounter:
    """`fit_truth(model_tokenizer=True)`'s counter: the calibrated feature's tokenizer for the
    workload's model (`tokens.registry.message_counter_for`), said in `notes`."""
    from sessiontools.tokens.registry import available_encoding_for, label, message_counter_for

    name = available_encoding_for(workload.provider, workload.model, calibration=True)
    notes.append(f"messages counted with {label(name)}, scaled by the fitted ratio"
                 + (" (the chars/4 prior of other sessions is not applied)" if had_prior else ""))
    return message_counter_for(workload.provider, workload.model, workload.pi_version, calibration=True)


def fit_truth(
    workload: Workload, counter: MessageCounter | None = None, *, summary_tokens: int | None = None,
    prior: TruthPrior | None = None, model_tokenizer: bool = False,
) -> TruthModel:
    """Fit the truth model of a workload from its recorded usage (`prior`: a ratio learnt from the
    run's other sessions, used instead of PRIOR_RATIO when the requests are too few).

    `model_tokenizer`: with no `counter`, count each message with the model's own tokenizer where
    it beats o200k, else o200k (`tokens.registry.message_counter_for(..., calibration=True)`: the
    calibrated feature's tokenizer; o200k for DeepSeek, whose own loses to o200k here too,
    docs/estimate-error.md) instead of Pi's chars/4, so a message the recording never priced (a
    diverged context) is `ratio` * its tokenizer count. A `prior`, learnt in chars/4 units, is not
    applied then (PRIOR_RATIO, said in `notes`)."""
    v = workload.pi_version
    notes: list[str] = []
    if counter is None and model_tokenizer:
        counter = _model_counter(workload, notes, prior is not None)
        prior = None
    count = counter or chars4_counter(v)
    chars4_of = v if counter is None else None
    path = workload.path
    counted: dict[int, int] = {}
    # 0.x message entries hold one message (`entry_messages_v0`): counted without the generic calls.
    direct = estimate_tokens if counter is None and v == "0" else None
    for e in path:
        t = e.type
        if t == "compaction":
            summary = e.data.get("summary")
            counted[id(e)] = count({"role": "compactionSummary", "summary": summary}) if isinstance(summary, str) else 0
        elif direct is not None and t == "message" and e.message is not None:
            counted[id(e)] = direct(e.message, "0")
        else:
            counted[id(e)] = sum(count(m) for m in entry_messages(e, v))
    # Recorded context of every request with usable usage, in path order.
    pos = {id(e): i for i, e in enumerate(path)}
    wanted = {pos[id(workload.base[r.base_index])]: r.recorded_prompt for r in workload.requests
              if r.recorded_prompt is not None}
    contexts = recorded_contexts(path, v, wanted, counted)
    xs = [x for _, _, _, x in contexts]
    ys = [float(wanted[at]) for at, _, _, _ in contexts]
    fit = fit_overhead_ratio(xs, ys, prior.ratio if prior else PRIOR_RATIO)
    overhead, ratio = fit.overhead, fit.ratio
    tokens = attribute(contexts, wanted, counted, overhead)
    # What a new summary costs: learnt from the recorded summaries.
    sums = [(tokens.get(id(e)), e.data.get("summary")) for e in path if e.type == "compaction"]
    learnt = [t for t, s in sums if t and isinstance(s, str)]
    cpt = [len(s) / t for t, s in sums if t and isinstance(s, str) and s]
    if summary_tokens is not None:
        pred = float(summary_tokens)
    elif learnt:
        pred = statistics.median(learnt)
    else:
        pred = float(DEFAULT_SUMMARY_TOKENS)
        notes.append(f"no recorded summary to learn from: a new summary is taken as {DEFAULT_SUMMARY_TOKENS} tokens")
    if not contexts and prior is None:
        notes.append("no request with usable usage: truth is modelled as chars/4 with no overhead")
    elif not contexts:
        notes.append(f"no request with usable usage: truth is modelled by the prior ({prior_text(prior)}), "
                     "with no overhead")
    elif fit.prior_dominated:
        shown = f"ratio {PRIOR_RATIO} to chars/4" if prior is None else prior_text(prior)
        notes.append(f"{fit.n} request(s) with usable usage: overhead and ratio shrunk toward the prior ({shown})")
    if fit.bounded:
        notes.append(f"fitted ratio outside {RATIO_BOUNDS[0]}-{RATIO_BOUNDS[1]} tokens per chars/4 token: clamped")
    return TruthModel(
        overhead=overhead,
        ratio=ratio,
        tokens=tokens,
        counted=counted,
        summary_tokens=pred,
        summary_chars_per_token=statistics.median(cpt) if cpt else 4.0 / max(ratio, 1e-9),
        fit=fit,
        attributed=len(tokens),
        modelled=sum(1 for e in path if id(e) not in tokens and counted.get(id(e))),
        notes=notes,
        counter_is_chars4_of=chars4_of,
    )
