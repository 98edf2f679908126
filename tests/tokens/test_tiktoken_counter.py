"""tiktoken counts over the text units Pi's chars/4 counts: same units, images, cache, batching."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontools.read import load_session
from sessiontools.testing import SessionBuilder, image_block, text_block
from sessiontools.tokens.chars4 import IMAGE_CHARS, message_chars
from sessiontools.tokens.tiktoken_counter import TiktokenCounter
from sessiontools.tokens.units import IMAGE_TOKENS, MessageUnits, iter_units, message_units, units_key
from sessiontools.tokens.vocab import get_encoding
from tests.conftest import shared_sessions


def all_role_messages() -> list[dict[str, Any]]:
    """One message of every role Pi counts, with images, thinking, tool calls and odd values."""
    return [
        {"role": "user", "content": "plain string 日本語 😀"},
        {"role": "user", "content": [text_block("see"), image_block(), text_block(""), {"type": "text", "text": 5}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm"},
            text_block("answer"),
            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls -la", "n": 1.5, "2": [True, None]}},
            {"type": "toolCall", "id": "c2", "name": "read", "arguments": None},
        ]},
        {"role": "toolResult", "toolCallId": "c1", "toolName": "bash", "content": [text_block("out\n"), image_block()]},
        {"role": "bashExecution", "command": "make", "output": "ok 中文"},
        {"role": "custom", "customType": "note", "content": "custom text"},
        {"role": "custom", "customType": "note", "content": [text_block("a"), image_block()]},
        {"role": "compactionSummary", "summary": "## Goal\nfix it", "tokensBefore": 10},
        {"role": "branchSummary", "summary": "went elsewhere", "fromId": "x"},
        {"role": "system", "content": "be brief", "sections": {"a": "section A", "b": None, "c": ""},
         "toolsAdded": [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}]},
        {"role": "unknown", "content": "not counted"},
    ]


def units_chars(units: MessageUnits) -> int:
    """`chars4.message_chars` recomputed from the units: their UTF-16 length plus 4800 per image."""
    return sum(len(t.encode("utf-16-le", "surrogatepass")) // 2 for t in units.texts) + IMAGE_CHARS * units.images


@pytest.mark.parametrize("version", ["0", "1"])
def test_units_match_pi_chars_for_every_role(version: str) -> None:
    """Units' UTF-16 length plus 4800 per image equals chars4.message_chars for every role."""
    for m in all_role_messages():
        assert units_chars(message_units(m, version)) == message_chars(m, version), m["role"]


def test_images_in_user_messages_only_count_in_1x() -> None:
    """0.x does not count user images; 1.x does; tool results count them in both."""
    user = {"role": "user", "content": [text_block("x"), image_block()]}
    assert message_units(user, "0").images == 0
    assert message_units(user, "1").images == 1
    tool = {"role": "toolResult", "content": [image_block(), image_block()]}
    assert message_units(tool, "0").images == 2
    assert None in list(iter_units(tool, "0"))


def test_system_messages_are_not_counted_in_0x() -> None:
    """A 1.x system message contributes nothing under 0.x rules."""
    system = all_role_messages()[-2]
    assert message_units(system, "0").texts == ()
    assert len(message_units(system, "1").texts) == 3


def test_units_match_pi_chars_on_shared_sessions() -> None:
    """Every message of the real sessions: units give exactly Pi's character count."""
    files = shared_sessions()
    if not files:
        pytest.skip("../shared/sessions/pi is absent")
    n = 0
    for f in files:
        s = load_session(f)
        for e in s.entries:
            if e.message is not None:
                assert units_chars(message_units(e.message, "0")) == message_chars(e.message, "0")
                n += 1
    assert n > 1000


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=20), max_size=4), st.lists(st.text(max_size=20), max_size=4), st.integers(0, 3))
def test_units_key_separates_boundaries(a: list[str], b: list[str], images: int) -> None:
    """Keys are equal exactly when the non-empty units and image counts are equal."""
    a2, b2 = [x for x in a if x], [x for x in b if x]
    assert (units_key(a2, images) == units_key(b2, images)) == (a2 == b2)
    assert units_key(["ab", "c"], 0) != units_key(["a", "bc"], 0)
    assert units_key(["a"], 0) != units_key(["a"], 1)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_counts_equal_direct_encoding(name: str) -> None:
    """A message's count is the sum of tiktoken counts of its units plus 1200 per image."""
    enc = get_encoding(name)
    counter = TiktokenCounter(name)
    for m in all_role_messages():
        u = message_units(m, "1")
        expected = sum(len(enc.encode_ordinary(t)) for t in u.texts) + IMAGE_TOKENS * u.images
        assert counter.count_message(m, "1") == expected


def test_lone_surrogates_are_counted_not_raised() -> None:
    """Text with a lone surrogate (possible in JSON) is counted as tiktoken's encode does."""
    counter = TiktokenCounter("o200k_base")
    assert counter.count_message({"role": "user", "content": "a\ud800b"}, "0") >= 2


class RecordingEncoding:
    """A stand-in encoding: one token per 3 characters; records calls."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.singles: list[str] = []

    def encode_ordinary(self, text: str) -> list[int]:
        self.singles.append(text)
        return [0] * -(-len(text) // 3)

    def encode_ordinary_batch(self, texts: list[str], *, num_threads: int = 8) -> list[list[int]]:
        self.batches.append(list(texts))
        return [[0] * -(-len(t) // 3) for t in texts]


def test_cache_by_content_and_each_text_encoded_once() -> None:
    """Each missing text is encoded exactly once; equal content in other objects comes from the cache."""
    enc = RecordingEncoding()
    counter = TiktokenCounter("o200k_base", enc)
    msgs = [{"role": "user", "content": f"message number {i}"} for i in range(10)]
    first = counter.count_messages(msgs, "0")
    assert sorted(enc.singles) == sorted(m["content"] for m in msgs)
    again = counter.count_messages([dict(m) for m in msgs], "0")
    assert again == first
    assert len(enc.singles) == 10
    assert len(counter) == 10


def test_long_batches_are_split_over_threads() -> None:
    """Large batches go to the thread pool in chunks and come back in order."""
    enc = RecordingEncoding()
    counter = TiktokenCounter("o200k_base", enc, num_threads=2)
    texts = [("x" * (3 * k + 1)) for k in range(400)]
    assert counter.count_texts(texts) == [k + 1 for k in range(400)]
    assert sorted(enc.singles) == sorted(texts)


def test_image_only_message_needs_no_encoding() -> None:
    """An image-only message costs IMAGE_TOKENS and no tokenizer call."""
    enc = RecordingEncoding()
    counter = TiktokenCounter("cl100k_base", enc)
    assert counter.count_message({"role": "toolResult", "content": [image_block()]}) == IMAGE_TOKENS
    assert not enc.batches and not enc.singles


def test_unknown_encoding_is_rejected() -> None:
    """Only cl100k_base and o200k_base are known."""
    with pytest.raises(ValueError, match="unknown encoding"):
        TiktokenCounter("p50k_base", RecordingEncoding())


def test_builder_session_counts_are_positive() -> None:
    """Counting a small built session gives a positive count per message with text."""
    b = SessionBuilder()
    b.user("hello there")
    b.assistant("hi", tool_calls=[("read", {"path": "a.py"})], usage=b.usage(100))
    b.tool_result("read", "print('x')")
    s = b.session()
    counter = TiktokenCounter("cl100k_base")
    counts = counter.count_messages([e.message for e in s.entries if e.message is not None], "0")
    assert all(c > 0 for c in counts)


def test_submitted_units_are_counted_in_the_background_once() -> None:
    """`submit_units` starts counting and returns at once; a key still being counted is not counted
    again by a later call, which waits for it; the counts equal the synchronous ones."""
    import threading

    gate = threading.Event()

    class Gated(RecordingEncoding):
        def encode_ordinary(self, text: str) -> list[int]:
            if len(text) > 1000:  # the long texts go to the threads
                assert gate.wait(10)
            return super().encode_ordinary(text)

    enc = Gated()
    counter = TiktokenCounter("o200k_base", enc, num_threads=2)
    units = [message_units({"role": "user", "content": f"{k} " + "y" * 30_000}) for k in range(4)]
    first = counter.submit_units(units)  # returns while the encoding is blocked
    second = counter.submit_units([*units[:2], message_units({"role": "user", "content": "short"})])
    assert counter.texts_encoded == 5 and len(counter) == 0  # nothing counted yet
    gate.set()
    second()
    first()
    assert sorted(enc.singles) == sorted([*(u.texts[0] for u in units), "short"])
    assert counter.count_units(units) == [-(-len(u.texts[0]) // 3) for u in units]
    assert counter.texts_encoded == 5


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_token_counter_equals_encode_ordinary(name: str) -> None:
    """The count without a list of token ids equals len(encode_ordinary): special-token text,
    lone surrogates (repaired as encode_ordinary repairs them), CJK, emoji, long text."""
    from sessiontools.tokens.tiktoken_counter import token_counter

    enc = get_encoding(name)
    count = token_counter(enc)
    texts = ["", "hello world", "<|endoftext|> a <|fim_prefix|><|endofprompt|>", "a\ud800b", "\udfff",
             "日本語のテキスト 😀 1234567", "  \n\t x  ", "word " * 20_000, '{"a": [1, 2.5, "x"]}']
    assert [count(t) for t in texts] == [len(enc.encode_ordinary(t)) for t in texts]


def test_units_key_is_the_hash_of_the_joined_units() -> None:
    """The key the token cache on disk was written with: blake2b-128 of the image count and each
    text's length and UTF-8 bytes, joined (computed piece by piece now)."""
    import hashlib

    texts = ["plain", "中文 text", "", "lone \udcff surrogate", "x" * 100_000]
    joined = (3).to_bytes(4, "little") + b"".join(
        len(b).to_bytes(8, "little") + b for b in (t.encode("utf-8", "surrogatepass") for t in texts))
    assert units_key(texts, 3) == hashlib.blake2b(joined, digest_size=16).digest()
    assert units_key([], 0).hex() == hashlib.blake2b(bytes(4), digest_size=16).hexdigest()


def test_count_rules_are_the_rule_versions_counts() -> None:
    """`CountRules` (agent-free: user images, system messages) gives the same counts as the rule
    version it stands for, and `CountRules.of` maps "0" to text only and any later version to all."""
    from sessiontools.tokens.chars4 import ALL, TEXT_ONLY, CountRules, message_chars

    assert CountRules.of("0") is TEXT_ONLY and CountRules.of("1") is ALL and CountRules.of(None) is ALL
    assert CountRules.of(TEXT_ONLY) is TEXT_ONLY and TEXT_ONLY == CountRules(images=False, system=False)
    user = {"role": "user", "content": [{"type": "text", "text": "hi"}, image_block()]}
    system = {"role": "system", "content": "be brief", "sections": {"a": "xyz"}}
    for m in (user, system):
        for version, rules in (("0", TEXT_ONLY), ("1", ALL)):
            assert message_chars(m, rules) == message_chars(m, version)
            assert message_units(m, rules) == message_units(m, version)
    assert message_chars(user, CountRules(images=False, system=True)) == 2
    assert message_chars(system, CountRules(images=False, system=True)) == 11
    assert message_chars(system, CountRules(images=True, system=False)) == 0
