"""`replay --truth-tokenizer auto` (the default): which counter the one truth model
(`replay.truth_model`) counts a session's messages with, chosen per session by the measure of
`lab.truth_counters`: the counter whose fit on the session's earlier recorded requests predicts its
later ones best, in-session and strictly out of sample (`in_session_errors`).

Neither fixed counter is right everywhere: on real Pi/OpenClaw files the model's tokenizer predicts
better than chars/4 (docs/estimate-error.md), while a provider that counts about in proportion to
the characters (the lab server's pseudo-tokenizer) is nearer chars/4, and no model id says which.
chars/4 (each agent's own count, nothing to load) is kept unless the tokenizer is better beyond
noise (`better_beyond_noise`); a session with too few requests to tell takes the counter of the
prior its model's other sessions in the run teach (`replay.priors`), else chars/4.

A warm run repeats none of the comparison: under `cached_choices(key)` (the CLI's key of the file's
content and the package's code) each path's `CounterChoice` is kept in the token store's results,
keyed before anything is counted (`path_key`: the file's key, the policy's rule, the candidates and
the path's shape), with the chosen tokenizer's count of each of the path's messages (`keep_counts`).
The next run of the same bytes takes both (`_stored_choice`, `kept_counts`): it builds only the
chosen counter's fit input and counts nothing with a tokenizer (its records are byte-identical to a
fresh choice's: tests/replay/test_counter_choice_cache.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from sessiontools.replay.priors import TruthPrior
from sessiontools.replay.truth_model import CHARS4, MIN_REQUESTS, RATIO_BOUNDS, FitInput, fit_overhead_ratio

#: `auto` compares the counters with at least this many requests with usable usage (two predictions);
#: fewer: `choose_counter`'s fallback, decided without counting with a tokenizer.
MIN_CHOICE_REQUESTS = 3
#: `auto` leaves chars/4 (each agent's own count) for the model's tokenizer only when the tokenizer's
#: in-session errors are lower beyond noise: the mean of the paired differences at least this many
#: standard errors above zero (`better_beyond_noise`).
CHOICE_Z = 2.0
#: Bump when what a stored `CounterChoice` or its kept counts mean changes (the key holds the code's
#: fingerprint too). 2: keyed by `path_key` (before counting), the chosen tokenizer's counts kept.
CHOICE_VERSION = 2
#: The content key of the file being replayed (`cached_choices`); None: every choice is computed.
_FILE_KEY: ContextVar[str | None] = ContextVar("counter_choice_file_key", default=None)


def in_session_errors(inp: FitInput) -> list[float]:
    """|predicted - recorded| / recorded of each request after the first with usable usage, predicted
    by O + r * X fitted (`fit_overhead_ratio`, no prior) on the session's earlier requests only: the
    in-session, strictly out-of-sample measure of a counter (`lab.truth_counters`, `choose_counter`).

    The same fit as `fit_overhead_ratio`, kept up to date in O(1) per request once the data decide
    it (running centred moments instead of a least-squares solve per prefix)."""
    xs = [float(x) for _, _, _, x in inp.contexts]
    ys = [float(inp.wanted[at]) for at, _, _, _ in inp.contexts]
    out: list[float] = []
    mx = my = cxx = cxy = sxx = sxy = 0.0
    lo_y = float("inf")
    distinct = False
    lo, hi = RATIO_BOUNDS
    for k, (x, y) in enumerate(zip(xs, ys, strict=True)):
        if k and y > 0:
            if k < MIN_REQUESTS or not distinct:
                fit = fit_overhead_ratio(xs[:k], ys[:k])
                o, r = fit.overhead, fit.ratio
            else:
                r = cxy / cxx
                o = my - r * mx
                if o < 0 or r <= 0:  # no negative overhead: a ratio through the origin instead
                    r, o = sxy / sxx, 0.0
                r = min(max(r, lo), hi)
                o = min(max(o, 0.0), lo_y)
            out.append(abs(o + r * x - y) / y)
        n = k + 1  # Welford's update of the means and co-moments with request k
        dx = x - mx
        mx += dx / n
        my += (y - my) / n
        cxx += dx * (x - mx)
        cxy += dx * (y - my)
        sxx += x * x
        sxy += x * y
        lo_y = min(lo_y, y)
        distinct = distinct or x != xs[0]
    return out


@dataclass(frozen=True, slots=True)
class CounterChoice:
    """Why `replay --truth-tokenizer auto` counts a session with `counter`: each candidate's in-session
    error (`in_session_errors`' mean, by counter name; absent when not measured) over `predictions`
    requests, and the note that says it (the run record's `truth_model.counter_choice`)."""

    counter: str
    errors: Mapping[str, float]
    predictions: int
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {"errors": {k: round(v, 5) for k, v in self.errors.items()}, "predictions": self.predictions,
                "note": self.note}


def counter_label(counter: str | None) -> str:
    """How notes and tables name a truth counter: `chars/4`, `o200k`, `qwen3_5`."""
    return "chars/4" if counter in (None, CHARS4) else str(counter).removesuffix("_base")


_unit = counter_label


def choice_z(n: int, total: float, squares: float) -> float:
    """z of n paired differences d (their sum and sum of squares): mean / standard error; +inf when
    they are all equal and positive, 0 with fewer than two."""
    if n < 2:
        return 0.0
    mean = total / n
    var = max(squares - n * mean * mean, 0.0) / (n - 1)
    if var <= 1e-24:
        return float("inf") if mean > 0 else 0.0
    return mean / (var / n) ** 0.5


def better_beyond_noise(first: Sequence[float], other: Sequence[float]) -> tuple[bool, float]:
    """Whether the errors `other` (one per prediction) are lower than `first`'s beyond noise
    (`choice_z` of the paired differences >= CHOICE_Z), and that z."""
    d = [a - b for a, b in zip(first, other, strict=True)]
    z = choice_z(len(d), sum(d), sum(x * x for x in d))
    return z >= CHOICE_Z, z


def choose_counter(candidates: Sequence[str], fit_input: Callable[[str], FitInput], prior: TruthPrior | None = None,
                   key: str | None = None) -> tuple[str, FitInput, CounterChoice | None]:
    """The counter a path's truth is fitted with, and its fit input (`fit_input(counter)`, asked once
    per counter): the one candidate, or (`auto`: chars/4, then the model's tokenizer) the second when
    its fit on the session's earlier requests predicts the later ones better beyond noise
    (`in_session_errors`, `better_beyond_noise`), else the first. With fewer than
    MIN_CHOICE_REQUESTS requests the session cannot tell: the counter of the prior learnt from the
    run's other sessions of its model (`replay.priors`) when it is the second, else the first
    (chars/4: nothing is loaded or counted for it). `key` (`path_key`): where the path's choice is
    kept; a choice kept there is taken, and only its counter's fit input is built."""
    from sessiontools.tokens.registry import flush_truth_counts

    try:
        return _choose(candidates, fit_input, prior, key)
    finally:
        flush_truth_counts()  # the counts made for this session, to the token store in one go


@contextmanager
def cached_choices(file_key: str | None) -> Iterator[None]:
    """Within: the choices made are stored and reused under `file_key` (the file's content hash and
    the code's fingerprint, which the caller vouches for: the same key, the same bytes and code),
    per path and candidates (`path_key`), in the token store (`tokens.registry.truth_result_store`;
    none: nothing is kept). `file_key` None or empty: every choice is computed."""
    token = _FILE_KEY.set(file_key or None)
    try:
        yield
    finally:
        _FILE_KEY.reset(token)


def path_key(path: Any, rule: str, candidates: Sequence[str]) -> str | None:
    """The store key of a path's choice, made before anything is counted: the file's key (its content
    hash and the code's fingerprint, `cached_choices`), the rule whose own count is the chars/4
    candidate (`rule`: the policy's name, Pi's naming its reading version), the candidates with their
    tokenizers' versions, and a digest of the path's shape (leaf, sidechain, message count, each
    request's context ranges and recorded prompt: one path of the file apart from another). None
    outside `cached_choices`, with one candidate, or without a token store (nothing would be kept)."""
    file_key = _FILE_KEY.get()
    if file_key is None or len(candidates) < 2:
        return None
    from sessiontools.tokens.registry import store_name, truth_result_store

    if truth_result_store() is None:
        return None
    import hashlib

    h = hashlib.blake2b(repr((path.leaf_id, path.sidechain, len(path.messages))).encode(), digest_size=16)
    h.update(repr([(r.context, r.usage.prompt) for r in path.requests]).encode())
    return (f"counter-choice:{CHOICE_VERSION}:{file_key}:{rule}:{','.join(store_name(c) for c in candidates)}:"
            f"{h.hexdigest()}")


def kept_counts(key: str | None, n: int) -> tuple[list[int], float] | None:
    """The chosen tokenizer's count of each of a path's `n` messages (in path order) and the path's
    chars/4 total, as `keep_counts` kept them under `key`; None when none are kept or they do not fit
    (another length, a value not an int)."""
    from sessiontools.tokens.registry import truth_result_store

    store = truth_result_store() if key is not None else None
    raw = store.get_result(f"{key}:counts") if store is not None else None
    if raw is None:
        return None
    import orjson

    try:
        d = orjson.loads(raw)
        counts, total = d["counts"], d["chars4_total"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    if (type(counts) is not list or len(counts) != n or not all(type(c) is int and c >= 0 for c in counts)
            or type(total) not in (int, float)):
        return None
    return counts, float(total)


def keep_counts(key: str | None, counts: Sequence[int], chars4_total: float) -> None:
    """Keep the chosen tokenizer's per-message counts of a path beside its choice (`kept_counts`)."""
    from sessiontools.tokens.registry import truth_result_store

    store = truth_result_store() if key is not None else None
    if store is not None:
        import orjson

        store.put_result(f"{key}:counts", orjson.dumps({"counts": list(counts), "chars4_total": chars4_total}))


def _stored_choice(key: str | None, candidates: Sequence[str]) -> CounterChoice | None:
    """The choice stored under `key`, None when there is none (or it names another counter)."""
    from sessiontools.tokens.registry import truth_result_store

    store = truth_result_store() if key is not None else None
    raw = store.get_result(key) if store is not None else None
    if raw is None:
        return None
    import orjson

    try:
        d = orjson.loads(raw)
        got = CounterChoice(d["counter"], d["errors"], d["predictions"], d["note"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    return got if got.counter in candidates[:2] else None


def _keep_choice(key: str | None, choice: CounterChoice) -> CounterChoice:
    from sessiontools.tokens.registry import truth_result_store

    store = truth_result_store() if key is not None else None
    if store is not None:
        import orjson

        store.put_result(key, orjson.dumps({"counter": choice.counter, "errors": dict(choice.errors),
                                            "predictions": choice.predictions, "note": choice.note}))
    return choice


def _choose(candidates: Sequence[str], fit_input: Callable[[str], FitInput], prior: TruthPrior | None,
            key: str | None) -> tuple[str, FitInput, CounterChoice | None]:
    if len(candidates) == 1:
        return candidates[0], fit_input(candidates[0]), None
    hit = _stored_choice(key, candidates)  # (kept only for a path with enough requests to compare)
    if hit is not None:
        return hit.counter, fit_input(hit.counter), hit
    first = fit_input(candidates[0])
    c0, c1 = candidates[0], candidates[1]
    n = len(first.contexts)
    if n >= MIN_CHOICE_REQUESTS:
        counter, inp, choice = _compare(c0, c1, first, fit_input)
        return counter, inp, _keep_choice(key, choice)
    too_few = f"{n} request(s) with usable usage, too few to compare counters (under {MIN_CHOICE_REQUESTS})"
    if prior is not None and prior.counter == c1:
        return c1, fit_input(c1), CounterChoice(c1, {}, 0, f"{too_few}: {_unit(c1)}, the counter of the "
                                                           f"prior ({prior.source})")
    return c0, first, CounterChoice(c0, {}, 0, f"{too_few}: {_unit(c0)}")


def _compare(c0: str, c1: str, first: FitInput, fit_input: Callable[[str], FitInput],
             ) -> tuple[str, FitInput, CounterChoice]:
    """The comparison of the two counters over a path's requests (`in_session_errors`)."""
    second = fit_input(c1)
    e0, e1 = in_session_errors(first), in_session_errors(second)
    errors = {c0: sum(e0) / len(e0) if e0 else 0.0, c1: sum(e1) / len(e1) if e1 else 0.0}
    better, z = better_beyond_noise(e0, e1)
    both = f"{_unit(c1)} {errors[c1]:.2%} against {_unit(c0)} {errors[c0]:.2%} mean error over {len(e0)} predictions"
    if better:
        return c1, second, CounterChoice(c1, errors, len(e0), f"{_unit(c1)}: it predicts this session's later "
                                         f"requests from its earlier ones better ({both}, z {z:.1f})")
    return c0, first, CounterChoice(c0, errors, len(e0), f"{_unit(c0)}: {_unit(c1)} does not predict this "
                                    f"session's later requests better beyond noise ({both}, z {z:.1f} < {CHOICE_Z:g})")
