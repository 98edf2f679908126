"""The transcript adapter of the one truth model (`replay.truth_model`): what a simulated context of
any agent's `TranscriptPath` costs.

The units are the path's messages (by index), each counted by the path's one message counter
(`counter`: the file's own agent's size of a message, `Policy.truth_count`, Pi's being its
`estimateTokens` of the message; chars/4 of the message's text by default), the recorded contexts
are the path's requests, the recorded summaries its compactions' summary messages. The fit, the
attribution, the summary rule and the record are the one model's (the only fit: Pi's entry-keyed
adapter went in session 11). `NeutralTruth` is that model (`TruthModel`); the walk that uses it is
`replay.walk`.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain, starmap
from operator import attrgetter

from sessiontools.policies.base import Policy, text_counter
from sessiontools.replay.counter_choice import choose_counter, keep_counts, kept_counts, path_key
from sessiontools.replay.priors import TruthPrior
from sessiontools.replay.truth_model import (
    CHARS4,
    DEFAULT_SUMMARY_TOKENS,
    FitInput,
    TruthModel,
    attribute,
    counter_notes,
    fit_model,
)
from sessiontools.transcript.model import Message, Role, TranscriptPath

__all__ = ["DEFAULT_SUMMARY_TOKENS", "TURN_START_ROLES", "NeutralTruth", "attribute_messages", "fit_neutral_truth",
           "text_chars4"]

TURN_START_ROLES = (Role.USER, Role.ASSISTANT, Role.SUMMARY, Role.OTHER)

#: The one truth model, as the transcript walk names it.
NeutralTruth = TruthModel
MessageCount = Callable[[Message], int]
_index = attrgetter("index")


#: The default message counter: chars/4 of the message's text.
text_chars4 = text_counter(None)


def path_fit_input(path: TranscriptPath, count: MessageCount = text_chars4, priced: bool = False,
                   shape: PathContexts | None = None) -> FitInput:
    """The transcript adapter's input to the one fit (see the module docstring). `shape`: the path's
    `path_contexts`, when the caller fits it with several counters (they share the context lists)."""
    known = getattr(count, "path_counts", None)  # (the path's messages, each one's count by index)
    if known is not None and known[0] is path.messages:
        counted = dict(enumerate(known[1]))
    else:
        counted = {m.index: count(m) for m in path.messages}
    ctxs, wanted = shape if shape is not None else path_contexts(path)
    # Integer counts (every counter's): a context's total by prefix sums over its ranges, the same int.
    prefix: list[int] | None = None
    if all(type(c) is int for c in counted.values()):
        prefix = [0]
        for i in range(max(counted, default=-1) + 1):
            prefix.append(prefix[-1] + counted.get(i, 0))
    contexts = []
    top = len(prefix) - 1 if prefix is not None else 0
    for (k, ctx, n), r in zip(ctxs, path.requests, strict=True):
        if prefix is not None:
            total = sum(prefix[min(max(b, 0), top)] - prefix[min(max(a, 0), top)] for a, b in r.context if b > a)
        else:
            total = sum(counted.get(i, 0) for i in ctx[:n])
        contexts.append((k, ctx, n, float(total)))  # ctx[:n]: this request's context
    return FitInput(counted, contexts, dict(wanted), _summaries(path), key=_itself, priced_summaries=priced)


#: A path's request contexts, (request, message list, its length: ctx[:n] is the context), and each
#: request's recorded prompt: what `path_fit_input` builds whatever the counter.
PathContexts = tuple[list[tuple[int, list[int], int]], dict[int, float]]


def path_contexts(path: TranscriptPath) -> PathContexts:
    """The counter-independent part of `path_fit_input` (see `PathContexts`)."""
    contexts = []
    wanted = {}
    ctx: list[int] = []
    prev: tuple[tuple[int, int], ...] = ()
    for k, r in enumerate(path.requests):
        ranges = r.context
        m = len(prev)
        if m and len(ranges) >= m and ranges[:m - 1] == prev[:m - 1] and ranges[m - 1][0] == prev[m - 1][0] \
                and ranges[m - 1][1] >= prev[m - 1][1]:
            # It extends the previous context: one growing list (`attribute` reads ctx[:n], its prefix test
            # is then identity), its new messages appended.
            a, b = ranges[m - 1]
            ctx.extend(range(max(a, prev[m - 1][1]), b))
            ctx.extend(chain.from_iterable(starmap(range, ranges[m:])))
        else:
            ctx = list(chain.from_iterable(starmap(range, ranges)))
        prev = ranges
        contexts.append((k, ctx, len(ctx)))
        wanted[k] = float(r.usage.prompt)
    return contexts, wanted


def _summaries(path: TranscriptPath) -> list[tuple[tuple[int, ...], str | None]]:
    """Each recorded compaction's own messages (its summary message, and the messages it wrote under
    its id: Pi 1.x's system message, as the Pi adapter's entry holds them) and its summary text."""
    ids = {c.id for c in path.compactions if c.id is not None}
    by_id: dict[str, list[int]] = {}
    for m in path.messages:
        if m.id in ids:
            by_id.setdefault(m.id, []).append(m.index)
    n = len(path.messages)
    return [(tuple(sorted({c.index, *by_id.get(c.id, ())})) if c.id is not None else (c.index,), c.summary)
            for c in path.compactions if 0 <= c.index < n]


def attribute_messages(path: TranscriptPath, overhead: float = 0.0, count: MessageCount = text_chars4) -> dict[int, float]:
    """Each message's tokens as the recorded usage tells them, by message index: the one attribution
    of every agent (`replay.truth_model.attribute`)."""
    inp = path_fit_input(path, count)
    return attribute(inp.contexts, inp.wanted, inp.counted, overhead, key=_itself)


def _itself(x: int) -> int:
    return x


def fit_neutral_truth(path: TranscriptPath, summary_tokens: float | None = None, prior: TruthPrior | None = None,
                      own: Policy | None = None, *, counter: MessageCount | None = None,
                      counter_name: str = CHARS4, tokenizer: str | None = None) -> TruthModel:
    """The one truth model of `path` (`replay.truth_model.fit_model`), its units the messages.

    `own`: the policy of the rule the file's own agent followed (`policies.registry.own_policy`): its
    `truth_counter` counts each message (Pi: `estimateTokens` of the message) and its
    `recorded_summary_priced` says how a new summary's size is learnt; None: chars/4 of the text,
    from the model's count. `tokenizer` (`replay --truth-tokenizer`):
    count with that tokenizer for the path's newest model instead. `counter` (named `counter_name`)
    counts instead of either. A `prior` learnt in other units is not applied."""
    from sessiontools.tokens.registry import truth_candidates

    priced = own is not None and own.recorded_summary_priced
    choice = None
    # chars/4 as the file's own agent counts a message (Pi: estimateTokens, as Pi's exact walk's fit):
    # the chars/4 candidate's counts and `chars4_total` below, each message counted once (by id: the
    # path keeps every message alive while this fit runs; the memo is not kept in the model).
    chars4_of = own.path_counter(path) if own is not None else text_chars4
    chars4_counts: dict[int, int] = {}

    def chars4_memo(m: Message) -> int:
        got = chars4_counts.get(id(m))
        if got is None:
            got = chars4_counts[id(m)] = chars4_of(m)
        return got

    chars4_total: float | None = None  # (a run of these bytes kept it: `kept_counts`)
    key: str | None = None
    if counter is None:
        req = next((r for r in reversed(path.requests) if r.model), None)
        names = [n or CHARS4 for n in truth_candidates(tokenizer, req.provider if req else None,
                                                       req.model if req else None)]
        # Where the path's choice and its tokenizer's counts are kept (a warm run of the same bytes),
        # keyed before anything is counted; None: nothing is kept.
        key = path_key(path, own.name if own is not None else CHARS4, names)
        counters: dict[str, MessageCount] = {}
        shape = path_contexts(path)  # the candidates' fit inputs share the contexts

        def fit_input(name: str) -> FitInput:
            nonlocal chars4_total
            tok = None if name == CHARS4 else name
            if tok is None:
                c = counters[name] = chars4_of
                # (a counter that measured the path already: its counts; else each message once, by id)
                return path_fit_input(path, chars4_of if hasattr(chars4_of, "path_counts") else chars4_memo,
                                      priced, shape)
            got = kept_counts(key, len(path.messages))
            if got is not None:  # the counts a run of these bytes kept: no tokenizer is loaded or asked
                c = counters[name] = _tokenizer_counter(path, got[0], own, tok)
                chars4_total = got[1]
            else:
                c = counters[name] = own.path_counter(path, tok) if own is not None else text_counter(tok)
            return path_fit_input(path, c, priced, shape)

        counter_name, inp, choice = choose_counter(names, fit_input, prior, key)
        counter = counters[counter_name]
    else:
        inp = path_fit_input(path, counter, priced)
    notes, prior = counter_notes(counter_name, prior)
    if counter_name != CHARS4:  # a text known by its length only is scaled from chars/4 (`TruthModel.text_tokens`)
        if chars4_total is not None:
            inp.chars4_total = chars4_total
        else:
            inp.chars4_total = float(sum(map(chars4_memo, path.messages)))
            if key is not None and choice is not None and choice.predictions:  # kept for a warm run
                keep_counts(key, [int(inp.counted[m.index]) for m in path.messages], inp.chars4_total)
    m = fit_model(inp, summary_tokens=summary_tokens, prior=prior, counter=counter_name, count=counter,
                  unit_key=_index, notes=notes, choice=choice)
    m.anchored = own is None or not own.records_context_edits
    return m


def _tokenizer_counter(path: TranscriptPath, counts: list[int], own: Policy | None, tokenizer: str) -> MessageCount:
    """A tokenizer's counter of `path` from counts kept by a run of the same bytes
    (`counter_choice.kept_counts`, one per message in path order): each of the path's messages its
    kept count (`path_counts`, as a counter that measured the path gives them), any other message
    counted by the tokenizer, loaded only if one is asked."""
    messages = path.messages
    n = len(counts)
    other: list[MessageCount] = []

    def count(m: Message) -> int:
        i = m.index
        if 0 <= i < n and messages[i] is m:
            return counts[i]
        if not other:
            other.append(own.truth_counter(tokenizer) if own is not None else text_counter(tokenizer))
        return other[0](m)

    count.path_counts = (messages, counts)  # type: ignore[attr-defined]
    return count
