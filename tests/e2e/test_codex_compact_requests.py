"""End to end: the compaction requests the real Codex CLI (0.171.0) sends are the ones
`policies.codex_compact.request_body` builds, and the lab's answers to ours are the summaries Codex
recorded.

The real CLI records a short rollout against the lab server, which logs the body (and Codex's
`x-codex-*` headers) of every compaction request. `resummarize`'s Codex chain at the recorded
settings rebuilds each request from the rollout; they must equal the logged ones in Codex's order,
field for field, except what no rollout records: `client_metadata` (installation, turn and window
ids) and the id Codex gives the base-instructions message.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.codex_driver import CodexRecording, record
from lab.codex_env import SKIP_ENV, CodexUnavailable, ensure_codex, skip_requested
from lab.responses_api import ResponsesModel
from lab.server import LabModel, ServerConfig
from lab.workload import build_workload
from sessiontools.policies import codex_compact as cc
from sessiontools.policies.codex_request import CodexRequest
from sessiontools.read.codex.load import load_rollout, rollout_objects
from sessiontools.replay.registry import summarizer_of
from sessiontools.replay.summarizer import Answer, SummaryGrid


def _ensure() -> None:
    if skip_requested():
        pytest.skip(f"{SKIP_ENV}=1: the Codex CLI end-to-end test is switched off")
    try:
        ensure_codex()
    except CodexUnavailable as exc:
        pytest.fail(f"the pinned Codex CLI cannot be installed ({exc}); set {SKIP_ENV}=1 to skip", pytrace=False)


def _comparable(body: dict) -> dict:
    out = {k: v for k, v in body.items() if k not in ("client_metadata", "_headers")}
    first, *rest = out["input"]
    out["input"] = [{k: v for k, v in first.items() if k != "id"}, *rest]
    return out


@pytest.mark.e2e
def test_our_compaction_requests_are_the_ones_codex_sends(tmp_path: Path) -> None:
    _ensure()
    rec = CodexRecording("e2e-codex-compact-requests", seed=71, prompts=8, context_window=64000,
                         auto_compact_limit=17000)
    out = tmp_path / "rollout.jsonl"
    result = record(rec, out, workroot=tmp_path / "work", timeout=120)
    assert all(r.returncode == 0 for r in result.runs), [r.stderr for r in result.runs if r.returncode]
    logged = [r.body for r in result.requests if r.kind == "compaction"]
    assert len(logged) >= 2 and all(b is not None for b in logged), "the recording must compact twice"
    for body in logged:
        meta = json.loads(body["_headers"]["x-codex-turn-metadata"])
        assert meta["request_kind"] == "compaction" and meta["compaction"]["implementation"] == "responses"

    lab = ResponsesModel(LabModel(ServerConfig(workload=build_workload(rec.seed, rec.prompts, rec.profile),
                                               window=10**9)))
    ours: list[dict] = []

    def answer(req: CodexRequest) -> Answer:
        body = dict(req.body)
        ours.append(body)
        events, _ = lab.respond(body, dict(req.headers))
        done = events[-1]["response"]
        return Answer(cc.last_assistant_text(done["output"]), done["usage"]["input_tokens"],
                      done["usage"]["output_tokens"])

    objs = rollout_objects(out)
    rollout = load_rollout(out)
    s = summarizer_of(rollout)
    (chain,) = s.plan(rollout, SummaryGrid([rec.context_window], [0], [0], limits=[rec.auto_compact_limit]))
    res = s.regenerate(chain, answer, None, None)
    assert res.error is None
    assert [_comparable(b) for b in ours] == [_comparable(b) for b in logged]
    # the lab's answers to our requests are the summaries Codex recorded, and the rollout is the same
    recorded = [o["payload"]["message"] for o in objs if o and o["type"] == "compacted"]
    assert [c.summary for c in res.compactions] == recorded
    assert res.lines == [o for o in objs if o is not None]
