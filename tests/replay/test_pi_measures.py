"""`policies.pi.measures`: each Pi message measured once per path, for the truth fit's counters and
the walk's sizer. What it measures must be what each of them measured on its own before: Pi's
`estimateTokens` characters (`chars4.message_chars`) and the text units a tokenizer counts
(`tokens.units.message_units`, and their bytes), under each rule version, on every Pi sample's every path."""

from __future__ import annotations

import pytest

from sessiontools.policies.pi.measures import path_measures
from sessiontools.policies.pi.policy import pi_policy
from sessiontools.read.sources import load_source
from sessiontools.tokens.chars4 import CountRules, estimate_tokens, message_chars
from sessiontools.tokens.units import message_units
from sessiontools.transcript.pi.neutral import pi_transcript
from tests.conftest import SAMPLES

PI_SAMPLES = sorted(SAMPLES.glob("pi*.jsonl"))


@pytest.mark.parametrize("version", ["0", "1"])
def test_each_message_measured_as_pi_counts_it(version: str) -> None:
    assert PI_SAMPLES
    seen = 0
    for f in PI_SAMPLES:
        for path in pi_transcript(load_source(f), all_leaves=True, pi_version=version).paths:
            m = path_measures(path, version)
            assert path_measures(path, version) is m  # measured once while the path lives
            for msg in path.messages:
                i = msg.index
                assert m.owns(msg)
                assert m.chars[i] == message_chars(msg.raw, version), (f.name, i)
                units = message_units(msg.raw, version)
                assert (m.texts[i], m.images[i]) == (units.texts, units.images), (f.name, i)
                assert m.bytes[i] == len("\n".join(units.texts).encode("utf-8", "surrogatepass")), (f.name, i)
                seen += 1
    assert seen > 1000


def test_the_path_counter_and_sizer_give_the_per_message_answers() -> None:
    policy = pi_policy("pi-1")
    path = pi_transcript(load_source(SAMPLES / "pi1-overflow.jsonl"), pi_version="1").paths[0]
    chars4 = policy.path_counter(path)
    size = policy.sizer(path)
    for msg in path.messages:
        assert chars4(msg) == policy.truth_count(msg) == estimate_tokens(msg.raw, "1")
        units = message_units(msg.raw, "1")
        assert size(msg) == (message_chars(msg.raw, "1"), len("\n".join(units.texts).encode("utf-8")))
    # A message of another path (a copy: not this path's own object) is counted on its own.
    other = pi_transcript(load_source(SAMPLES / "pi1-overflow.jsonl"), pi_version="1").paths[0]
    assert not path_measures(path, "1").owns(other.messages[0])
    assert chars4(other.messages[0]) == policy.truth_count(other.messages[0])


def test_a_replay_under_pis_rule_leaves_the_neutral_units_unbuilt_and_they_are_built_on_reading() -> None:
    import dataclasses
    import pickle

    from sessiontools.transcript.model import Message
    from sessiontools.transcript.pi.message_units import message_units as neutral_units

    path = pi_transcript(load_source(SAMPLES / "pi1-overflow.jsonl"), pi_version="1").paths[0]
    size = pi_policy("pi-1").sizer(path)
    for msg in path.messages:
        size(msg)
    slot = Message.units  # type: ignore[attr-defined]
    assert all(slot.__get__(msg, Message) is None for msg in path.messages)  # sized without them
    for msg in path.messages:
        assert msg.units == neutral_units(msg.raw) and slot.__get__(msg, Message) is msg.units  # kept
        copy = pickle.loads(pickle.dumps(msg))
        assert copy == msg and hash(copy) == hash(msg) and copy.units == msg.units
        assert dataclasses.replace(msg, line=0).units == msg.units


EDGE = [
    {"role": "user", "content": [{"type": "text", "text": "中😀\ud800"}, {"type": "image"}, {"type": "text", "text": ""}]},
    {"role": "user", "content": "plain 😀"},
    {"role": "toolResult", "content": [{"type": "image"}, {"type": "text", "text": "é\udfff"}, {"type": "image"}]},
    {"role": "toolResult", "content": [{"type": "image"}]},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "🙂"}, {"type": "text", "text": ""},
                                      {"type": "toolCall", "name": "read", "arguments": {"path": "ü😀", "1": [1.5]}}]},
    {"role": "bashExecution", "command": "ls", "output": "\u3000"},
    {"role": "system", "content": "s😀", "sections": {"a": "b", "c": ""}, "toolsAdded": [{"name": "ç"}]},
    {"role": "assistant", "content": []},
    {"role": "toolResult", "content": ["not a block", {"type": "text", "text": "x"}, None, [{"type": "text", "text": "y"}]]},
    {"role": "assistant", "content": [3, {"type": "text", "text": "z"}, "not a block"]},
    {"role": "user", "content": {"type": "text", "text": "a content that is no list"}},
]


@pytest.mark.parametrize("version", ["0", "1"])
def test_edge_messages_measured_as_pi_counts_them(version: str) -> None:
    """Non-ASCII, astral and lone-surrogate text, images, empty texts, a message that is no object
    (the samples hold few of these)."""
    from types import SimpleNamespace

    from sessiontools.policies.pi.measures import PathMeasures

    msgs = tuple(SimpleNamespace(raw=raw, index=i) for i, raw in enumerate([*EDGE, "not an object"]))
    m = PathMeasures(msgs, CountRules.of(version))
    for msg in msgs[:-1]:
        i, units = msg.index, message_units(msg.raw, version)
        assert m.chars[i] == message_chars(msg.raw, version), i
        assert (m.texts[i], m.images[i]) == (units.texts, units.images), i
        assert m.bytes[i] == len("\n".join(units.texts).encode("utf-8", "surrogatepass")), i
    assert (m.texts[-1], m.chars[-1], m.bytes[-1]) == (None, -1, -1) and not m.owns(msgs[-1])
    assert sum(m.images) >= 3
