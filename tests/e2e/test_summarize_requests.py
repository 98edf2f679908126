"""End to end: the summarisation requests the real Pi CLI sends are the ones `policies.pi.summarize`
builds, and the lab's answers to ours are the summaries Pi recorded.

The real Pi CLI (both pinned releases) records a short session against the lab server, which logs
the body of every summarisation request it receives. For each compaction in the file we rebuild the
requests from the recorded path (Pi's `prepareCompaction` port at the recorded settings) and compare
system prompt, user message and output limit with the logged ones, in Pi's order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.driver import Recording, record
from lab.server import LabModel, ServerConfig, _content_text
from lab.workload import build_workload
from sessiontools.policies.pi import CompactionSettings, prepare_compaction
from sessiontools.policies.pi.prepare import Preparation
from sessiontools.policies.pi.summarize import ModelLimits, RequestKind, plan_summary
from sessiontools.read import load_session
from sessiontools.transcript.pi.tree import SessionTree
from tests.conftest import require_pi


def _logged(body: dict) -> tuple[str, str, int | None]:
    msgs = body["messages"]
    assert [m["role"] for m in msgs] == ["system", "user"], "a summarisation request is one system + one user message"
    assert not body.get("tools"), "Pi sends no tools with a summarisation request"
    return _content_text(msgs[0]["content"]), _content_text(msgs[1]["content"]), body.get("max_tokens")


@pytest.mark.e2e
@pytest.mark.parametrize("major", ["0", "1"])
def test_our_requests_are_the_ones_pi_sends(major: str, tmp_path: Path) -> None:
    require_pi(major)
    rec = Recording(f"e2e-sumreq-pi{major}", major, seed=51, prompts=6, window=10000, reserve=2500, keep=2000)
    out = tmp_path / "session.jsonl"
    result = record(rec, out, workroot=tmp_path / "work", timeout=120)
    assert all(r.returncode == 0 for r in result.runs), [r.stderr for r in result.runs if r.returncode]
    logged = [_logged(r.body) for r in result.requests if r.kind in ("initial", "update", "turn_prefix")]
    assert all(r.body is not None for r in result.requests if r.kind in ("initial", "update", "turn_prefix"))

    s = load_session(out)
    path = SessionTree(s).path().entries
    ours: list[tuple[str, str, int | None]] = []
    kinds: set[RequestKind] = set()
    split = 0
    lab = LabModel(ServerConfig(workload=build_workload(rec.seed, rec.total_prompts, rec.profile), window=10**9))
    for i, e in enumerate(path):
        if e.type != "compaction":
            continue
        prep = prepare_compaction(path[:i], CompactionSettings(True, rec.reserve, rec.keep), major)
        assert isinstance(prep, Preparation)
        plan = plan_summary(prep, prep.previous_summary, ModelLimits(rec.window, 4096))
        answers = {}
        for r in plan.requests:
            ours.append((r.system, r.user, r.max_tokens))
            kinds.add(r.kind)
            # the lab's answer to our request, through its request handler (as over HTTP)
            status, _, reply = lab.respond({"model": "lab-model", "messages": [
                {"role": "system", "content": r.system}, {"role": "user", "content": r.user}],
                "max_tokens": r.max_tokens})
            assert status == 200 and reply is not None
            answers[r.kind] = reply["text"]
        split += plan.turn_prefix is not None
        history = answers.get(RequestKind.UPDATE, answers.get(RequestKind.INITIAL))
        assert plan.assemble(history, answers.get(RequestKind.TURN_PREFIX)) == e.data["summary"]
    assert len(ours) >= 3 and RequestKind.UPDATE in kinds and split >= 1, "the settings must exercise updates and split turns"
    # 0.x sends a split turn's two requests at once (Promise.all): their arrival order may vary.
    assert sorted(ours) == sorted(logged)
    if major == "1":
        assert ours == logged  # 1.x sends them one after the other
