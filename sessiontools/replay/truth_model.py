"""The one token truth model of every agent: what a provider would have counted for a context the
agent never sent.

Fitted per session path from its own recorded usage, whatever the agent. The transcript adapter gives
the fit its units (each message of any agent's `TranscriptPath`, `replay.neutral.fit_neutral_truth`),
each unit's size by the one message counter of the
path (`truth_counter`: the file's own agent's size of a message, `Policy.truth_count`, Pi's being
its `estimateTokens`; or the model's own tokenizer, `tokens.registry`), and the recorded contexts
(`FitInput`). Under `replay --truth-tokenizer auto` (the default) the counter is chosen per session
(`replay.counter_choice`): the model's tokenizer when its fit on the session's earlier requests predicts
the later ones better than chars/4's beyond noise (`in_session_errors`, `better_beyond_noise`),
else chars/4; `TruthModel.choice` says why. Then, the same for every agent:

- `overhead` O and `ratio` r from least squares over requests, A_j ~ O + r * X_j, where X_j is the
  counter's size of request j's recorded context (`fit_overhead_ratio`: system prompt and tool
  definitions are not in the session, so they land in O; few requests shrink toward a prior, the
  run's other sessions' ratio, `replay.priors`);
- each unit's actual tokens attributed from differences of recorded prompt totals (`attribute`);
  everything else is modelled as r * (counted size). A context's truth is O + the sum of its units'
  tokens, so the truth of every context the agent really sent is its recorded prompt;
- a new summary's size (`summary_size`): the median of the recorded summaries' tokens, as the
  recording priced them where the agent's recording prices a summary alone (Pi), else as the model
  counts their text; `DEFAULT_SUMMARY_TOKENS` when there is no readable recorded summary.

One class, `TruthModel`, holds the result; `to_dict` is the run record's `truth_model`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sessiontools.replay.priors import TruthPrior, prior_text

if TYPE_CHECKING:
    from sessiontools.replay.counter_choice import CounterChoice

#: Summary size used when a session has no recorded summary to learn from (tokens).
DEFAULT_SUMMARY_TOKENS = 1500
#: With at least this many requests (and two distinct context sizes) the data alone decide the fit.
MIN_REQUESTS = 8
#: Prior tokens-per-counted-token ratio (chars/4 is right on average for English prose and code).
PRIOR_RATIO = 1.0
#: Physical bounds of the ratio: 4 characters per token down to 1 character per token (CJK) is
#: 1x-4x; below 0.25 no tokenizer counts (16+ characters per token).
RATIO_BOUNDS = (0.25, 4.0)
#: The counter of every path unless another is asked for: chars/4 of what the agent counts.
CHARS4 = "chars4"


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
    """Each unit's actual tokens from the differences of recorded prompt totals: the one attribution of
    recorded usage, for every agent (Pi: keyed by id of entry; any transcript: by message index).

    `contexts`: (position, sources, n, _) of each request with usable usage, in order; its context is
    `sources[:n]`, and `wanted[position]` its recorded prompt. When a request's context extends the
    previous one (a prefix of it), the growth of the prompt is shared among the new sources in
    proportion to their counted size (`counted`, by `key` of a source); otherwise (after a
    compaction, a context edit, a branch) the sources not known yet share what the prompt leaves after
    the overhead and the known sources. So the truth of every recorded context, overhead + its
    sources' tokens, is its recorded prompt whenever no prompt shrank while its context grew
    (`tests/replay/test_one_truth_model.py`). The growth is taken from the recorded prompt, not from
    the model's truth of the previous context: where an adapter's recorded context holds a message
    the provider was not sent (the prompt shrinks), later messages keep their own growth instead of
    inheriting that error (measured: Claude Code's 2.1.20/2.1.21 what-if pair loses a compaction the
    other way)."""
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


@dataclass(slots=True)
class FitInput:
    """What an agent's adapter gives the one fit: every unit's counted size (by key), the recorded
    context of each request with usable usage (`attribute`'s `contexts`, each with its total counted
    size) and its recorded prompt (`wanted`, by position), and the recorded summaries (the keys of
    each one's units, its readable text or None)."""

    counted: Mapping[Any, int]
    contexts: Sequence[tuple[Any, Sequence[Any], int, float]]
    wanted: Mapping[Any, float]
    summaries: Sequence[tuple[tuple[Any, ...], str | None]] = ()
    key: Callable[[Any], Any] = id  # a context source's key in `counted`
    priced_summaries: bool = False  # the recorded usage prices the summaries (`summary_size`)
    #: chars/4 of all the units, when `counted` is another counter's: a text known only by its length
    #: (`TruthModel.text_tokens`) is then scaled by the session's counted units per chars/4 token
    chars4_total: float | None = None


@dataclass(slots=True)
class TruthModel:
    """The fitted truth of one session path, keyed by its units (the transcript
    messages by index: `key`). A unit's tokens are what the recorded usage attributes to it
    (`tokens`), else `ratio` * its counted size (`unit_tokens`, `message_tokens`: the one lookup)."""

    overhead: float
    ratio: float
    tokens: dict[Any, float]  # key -> attributed actual tokens
    counted: Mapping[Any, int]  # key -> counter size
    summary_tokens: float  # predicted truth tokens of a new summary
    summary_chars_per_token: float
    fit: TruthFit | None = None
    modelled: int = 0  # units the recording never priced (modelled as ratio * counted)
    notes: list[str] = field(default_factory=list)
    shared: dict[Any, Any] = field(default_factory=dict, repr=False)  # per-version work shared by a grid
    counter: str = CHARS4  # what counted the units: "chars4", or a tokenizer of `tokens.registry`
    prior: TruthPrior | None = None  # learnt from the run's other sessions (None: PRIOR_RATIO)
    key: Callable[[Any], Any] = field(default=id, repr=False)  # a unit's key (id of entry, message index)
    count: Callable[[Any], int] | None = field(default=None, repr=False)  # counter of a unit not in `counted`
    chars4_scale: float = 1.0  # the counter's units per chars/4 token over the session (1: chars/4 itself)
    choice: CounterChoice | None = None  # why `auto` counts with `counter` (None: a fixed counter was asked for)
    #: The newest recorded prompt anchors the truth of a recorded context (the file does not record
    #: every edit of it: `Policy.records_context_edits` of the file's own agent), else the sum does.
    anchored: bool = True

    def unit_tokens(self, unit: Any) -> float:
        k = self.key(unit)
        t = self.tokens.get(k)
        if t is not None:
            return t
        c = self.counted.get(k)
        if c is None:
            c = self.count(unit) if self.count is not None else 0
        return self.ratio * c

    message_tokens = unit_tokens

    def units_tokens(self, units: Iterable[Any]) -> list[float]:
        """`unit_tokens` of each unit, in one call (a grid's workload: a method call a message was a
        sixth of measuring it); tests/replay/test_path_bulk.py holds it to `unit_tokens`."""
        key, tokens, counted, count = self.key, self.tokens.get, self.counted.get, self.count
        out = []
        for u in units:
            k = key(u)
            t = tokens(k)
            if t is None:
                c = counted(k)
                if c is None:
                    c = count(u) if count is not None else 0
                t = self.ratio * c
            out.append(t)
        return out

    def text_tokens(self, chars: int) -> float:
        """Truth of a text of `chars` characters: chars/4 scaled by the fitted ratio (and, when another
        counter counted the units, by the session's units of that counter per chars/4 token)."""
        return self.ratio * self.chars4_scale * -(-chars // 4)

    @property
    def attributed(self) -> Mapping[Any, float]:
        """The units' tokens the recorded usage attributes (by key)."""
        return self.tokens

    @property
    def n(self) -> int:
        """Requests fitted."""
        return self.fit.n if self.fit else 0

    @property
    def prior_dominated(self) -> bool:
        """Too few requests for the data alone to decide the fit (or none fitted)."""
        return self.fit is None or self.fit.prior_dominated

    def record(self) -> Any:
        """The run record's `truth_model` (`replay.run_document.TruthRecord`)."""
        from sessiontools.replay.run_document import TruthRecord

        return TruthRecord(round(self.overhead), round(self.ratio, 4), len(self.tokens), self.modelled,
                           round(self.summary_tokens), self.n, self.prior_dominated, tuple(self.notes),
                           self.counter if self.counter != CHARS4 or self.choice is not None else None, self.choice)


def summary_size(summaries: Sequence[tuple[tuple[Any, ...], str | None]], tokens: Mapping[Any, float],
                 counted: Mapping[Any, int], ratio: float, priced: bool, scale: float = 1.0,
                 ) -> tuple[float | None, float]:
    """The one summary rule: (median truth of the recorded readable summaries, their characters per
    token). `priced` (the agent's recording prices its summaries, `Policy.recorded_summary_priced`):
    the summaries the recorded usage prices, at what it attributes to them; else (or when it prices
    none) the model's count of their text (ratio * counted size). None: no readable summary."""
    readable = [(keys, text) for keys, text in summaries if isinstance(text, str)]
    pairs: list[tuple[float, str]] = []
    if priced:
        for keys, text in readable:
            got = [tokens.get(k) for k in keys]
            if keys and None not in got and sum(got):  # type: ignore[arg-type]
                pairs.append((float(sum(got)), text))  # type: ignore[arg-type]
    if not pairs:
        pairs = [(ratio * sum(counted.get(k, 0) for k in keys), text) for keys, text in readable]
    sizes = [t for t, _ in pairs]
    cpt = [len(text) / t for t, text in pairs if t and text]
    fallback = 4.0 / max(ratio * scale, 1e-9)  # characters per token of chars/4 at the fitted rate (`chars4_scale`)
    return (statistics.median(sizes) if sizes else None), (statistics.median(cpt) if cpt else fallback)


def counter_notes(counter: str, prior: TruthPrior | None) -> tuple[list[str], TruthPrior | None]:
    """The notes of a fit that counts with `counter` (chars4, or a tokenizer of `tokens.registry`) and
    the prior it applies: one learnt in the same units (`TruthPrior.counter`), else none (said)."""
    notes = []
    if counter != CHARS4:
        from sessiontools.tokens.registry import label

        notes.append(f"messages counted with {label(counter)}, scaled by the fitted ratio")
    if prior is not None and prior.counter != counter:
        notes.append(f"the prior of other sessions, learnt in {prior.counter} units, is not applied")
        prior = None
    return notes, prior


def _notes(fit: TruthFit, prior: TruthPrior | None, had_contexts: bool, counter: str) -> list[str]:
    unit = "chars/4" if counter == CHARS4 else counter
    if not had_contexts and prior is None:
        return [f"no request with usable usage: truth is modelled as {unit} with no overhead"]
    if not had_contexts:
        return [f"no request with usable usage: truth is modelled by the prior ({prior_text(prior)}), with no overhead"]
    out = []
    if fit.prior_dominated:
        shown = f"ratio {PRIOR_RATIO} to {unit}" if prior is None else prior_text(prior)
        out.append(f"{fit.n} request(s) with usable usage: overhead and ratio shrunk toward the prior ({shown})")
    if fit.bounded:
        out.append(f"fitted ratio outside {RATIO_BOUNDS[0]}-{RATIO_BOUNDS[1]} tokens per {unit} token: clamped")
    return out


def fit_model(inp: FitInput, *, summary_tokens: float | None = None, prior: TruthPrior | None = None,
              counter: str = CHARS4, notes: Sequence[str] = (), count: Callable[[Any], int] | None = None,
              unit_key: Callable[[Any], Any] = id, choice: CounterChoice | None = None) -> TruthModel:
    """The one fit of every agent: overhead and ratio, attribution, the summary size, the notes."""
    xs = [float(x) for _, _, _, x in inp.contexts]
    ys = [float(inp.wanted[at]) for at, _, _, _ in inp.contexts]
    fit = fit_overhead_ratio(xs, ys, prior.ratio if prior else PRIOR_RATIO)
    tokens = attribute(inp.contexts, inp.wanted, inp.counted, fit.overhead, key=inp.key)
    total = sum(inp.counted.values())
    scale = total / inp.chars4_total if inp.chars4_total and total else 1.0
    learnt, cpt = summary_size(inp.summaries, tokens, inp.counted, fit.ratio, inp.priced_summaries, scale)
    out = list(notes)
    if summary_tokens is not None:
        pred = float(summary_tokens)
    elif learnt is not None:
        pred = learnt
    else:
        pred = float(DEFAULT_SUMMARY_TOKENS)
        out.append(f"no recorded summary to learn from: a new summary is taken as {DEFAULT_SUMMARY_TOKENS} tokens")
    out += _notes(fit, prior, bool(inp.contexts), counter)
    return TruthModel(
        overhead=fit.overhead, ratio=fit.ratio, tokens=tokens, counted=inp.counted, summary_tokens=pred,
        summary_chars_per_token=cpt, fit=fit,
        modelled=sum(1 for k, c in inp.counted.items() if c and k not in tokens), notes=out, counter=counter,
        prior=prior, key=unit_key, count=count, chars4_scale=scale, choice=choice,
    )
