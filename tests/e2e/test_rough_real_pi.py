"""End to end, rough lab: the real Pi releases driven through their SDK (lab/sdk_run.mjs) write
harness pseudo-replies, and Pi 0.73.1 recovers from two overflows in one run.

These tests need the pinned Pi releases (`make pi-env`). When they cannot be installed the tests
FAIL, saying why; set SESSIONTOOLS_SKIP_PI=1 to skip them explicitly instead.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lab.driver import Pseudo, Recording, record
from lab.manifest import analyze, is_pseudo_reply
from lab.pi_env import PiUnavailable, ensure_pi


def _need_pi(major: str) -> None:
    try:
        ensure_pi(major)
    except PiUnavailable as exc:
        if os.environ.get("SESSIONTOOLS_SKIP_PI") == "1":
            pytest.skip(f"SESSIONTOOLS_SKIP_PI=1: {exc}")
        pytest.fail(f"Pi {major}.x is needed for this end-to-end test and cannot be installed: {exc}")


def _lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


@pytest.mark.e2e
@pytest.mark.parametrize("major", ["0", "1"])
def test_sdk_writes_pseudo_replies_between_real_requests(major: str, tmp_path: Path) -> None:
    _need_pi(major)
    rec = Recording(f"e2e-few-pi{major}", major, seed=94, prompts=2, profile="chat", window=128000, reserve=16384,
                    keep=20000, tokenizer="rough", overhead=(300, 1500), sdk=True,
                    pseudo=(Pseudo(0, "delivery-mirror", "{final}"), Pseudo(1, "gateway-injected", "Gateway notice.")))
    out = tmp_path / "s.jsonl"
    result = record(rec, out, workroot=tmp_path / "work", timeout=120)
    lines = _lines(out)
    msgs = [e["message"] for e in lines if e["type"] == "message"]
    assistants = [m for m in msgs if m["role"] == "assistant"]
    pseudo = [m for m in assistants if is_pseudo_reply(m)]
    real = [m for m in assistants if not is_pseudo_reply(m)]
    assert [m["model"] for m in pseudo] == ["delivery-mirror", "gateway-injected"]
    assert all(m["provider"] == "openclaw" and m["stopReason"] == "stop" for m in pseudo)
    assert len(real) == 2 and all(m["usage"]["input"] + m["usage"]["cacheRead"] > 0 for m in real)
    # the mirror repeats the first answer, and the server saw exactly two agent requests
    assert pseudo[0]["content"][0]["text"] == real[0]["content"][0]["text"]
    assert [r.kind for r in result.requests] == ["agent", "agent"]
    # the second request carried the pseudo-reply in its context: hidden overhead plus more messages
    assert result.requests[1].messages > result.requests[0].messages
    assert all(300 <= r.hidden <= 1500 for r in result.requests)
    # the order in the file: user, answer, mirror, user, answer, gateway notice
    assert [(m["role"], is_pseudo_reply(m)) for m in msgs if m["role"] != "system"] == [
        ("user", False), ("assistant", False), ("assistant", True),
        ("user", False), ("assistant", False), ("assistant", True)]


@pytest.mark.e2e
def test_pi0_recovers_twice_in_one_run(tmp_path: Path) -> None:
    """0.73.1 clears its overflow-recovery flag after a successful reply, so a second overflow in the
    same run is recovered too (issue 12, cause 2)."""
    _need_pi("0")
    rec = Recording("e2e-two-overflows", "0", seed=71, prompts=1, profile="marathon", window=24000, reserve=3000,
                    keep=4000, tokenizer="rough", overhead=(300, 1500), sdk=True)
    out = tmp_path / "s.jsonl"
    result = record(rec, out, workroot=tmp_path / "work", timeout=180)
    facts = analyze(out)
    # How many overflows the run meets is not fixed: the workload is built to meet two, but the 2nd
    # lands 18 tokens over the window and on some runs (seen under load) Pi meets a 3rd. What this
    # test is about holds either way and fails without the fix: every overflow after the first is
    # recovered too (a Pi that kept its recovery flag set would give recoveries [1] for overflows [2]).
    assert len(facts.overflows_per_run) == 1 and facts.overflows_per_run[0] >= 2
    assert facts.overflow_recoveries_per_run == facts.overflows_per_run
    assert facts.recovered_between_overflows
    assert sum(1 for r in result.requests if r.kind == "overflow") == facts.overflows_per_run[0]
    # the retried turns are persisted: every scripted read is in the file, and the final answer too
    lines = _lines(out)
    calls = [b for e in lines if e["type"] == "message" and e["message"]["role"] == "assistant"
             for b in e["message"]["content"] if b["type"] == "toolCall"]
    assert len(calls) == 12
    last = [e["message"] for e in lines if e["type"] == "message"][-1]
    assert last["role"] == "assistant" and last["stopReason"] == "stop"
