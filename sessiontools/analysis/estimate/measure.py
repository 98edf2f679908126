"""Measuring each message once: characters as the agent counts them, content mix, tokenizer counts.

A message is measured from the text units an estimator sees. For Pi the units are Pi's own
(`tokens.units.message_units` over `Message.raw`: exactly what `estimateTokens`
counts); for every other agent they are `Message.units`. Measures are cached by content across
sessions, and each distinct text is tokenized once per encoding, in batches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessiontools.tokens.chars4 import IMAGE_CHARS
from sessiontools.tokens.features import assistant_code_flags, text_classes
from sessiontools.tokens.tiktoken_counter import TiktokenCounter
from sessiontools.tokens.units import MessageUnits, message_units, units_key
from sessiontools.transcript.model import Message, Role, UnitKind

#: Characters by Pi role, as CSV/Parquet columns (both summary roles share one column).
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
#: Pi roles whose text counts as tool output for the tool-result share.
TOOL_ROLES = ("toolResult", "bashExecution")
#: The role column of a neutral role (agents other than Pi).
NEUTRAL_ROLE_COLUMNS = {
    Role.USER: "chars_user",
    Role.ASSISTANT: "chars_assistant",
    Role.TOOL: "chars_tool_result",
    Role.SUMMARY: "chars_summary",
    Role.SYSTEM: "chars_system",
}
#: Feature columns (characters by class) the calibrated model uses; see `tokens.hybrid`.
FEATURE_COLUMNS = ("f_cjk", "f_digits", "f_prose", "f_code", "f_space")


@dataclass(slots=True)
class MessageMeasure:
    """Counts of one message: chars and chars/4 as the agent counts them, mix, tokens per encoding."""

    role_column: str | None
    tool: bool
    chars: int
    chars4: int
    text_chars: int  # code points of the text units
    cjk_chars: int
    images: int
    units: MessageUnits
    features: tuple[int, ...]  # FEATURE_COLUMNS
    tokens: dict[str, int] = field(default_factory=dict)


_CODE_KINDS = (UnitKind.TOOL_CALL, UnitKind.TOOL_RESULT)


def _measure(units: MessageUnits, kinds: tuple[bool, ...], role_column: str | None, tool: bool) -> MessageMeasure:
    """`kinds[i]`: whether text unit i is code/JSON/tool output (else prose). The content mix is
    `tokens.features.text_classes` (the one home of the feature rules, behind `text_features`)."""
    utf16, cjk, prose, code, digits, space = text_classes(zip(units.texts, kinds, strict=True))
    chars = utf16 + IMAGE_CHARS * units.images
    return MessageMeasure(role_column, tool, chars, -(-chars // 4), cjk + prose + code + digits + space, cjk,
                          units.images, units, (cjk, digits, prose, code, space))


def native_measure(raw: Mapping[str, Any], rule_version: str, units: MessageUnits | None = None) -> MessageMeasure:
    """An agent's own message dict measured over the units its own count takes (a Pi message: chars =
    Pi's `estimateTokens` characters)."""
    units = units if units is not None else message_units(raw, rule_version)
    role = str(raw.get("role"))
    code = role in TOOL_ROLES
    kinds = tuple(code for _ in units.texts)
    if role == "assistant":  # tool name and JSON arguments are code; text and thinking are prose
        kinds = tuple(assistant_code_flags(raw, len(units.texts)))
    return _measure(units, kinds, ROLE_COLUMNS.get(role), code)


def neutral_measure(message: Message) -> MessageMeasure:
    """A message of any agent measured over its `units`."""
    texts = tuple(u.text for u in message.units if u.kind != UnitKind.IMAGE and u.text)
    kinds = tuple(u.kind in _CODE_KINDS for u in message.units if u.kind != UnitKind.IMAGE and u.text)
    images = sum(1 for u in message.units if u.kind == UnitKind.IMAGE)
    units = MessageUnits(texts, images, units_key(texts, images))
    return _measure(units, kinds, NEUTRAL_ROLE_COLUMNS.get(message.role), message.role == Role.TOOL)


class MessageMeasurer:
    """Measures messages once (by content, across sessions) and fills their token counts in batches."""

    def __init__(self, tokenizers: Mapping[str, TiktokenCounter], *, model: bool = False,
                 store: Any | None = None) -> None:
        self.tokenizers = dict(tokenizers)
        #: the tokenizers every message is counted with (`tokenizers` also gets the model tokenizers)
        self.base = tuple(self.tokenizers)
        #: count each request's context with its model's own tokenizer too (`tokens.registry`)
        self.model = model
        self.store = store
        self._by_content: dict[tuple[bytes, str, str], MessageMeasure] = {}
        self.messages_measured = 0

    def counter(self, name: str) -> TiktokenCounter:
        """The counter of a tokenizer (one given, or a model tokenizer created on first use)."""
        c = self.tokenizers.get(name)
        if c is None:
            c = self.tokenizers[name] = TiktokenCounter(name, store=self.store)
        return c

    def native(self, raw: Mapping[str, Any], rule_version: str) -> MessageMeasure:
        """Measure of an agent's own message dict (`Source.native_messages`: Pi's)."""
        units = message_units(raw, rule_version)
        key = (units.key, str(raw.get("role")), rule_version)
        m = self._by_content.get(key)
        if m is None:
            self.messages_measured += 1
            m = self._by_content[key] = native_measure(raw, rule_version, units)
        return m

    def neutral(self, message: Message) -> MessageMeasure:
        """Measure of a neutral message (agents other than Pi)."""
        m = neutral_measure(message)
        key = (m.units.key + bytes(k in _CODE_KINDS for k in (u.kind for u in message.units)),
               str(message.role), "")
        hit = self._by_content.get(key)
        if hit is not None:
            return hit
        self.messages_measured += 1
        self._by_content[key] = m
        return m

    def count_tokens(self, measures: Iterable[MessageMeasure], names: Sequence[str] | None = None) -> None:
        """Fill `tokens` of each measure for every tokenizer (or those `names`), one batch per tokenizer."""
        self.submit_tokens(measures, names)()

    def submit_tokens(self, measures: Iterable[MessageMeasure], names: Sequence[str] | None = None) -> TokensWait:
        """Start counting the tokens of the measures with `names` (default: the tokenizers given at
        creation) in the background (see `TiktokenCounter.submit_units`); calling the result waits
        and fills their `tokens`."""
        names = list(self.base) if names is None else list(names)
        todo = [m for m in measures if any(n not in m.tokens for n in names)]
        started = []
        for name in names:
            counter = self.counter(name)
            need = [m for m in todo if name not in m.tokens]
            started.append((name, counter, need, counter.submit_units([m.units for m in need])))
        return TokensWait(started)


class TokensWait:
    """Token counts being made for some measures: `ready()` (would not block), call to wait and fill."""

    def __init__(self, started: list[tuple[str, TiktokenCounter, list[MessageMeasure], Any]]) -> None:
        self.started = started

    @classmethod
    def of(cls, waits: Iterable[TokensWait]) -> TokensWait:
        return cls([s for w in waits for s in w.started])

    def ready(self) -> bool:
        return all(done.ready() for _, _, _, done in self.started)

    def __call__(self) -> None:
        for name, counter, need, done in self.started:
            done()
            for m, n in zip(need, counter.count_units([m.units for m in need]), strict=True):
                m.tokens[name] = n
