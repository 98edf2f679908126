"""Issue 12 on the replay side: what real sessions (harness-written, few requests, CJK, hook
summaries, several overflows) need so that replay at recorded settings invents nothing."""

from __future__ import annotations

import math

from sessiontools.read import Session
from sessiontools.replay import ReplaySettings, build_workload, fit_truth, replay_session, simulate
from sessiontools.replay.metrics import run_metrics
from sessiontools.testing import SessionBuilder
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.pi import SessionTree
from tests.replay.test_replay import OVERHEAD, RATIO


def pseudo_reply(b: SessionBuilder, text: str = "sent to the channel", model: str = "delivery-mirror") -> None:
    """A harness's mirrored reply: all-zero usage and a model id that is no model."""
    b.assistant(text)
    b.entries[-1]["message"]["model"] = model
    b.entries[-1]["message"]["provider"] = "openclaw"


def with_pseudo_replies(runs: int = 8, calls: int = 2, size: int = 3000) -> Session:
    """A scripted session (prompt = OVERHEAD + RATIO * chars/4 of the context) where a harness mirrors
    every final reply with a pseudo-reply, which later contexts carry like any message."""
    b = SessionBuilder(model="claude-sonnet-4-5")
    ctx = 0

    def add() -> None:
        nonlocal ctx
        ctx += estimate_tokens(b.entries[-1]["message"], "0")

    for r in range(runs):
        b.user(f"run {r}: " + "please do the task " * 20)
        add()
        for c in range(calls + 1):
            prompt = OVERHEAD + math.ceil(RATIO * ctx)
            last = c == calls
            b.assistant("done" if last else f"step {c}", tool_calls=() if last else [("read", {"path": f"f{r}_{c}.py"})],
                        usage=b.usage(prompt, 50, cache_read=prompt // 2))
            add()
            if not last:
                b.tool_result("read", "x" * size)
                add()
        pseudo_reply(b)
        add()
    return b.session()


def _below_threshold(session: Session, reserve: int = 16384) -> tuple[int, int]:
    wl = build_workload(SessionTree(session).path().entries, session.pi_version)
    peak = max(r.recorded_prompt or 0 for r in wl.requests)
    return peak + reserve + 2000, reserve


def test_pseudo_replies_are_not_requests() -> None:
    """Zero-usage replies with a harness model id are neither fitted nor checked nor the model."""
    s = with_pseudo_replies()
    wl = build_workload(SessionTree(s).path().entries, "0")
    assert all((s_.message or {}).get("model") != "delivery-mirror" for s_ in
               (wl.base[r.base_index] for r in wl.requests))
    assert wl.model == "claude-sonnet-4-5" and wl.provider == "anthropic"
    tm = fit_truth(wl)
    assert abs(tm.overhead - OVERHEAD) < 50 and abs(tm.ratio - RATIO) < 0.05


def test_pseudo_replies_invent_nothing_at_recorded_settings() -> None:
    """Replay at a window whose threshold the recorded prompts stay below: no compaction, no overflow;
    a file ending with a pseudo-reply still finds its model in the catalogue."""
    s = with_pseudo_replies()
    window, reserve = _below_threshold(s)
    wl = build_workload(SessionTree(s).path().entries, "0")
    run = simulate(wl, fit_truth(wl), ReplaySettings(window, reserve, 20000, "pi-0"))
    m = run_metrics(run)
    assert m["compactions"] == 0 and m["overflows"] == 0 and m["late"] == 0
    (pr,) = replay_session(s, windows=None, reserves=[reserve], keeps=[20000], policy=None)
    assert pr.workload.model == "claude-sonnet-4-5"
