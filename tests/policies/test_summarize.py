"""Pi's summarisation request (`policies.pi.summarize`): the prompts are Pi's own, the requests
and the assembly reproduce every summary the real Pi CLI recorded in the bundled samples."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from lab.summarizer import classify, summarize
from sessiontools.policies.pi import CompactionSettings, prepare_compaction
from sessiontools.policies.pi.prepare import Preparation
from sessiontools.policies.pi.summarize import (
    NO_PRIOR_HISTORY,
    ModelLimits,
    RequestKind,
    clamp_max_tokens_v1,
    pi_prompts,
    plan_summary,
)
from sessiontools.read import load_session
from sessiontools.testing import SessionBuilder
from sessiontools.transcript.pi.tree import SessionTree
from tests.conftest import SAMPLES, require_pi

MANIFEST = json.loads((SAMPLES / "manifest.json").read_text(encoding="utf-8"))
_CONST = re.compile(r"(?:export )?const ([A-Z_]+) = `((?:[^`\\]|\\.)*)`;", re.S)


def _js_constants(dist: Path) -> dict[str, str]:
    text = (dist / "compaction.js").read_text(encoding="utf-8") + (dist / "utils.js").read_text(encoding="utf-8")
    raw = {m.group(1): m.group(2) for m in _CONST.finditer(text)}
    return {k: re.sub(r"\$\{([A-Z_]+)\}", lambda m: raw[m.group(1)], v) for k, v in raw.items()}


@pytest.mark.parity
@pytest.mark.parametrize("major", ["0", "1"])
def test_prompt_templates_are_pis_own(major: str) -> None:
    """The template files beside the module are the strings of the pinned release, byte for byte."""
    env = require_pi(major)
    js = _js_constants(env.dist("core/compaction"))
    p = pi_prompts(major)
    assert p.system == js["SUMMARIZATION_SYSTEM_PROMPT"]
    assert p.initial == js["SUMMARIZATION_PROMPT"]
    assert p.update == js["UPDATE_SUMMARIZATION_PROMPT"]
    assert p.turn_prefix == js["TURN_PREFIX_SUMMARIZATION_PROMPT"]


def _recorded_cases():
    for name, m in MANIFEST.items():
        yield pytest.param(name, m, id=name)


def lab_answer(request_system: str, request_user: str, seed: int) -> str:
    kind = classify(request_system, request_user)
    assert kind is not None, "the lab does not recognise the request as a summarisation request"
    return summarize(kind, request_user, seed)


@pytest.mark.parametrize(("name", "m"), list(_recorded_cases()))
def test_recorded_summaries_are_reproduced_from_our_requests(name: str, m: dict) -> None:
    """At each compaction Pi recorded (every leaf), our requests answered by the lab's summariser and
    assembled as Pi does give the recorded summary, byte for byte."""
    s = load_session(SAMPLES / m["facts"]["file"])
    tree = SessionTree(s)
    seen: set[str] = set()
    checked = 0
    for leaf in tree.leaves:
        path = tree.path(leaf).entries
        for i, e in enumerate(path):
            if e.type != "compaction" or e.id in seen:
                continue
            seen.add(e.id)
            prep = prepare_compaction(path[:i], CompactionSettings(True, m["reserve"], m["keep"]), m["pi"])
            assert isinstance(prep, Preparation)
            plan = plan_summary(prep, prep.previous_summary, ModelLimits(m["window"]))
            answers = {r.kind: lab_answer(r.system, r.user, m["seed"]) for r in plan.requests}
            history = answers.get(RequestKind.UPDATE, answers.get(RequestKind.INITIAL))
            assert plan.assemble(history, answers.get(RequestKind.TURN_PREFIX)) == e.data["summary"], (name, e.line)
            assert plan.details() == e.data["details"]
            checked += 1
    assert checked == m["facts"]["compactions"]


def _split_session(version: int, with_history: bool):
    b = SessionBuilder()
    if version == 1:
        b.system("you are pi")
    if with_history:
        b.user("first task " * 50)
        b.assistant("done " * 50, usage=b.usage(1000))
    b.user("second task")
    for k in range(6):
        b.assistant(f"step {k}", tool_calls=[("read", {"path": f"f{k}.py"})], usage=b.usage(2000 + k))
        b.tool_result("read", "x" * 2000)
    return b.session()


@pytest.mark.parametrize("major", ["0", "1"])
def test_split_turn_without_history_sends_only_the_prefix(major: str) -> None:
    """A split turn with nothing before it: 0.x writes "No prior history.", 1.x the previous summary
    (`previousSummary ?? "No prior history."`)."""
    s = _split_session(int(major), with_history=False)
    path = SessionTree(s).path().entries
    prep = prepare_compaction(path, CompactionSettings(True, 4000, 1200), major)
    assert isinstance(prep, Preparation) and prep.is_split_turn and not prep.messages_to_summarize
    plan = plan_summary(prep, None, ModelLimits(16000))
    assert [r.kind for r in plan.requests] == [RequestKind.TURN_PREFIX]
    assert plan.assemble(None, "P").startswith(f"{NO_PRIOR_HISTORY}\n\n---\n\n**Turn Context (split turn):**\n\nP")
    plan = plan_summary(prep, "the old summary", ModelLimits(16000))
    expected = NO_PRIOR_HISTORY if major == "0" else "the old summary"
    assert plan.assemble(None, "P").startswith(f"{expected}\n\n---\n\n")
    assert plan.assemble(None, "P").endswith("</read-files>")


@pytest.mark.parametrize("major", ["0", "1"])
def test_update_prompt_follows_javascript_truthiness(major: str) -> None:
    s = _split_session(int(major), with_history=True)
    prep = prepare_compaction(SessionTree(s).path().entries, CompactionSettings(True, 5000, 1200), major)
    assert isinstance(prep, Preparation) and prep.messages_to_summarize
    p = pi_prompts(major)
    for previous, kind in (("", RequestKind.INITIAL), (None, RequestKind.INITIAL), ("prev", RequestKind.UPDATE)):
        h = plan_summary(prep, previous, ModelLimits(16000)).history
        assert h is not None and h.kind == kind and h.system == p.system
        assert h.user.startswith("<conversation>\n[User]: first task")
        assert h.user.endswith(p.update if kind == RequestKind.UPDATE else p.initial)
        assert ("<previous-summary>\nprev\n</previous-summary>\n\n" in h.user) == (kind == RequestKind.UPDATE)
    plan = plan_summary(prep, "prev", ModelLimits(16000))
    assert plan.turn_prefix is not None
    if major == "0":  # floor(0.8 * reserve), floor(0.5 * reserve)
        assert (plan.history.max_tokens, plan.turn_prefix.max_tokens) == (4000, 2500)
        assert plan.turn_prefix.user.startswith("<conversation>\n")
    else:  # the model's 4096, the window leaves room for it
        assert (plan.history.max_tokens, plan.turn_prefix.max_tokens) == (4096, 4096)
        assert plan.turn_prefix.user.startswith("# Conversation\n")
        assert "\n\n# Instructions\n" in plan.turn_prefix.user


def test_v1_output_limit_is_clamped_to_the_window() -> None:
    """pi-ai 1.6.0 clampMaxTokensToContext, values derived by hand."""
    system, user = "s" * 350, "u" * 3500  # 100 + 1000 estimated tokens
    # room = 16000 - 1100 - max(4096, 165) = 10804 < 32768 -> min(32768, 16000 - 1100 - 4096) = 10804
    assert clamp_max_tokens_v1(ModelLimits(16000, 4096), system, user) == 4096
    assert clamp_max_tokens_v1(ModelLimits(16000, 20000), system, user) == 10804
    # a nearly full small window: at least 1
    assert clamp_max_tokens_v1(ModelLimits(5000, 4096), system, user) == 1
    # a large window keeps the 15% margin: 200000 - 1100 - 4096 = 194804 >= 32768
    assert clamp_max_tokens_v1(ModelLimits(200000, 64000), system, user) == 64000
    assert clamp_max_tokens_v1(ModelLimits(0, 777), system, user) == 777
    assert math.ceil(3501 / 3.5) == 1001  # the estimate rounds up
