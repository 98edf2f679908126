"""The vocabulary helper process (`tokens.remote`): its counts are the tokenizer's own, a counter
that uses it gives the counts it gives without, and a helper that dies is made up for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from sessiontools.tokens import remote
from sessiontools.tokens.tiktoken_counter import SHORT_TEXT, TiktokenCounter
from sessiontools.tokens.units import message_units
from sessiontools.tokens.vocab import get_encoding

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the helper is forked")

TEXTS = ["", "bash", "hello world", "树结构。当上下文超过阈值时，代理会总结较早的部分", "emoji 🙂 and 𠀀 astral",
         "lone \ud800 surrogate", "x" * (SHORT_TEXT + 1), "混合 mixed text 123 " * 3000, "bash", "  \n\t  "]


def _local(name: str, texts: list[str]) -> list[int]:
    enc = get_encoding(name)
    return [len(enc.encode(t, disallowed_special=())) if "\ud800" in t else len(enc.encode_ordinary(t)) for t in texts]


@pytest.fixture
def helper():  # type: ignore[no-untyped-def]
    h = remote.Helper("o200k_base").run()
    yield h
    h.stop()


def test_helper_counts_are_the_tokenizers(helper) -> None:  # type: ignore[no-untyped-def]
    fut = helper.submit(TEXTS)
    assert fut.result(timeout=120) == TiktokenCounter("o200k_base", get_encoding("o200k_base")).count_texts(TEXTS)
    assert fut.result() == _local("o200k_base", TEXTS)
    assert helper.submit([]).result(timeout=60) == []


def _units() -> list:  # type: ignore[type-arg]
    msgs = [{"role": "user", "content": t} for t in TEXTS if t] + [
        {"role": "assistant", "content": [{"type": "toolCall", "name": "bash", "arguments": {"cmd": "ls"}},
                                          {"type": "text", "text": TEXTS[3]}]},
        {"role": "toolResult", "content": [{"type": "text", "text": TEXTS[7]}, {"type": "image"}]}]
    return [message_units(m) for m in msgs]


def test_counter_with_a_helper_counts_as_without(monkeypatch, helper) -> None:  # type: ignore[no-untyped-def]
    units = _units()
    plain = TiktokenCounter("o200k_base", get_encoding("o200k_base"))
    monkeypatch.setitem(remote._HELPERS, "o200k_base", helper)
    counter = TiktokenCounter("o200k_base")
    assert counter._helper() is helper
    first = counter.submit_units(units[:4])
    assert counter.count_units(units) == plain.count_units(units)
    first()
    assert counter._encoding is None and counter._count is None  # the vocabulary was never loaded here
    assert counter.texts_encoded == plain.texts_encoded


def test_a_helper_that_died_is_made_up_for(monkeypatch, helper) -> None:  # type: ignore[no-untyped-def]
    units = _units()
    monkeypatch.setitem(remote._HELPERS, "o200k_base", helper)
    counter = TiktokenCounter("o200k_base")
    os.kill(helper.pid, signal.SIGKILL)
    os.waitpid(helper.pid, 0)
    helper._threads[0].join(30)  # the reader sees the pipe close and fails what is pending
    assert helper.gone and remote.get("o200k_base") is None
    fut = helper.submit(["late"])
    with pytest.raises(remote.HelperGone):
        fut.result(timeout=10)
    plain = TiktokenCounter("o200k_base", get_encoding("o200k_base"))
    assert counter.count_units(units) == plain.count_units(units)


def test_a_forked_child_does_not_use_its_parents_helper(monkeypatch, helper) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(remote._HELPERS, "o200k_base", helper)
    assert remote.get("o200k_base") is helper
    monkeypatch.setattr(helper, "owner", helper.owner + 1)
    assert remote.get("o200k_base") is None
    assert TiktokenCounter("o200k_base")._helper() is None


def test_start_forks_only_a_single_thread_process() -> None:
    """In a fresh process (one thread) both helpers start, count and stop; with a thread running
    none is forked."""
    code = """
import threading, sys
from sessiontools.tokens import remote
assert remote.start("o200k_base", "cl100k_base")
assert remote.start("o200k_base")  # running already
a = remote.get("o200k_base").submit(["树结构 tokens", "x"]).result(120)
b = remote.get("cl100k_base").submit(["树结构 tokens", "x"]).result(120)
rss = remote.stop_all()
assert set(rss) == {"o200k_base", "cl100k_base"} and all(v > 0 for v in rss.values()), rss
assert remote.get("o200k_base") is None
ev = threading.Event(); t = threading.Thread(target=ev.wait); t.start()
assert not remote.start("o200k_base")
ev.set(); t.join()
print(a, b)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    from sessiontools.tokens.vocab import get_encoding as enc
    assert out.stdout.split("\n")[0] == f"{_local('o200k_base', ['树结构 tokens', 'x'])} " \
        f"{[len(enc('cl100k_base').encode_ordinary(t)) for t in ['树结构 tokens', 'x']]}"
