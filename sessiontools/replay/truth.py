"""The Pi adapter of the one truth model (`replay.truth_model`): a Pi workload's units are the
entries of its path, each counted by Pi's chars/4 (`estimateTokens`) of the messages it gives a
context (or by another `MessageCounter`), and the recorded contexts are those Pi's incremental
builder gives before each request with usable usage. The fit, the attribution, the summary rule and
the record (`TruthModel.to_dict`) are the one model's, the same as the transcript walk's
(`replay.neutral.fit_neutral_truth`, keyed by message): on a Pi session both give every message the
same truth (tests/replay/test_one_truth.py).

With attribution exact, the model gives back the recorded A for every context Pi really sent,
so "recorded while the simulated context equals the recorded one" holds by construction; the
`source` of each number still says which it was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sessiontools.read.pi.entries import Entry
from sessiontools.replay.counter_choice import choose_counter
from sessiontools.replay.priors import TruthPrior
from sessiontools.replay.truth_model import (
    CHARS4,
    DEFAULT_SUMMARY_TOKENS,
    MIN_REQUESTS,
    PRIOR_RATIO,
    RATIO_BOUNDS,
    FitInput,
    TruthFit,
    TruthModel,
    attribute,
    counter_notes,
    fit_model,
    fit_overhead_ratio,
)
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.pi.context import entry_messages_v0, entry_messages_v1
from sessiontools.transcript.pi.incremental import iter_request_projections
from sessiontools.transcript.pi.neutral import own_messages
from sessiontools.transcript.pi.workload import Workload

__all__ = ["DEFAULT_SUMMARY_TOKENS", "MIN_REQUESTS", "PRIOR_RATIO", "RATIO_BOUNDS", "TruthFit", "TruthModel",
           "attribute", "chars4_counter", "entry_messages", "fit_overhead_ratio", "fit_truth", "recorded_contexts"]

MessageCounter = Callable[[Mapping[str, Any]], int]


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


def pi_counted(workload: Workload, count: MessageCounter, direct: Callable[[Any, str], int] | None) -> dict[int, int]:
    """The counter's size of every entry of the path (by id): the sum over the messages it gives a
    context (a compaction: its summary, and in 1.x the system message it carries: the Pi adapter's
    `own_messages`, whose messages the transcript walk's fit counts). `direct`: Pi's estimate of a
    0.x message entry's one message, without the generic calls."""
    v = workload.pi_version
    counted: dict[int, int] = {}
    for e in workload.path:
        t = e.type
        if t == "compaction":
            counted[id(e)] = sum(count(m) for m in own_messages(e, v)) if isinstance(e.data.get("summary"), str) else 0
        elif direct is not None and t == "message" and e.message is not None:
            counted[id(e)] = direct(e.message, "0")
        else:
            counted[id(e)] = sum(count(m) for m in entry_messages(e, v))
    return counted


def pi_fit_input(workload: Workload, counted: Mapping[int, int]) -> FitInput:
    """The Pi adapter's input to the one fit: units are the path's entries (by id), contexts those
    Pi's incremental builder gives before each request with usable usage, summaries the recorded
    compaction entries."""
    path = workload.path
    pos = {id(e): i for i, e in enumerate(path)}
    wanted = {pos[id(workload.base[r.base_index])]: float(r.recorded_prompt) for r in workload.requests
              if r.recorded_prompt is not None}
    contexts = recorded_contexts(path, workload.pi_version, wanted, counted)
    summaries = [((id(e),), e.data.get("summary")) for e in path if e.type == "compaction"]
    return FitInput(counted, contexts, wanted, summaries, priced_summaries=True)


def fit_truth(
    workload: Workload, counter: MessageCounter | None = None, *, summary_tokens: int | None = None,
    prior: TruthPrior | None = None, model_tokenizer: bool = False, tokenizer: str | None = None,
) -> TruthModel:
    """The one truth model (`replay.truth_model.fit_model`) of a Pi workload, its units the path's
    entries (`prior`: a ratio learnt from the run's other sessions, used instead of PRIOR_RATIO when
    the requests are too few).

    `tokenizer` (`replay --truth-tokenizer`: `auto`, the default (None), `chars4`, `o200k` or `model`;
    `model_tokenizer=True` is `model`): with no `counter`, count each message with that tokenizer
    (`tokens.registry.truth_encoding_for`: `model` is the model's own where it beats o200k, else
    o200k, DeepSeek's too, docs/estimate-error.md) instead of Pi's chars/4, so a message the recording
    never priced (a diverged context) is `ratio` * its tokenizer count; `auto` chooses per session
    between chars/4 and `model` (`replay.counter_choice.choose_counter`). A `prior` learnt in other
    units is not applied (PRIOR_RATIO, said in `notes`)."""
    from sessiontools.tokens.registry import shared_message_counter, truth_candidates

    v = workload.pi_version
    direct = estimate_tokens if v == "0" else None  # 0.x message entries hold one message (`entry_messages_v0`)
    if counter is not None:  # a caller's counter: its units are the caller's business
        inp = pi_fit_input(workload, pi_counted(workload, counter, None))
        inp.chars4_total = float(sum(pi_counted(workload, chars4_counter(v), direct).values()))
        return fit_model(inp, summary_tokens=summary_tokens, prior=prior)
    chars4 = pi_counted(workload, chars4_counter(v), direct)

    def fit_input(name: str) -> FitInput:
        if name == CHARS4:
            return pi_fit_input(workload, chars4)
        inp = pi_fit_input(workload, pi_counted(workload, shared_message_counter(name, v), None))
        inp.chars4_total = float(sum(chars4.values()))  # a text known by its length only: `TruthModel.text_tokens`
        return inp

    names = [n or CHARS4 for n in truth_candidates("model" if model_tokenizer else tokenizer, workload.provider,
                                                   workload.model)]
    name, inp, choice = choose_counter(names, fit_input, prior)
    notes, prior = counter_notes(name, prior)
    model = fit_model(inp, summary_tokens=summary_tokens, prior=prior, notes=notes, counter=name, choice=choice)
    model.counter_is_chars4_of = v if name == CHARS4 else None
    return model
