"""Regenerate the local compactions of a Codex rollout (0.171.0): each simulated compaction's own
request, chained, answered by a summariser the caller passes in, written back as a rollout.

`plan_codex_chains` replays the rollout under Codex's rule over a grid (`replay_transcript`, the
transcript walk `replay` uses) and keeps each setting's compactions. `regenerate_codex` walks the
rollout's lines in order, holding the history as Codex holds it (the response items; a compaction
replaces it with its replacement history), and at each compaction of the setting:

- builds the request Codex sends (`policies.codex_compact.request_body`: its base instructions, the
  history, its compact prompt; the lab and the real CLI's log agree on it) and asks `summarize`;
- at a recorded compaction's place: writes the recorded `compacted` line with the new summary (its
  `message` and the summary item of its `replacement_history`; the user messages and context Codex
  kept are the recorded ones) and the compaction's answer item with the new text;
- at a place no recorded compaction has: writes the answer item and a `compacted` line whose
  replacement history is Codex's rule applied to the history (`replacement_history`), right before
  the next response item after the simulated place;
- drops a recorded compaction (its `compacted` line and answer item) the setting does not make;
- keeps a user's manual compaction as recorded (the chain restarts from its replacement history).

The regenerated summary is in the history of the next request, so the next summary is written from
it: drift accumulates as it would. A remote (encrypted) compaction cannot be regenerated
(`policies.codex_compact.REMOTE_REASON`). Where the compactions fire is the transcript walk's
decision; a regenerated summary's own size moves the later ones (`regenerate_codex` replays the
setting again with the regenerated summaries' sizes until the places stay).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessiontools.policies import codex_compact as cc
from sessiontools.policies.codex_request import CodexRequest, codex_unsupported, reply_text
from sessiontools.policies.codex_rollout import (
    answer_lines,
    answer_of,
    new_id,
    next_items,
    renumbered,
    timestamp,
    with_summary,
)
from sessiontools.read.codex.records import Rollout, SessionMeta, TurnContext
from sessiontools.replay.records import CompactionReason, ReplayRun, ReplaySettings, SimCompaction
from sessiontools.replay.summarizer import Summarize, SummarizerError, SummaryGrid


@dataclass(slots=True)
class CodexChain:
    """One rollout under one setting, ready to regenerate."""

    session: Rollout
    objects: Sequence[Mapping[str, Any] | None]  # the rollout's lines (index = line - 1)
    settings: ReplaySettings
    run: ReplayRun
    places: dict[int, SimCompaction]  # compacted line (recorded) or negative "after line" (new) -> compaction
    leaf_id: str | None = None
    replay: Any = None  # (path, policy, truth, recorded parents): to replay again with the new summaries' sizes

    @property
    def label(self) -> str:
        s = self.settings
        limit = dict(s.extra).get("auto_compact_limit")
        return f"w{s.context_window}-l{limit if limit is not None else 'default'}-{s.policy.value}"


@dataclass(slots=True)
class CodexRegenerated:
    compaction: SimCompaction
    calls: list[tuple[CodexRequest, Any]]
    summary: str
    regenerated: bool = True
    recorded: str | None = None  # the recorded summary at this place (None: a new place)


@dataclass(slots=True)
class CodexChainResult:
    chain: CodexChain
    compactions: list[CodexRegenerated] = field(default_factory=list)
    error: str | None = None
    lines: list[dict[str, Any]] = field(default_factory=list)

    def records(self) -> list[dict[str, Any]]:
        return self.lines


def plan_codex_chains(rollout: Rollout, objects: Sequence[Mapping[str, Any] | None], *,
                      windows: Sequence[int] | None, limits: Sequence[int | None]) -> list[CodexChain]:
    """Replay `rollout` under Codex's rule at every (window, auto-compact limit) of the grid."""
    from sessiontools.policies.registry import cli_version, make_policy
    from sessiontools.replay.transcripts import policy_for, replay_transcript
    from sessiontools.transcript.load import transcript_of

    t = transcript_of(rollout)
    out = []
    for tr in replay_transcript(t, windows=windows, reserves=[0], keeps=[0], policy=None, limits=limits):
        path = tr.path
        work = [m.index for m in path.messages]
        recorded_parent = {}
        for c in path.compactions:
            parent = max((i for i in work if i < c.index and path.messages[i].line < c.line), default=-1)
            recorded_parent.setdefault(parent, c.line)
        name = policy_for(t, None)  # the policy `replay_transcript` made for this path
        policy = make_policy(name, cli_version(name, t), next((r.model for r in reversed(path.requests) if r.model), None))
        for run in tr.runs:
            out.append(CodexChain(rollout, objects, run.settings, run, _places(run, path, recorded_parent),
                                  replay=(path, policy, tr.truth, recorded_parent)))
    return out


def _places(run: ReplayRun, path: Any, recorded_parent: Mapping[int, int]) -> dict[int, SimCompaction]:
    places: dict[int, SimCompaction] = {}
    for sc in run.compactions:
        rec_line = recorded_parent.get(sc.parent_base_index)
        if (sc.matches_recorded or sc.reason == CompactionReason.USER) and rec_line is not None:
            places[rec_line] = sc
        else:
            after = path.messages[sc.parent_base_index].line if sc.parent_base_index >= 0 else 1
            places[-after] = sc
    return places


def regenerate_codex(chain: CodexChain, summarize: Callable[[CodexRequest], Any],
                     on_answer: Callable[[], None] | None = None) -> CodexChainResult:
    """Regenerate `chain`'s compactions in order (see the module docstring); `result.lines` is the
    new rollout (empty when the summariser failed: `result.error` says where).

    A regenerated summary's own size moves the later compactions: once compaction n is regenerated,
    the setting is replayed again with the sizes of the summaries so far (output tokens as the
    endpoint counted them, plus the summary prefix; the text's own when it did not say; none for a
    summary equal to the recorded one), and compaction n + 1 is asked at its new place. Compaction
    n's place depends only on the summaries before it, so no request is sent for a place that moves
    later, and each request is asked once."""
    from sessiontools.replay.walk import simulate_path

    answers: dict[str, Any] = {}

    def once(req: CodexRequest) -> Any:
        key = json.dumps(req.body, sort_keys=True, ensure_ascii=False)
        if key not in answers:
            answers[key] = summarize(req)
            if on_answer is not None:
                on_answer()
        return answers[key]

    n = 1
    while True:
        regen = _Regen(chain, once, None, limit=n if chain.replay is not None else None)
        res = regen.run()
        if res.error is not None or not regen.stopped:
            return res
        path, policy, truth, recorded_parent = chain.replay
        run = simulate_path(path, policy, chain.settings, truth, [_size(c, truth) for c in res.compactions])
        chain.run, chain.places = run, _places(run, path, recorded_parent)
        n += 1


def _size(c: CodexRegenerated, truth: Any) -> float | None:
    """A regenerated summary message's tokens: the answer's output tokens (as the endpoint counted)
    plus the prefix at the truth model's rate; the whole text at that rate when it did not say."""

    if not c.regenerated or not c.calls or c.summary == c.recorded:
        return None  # the recorded summary: the replay's own (recorded) sizes hold
    ans = c.calls[-1][1]
    prefix = len(c.summary) - len(ans.text)
    if ans.output_tokens is None:
        return truth.text_tokens(len(c.summary))
    return float(ans.output_tokens) + truth.text_tokens(max(0, prefix))


class _Stop(Exception):
    """The pass regenerated as many compactions as it was asked to."""


class _Regen:
    def __init__(self, chain: CodexChain, summarize: Callable[[CodexRequest], Any],
                 on_answer: Callable[[], None] | None, limit: int | None = None) -> None:
        self.chain, self.summarize, self.on_answer = chain, summarize, on_answer
        self.limit = limit  # stop after this many regenerated compactions (the caller replays again)
        self.stopped = False
        self.result = CodexChainResult(chain)
        self.meta = next((r for r in chain.session.records if isinstance(r, SessionMeta)), None)
        self.models = {r.line: r.model for r in chain.session.records if isinstance(r, TurnContext) and r.model}
        self.model = "unknown"
        self.history: list[Mapping[str, Any]] = []
        self.out: list[dict[str, Any]] = []
        self.seed = f"{self.meta.id if self.meta else chain.session.path}:{chain.label}"
        self.new = 0
        self.texts: dict[int, str] = {}  # compacted line -> its regenerated summary text

    def ask(self, sc: SimCompaction, recorded: str | None = None) -> str | None:
        meta = self.meta
        body = cc.request_body(self.history, model=self.model, base_instructions=meta.base_instructions if meta else None,
                               session_id=meta.id if meta else None)
        req = CodexRequest(body, cc.request_headers())
        try:
            ans = self.summarize(req)
        except SummarizerError as exc:
            self.result.error = f"compaction {len(self.result.compactions) + 1} (compact request): {exc}"
            return None
        if self.on_answer is not None:
            self.on_answer()
        text = cc.summary_text(ans.text)
        self.result.compactions.append(CodexRegenerated(sc, [(req, ans)], text, recorded=recorded))
        if self.limit is not None and len(self.result.compactions) >= self.limit:
            raise _Stop
        return text

    def insert(self, sc: SimCompaction, ts: Any) -> bool:
        """A compaction at a place no recorded one has: its answer item and `compacted` line."""
        self.new += 1
        k = self.new
        text = self.ask(sc)
        if text is None:
            return False
        answer = {"type": "message", "status": "completed", "id": new_id(self.seed, f"answer-{k}"), "role": "assistant",
                  "content": [{"type": "output_text", "text": answer_of(text), "annotations": []}]}
        repl = cc.replacement_history(self.history, text, lambda what: new_id(self.seed, f"{k}-{what}"))
        self.out.append({"timestamp": ts, "type": "response_item", "payload": answer})
        self.out.append({"timestamp": ts, "type": "compacted", "payload": {"message": text, "replacement_history": repl}})
        self.history = list(repl)
        return True

    def answer(self, n: int, obj: Mapping[str, Any], compacted: int) -> bool:
        """A recorded compaction's answer item: the request is sent here (the history is the one the
        compaction summarised), the item written with the new text, or dropped with its compaction."""
        sc = self.chain.places.get(compacted)
        if sc is None:
            return True
        if sc.reason == CompactionReason.USER:
            self.out.append(dict(obj))
            return True
        rec = self.chain.objects[compacted - 1]
        text = self.ask(sc, ((rec or {}).get("payload") or {}).get("message"))
        if text is None:
            return False
        self.texts[compacted] = text
        item = json.loads(json.dumps(obj))
        hp = item["payload"]
        first = (hp.get("content") or [{"type": "output_text"}])[0]
        hp["content"] = [{**first, "text": answer_of(text)}]
        self.out.append(item)
        return True

    def recorded(self, n: int, obj: Mapping[str, Any]) -> bool:
        """A recorded `compacted` line: regenerated, kept (a user's), or dropped (not at this setting)."""
        sc = self.chain.places.get(n)
        payload = obj.get("payload") or {}
        replacement = list(payload.get("replacement_history") or [])
        if sc is None:  # the setting does not make this compaction: the history goes on
            return True
        if sc.reason == CompactionReason.USER:
            self.out.append(dict(obj))
            self.history = replacement
            return True
        text = self.texts.pop(n, None)
        if text is None:  # no answer item recorded before it
            text = self.ask(sc, payload.get("message"))
            if text is None:
                return False
        repl = with_summary(replacement, text) if replacement else cc.replacement_history(
            self.history, text, lambda what: new_id(self.seed, f"{n}-{what}"))
        self.out.append({**obj, "payload": {**payload, "message": text, "replacement_history": repl}})
        self.history = list(repl)
        return True

    def run(self) -> CodexChainResult:
        try:
            return self._run()
        except _Stop:
            self.stopped = True
            return self.result

    def _run(self) -> CodexChainResult:
        objs = self.chain.objects
        compaction_of = {a: c for c, a in answer_lines(objs).items()}
        next_item = next_items(objs)
        before: dict[int, list[SimCompaction]] = {}
        for key, sc in sorted(self.chain.places.items(), key=lambda kv: -kv[0]):
            if key < 0:
                before.setdefault(next_item.get(-key, len(objs) + 1), []).append(sc)
        for n, obj in enumerate(objs, 1):
            for sc in before.get(n, ()):
                if not self.insert(sc, timestamp(obj) or timestamp(self.out[-1] if self.out else None)):
                    return self.result
            if obj is None:
                continue
            self.model = self.models.get(n, self.model)
            if n in compaction_of:
                if not self.answer(n, obj, compaction_of[n]):
                    return self.result
                continue
            if obj.get("type") == "compacted":
                if not self.recorded(n, obj):
                    return self.result
                continue
            self.out.append(dict(obj))
            if obj.get("type") == "response_item" and isinstance(obj.get("payload"), Mapping):
                self.history.append(obj["payload"])
        for sc in before.get(len(objs) + 1, ()):  # after the last response item
            if not self.insert(sc, timestamp(self.out[-1] if self.out else None)):
                return self.result
        self.result.lines = renumbered(self.out)
        return self.result


def requests_of_codex(chain: CodexChain) -> int:
    return sum(1 for sc in chain.places.values() if sc.reason != CompactionReason.USER)


class CodexSummarizer:
    """Codex's summariser (`replay.summarizer.Summarizer`): the transcript walk's compactions over
    window x auto-compact limit, Codex's own compaction request, a rollout written back."""

    what = "Codex rollout"
    request_type = CodexRequest

    def unsupported(self, source: Rollout) -> str | None:
        return codex_unsupported(source)

    def plan(self, source: Rollout, grid: SummaryGrid) -> list[CodexChain]:
        from sessiontools.read.codex.load import rollout_objects

        return plan_codex_chains(source, rollout_objects(source.path), windows=grid.windows, limits=grid.limits)

    def requests_of(self, chain: CodexChain) -> int:
        return requests_of_codex(chain)

    def empty_result(self, chain: CodexChain) -> CodexChainResult:
        return CodexChainResult(chain)

    def prompts_key(self, chain: CodexChain) -> str | None:
        return None  # Codex's compact prompt is its release's (`policies.codex_compact`)

    def prompts(self, key: str, initial: str | None, update: str | None) -> None:
        return None

    def regenerate(self, chain: CodexChain, summarize: Summarize, prompts: Any,
                   on_answer: Callable[[], None] | None) -> CodexChainResult:
        return regenerate_codex(chain, summarize, on_answer)

    def records(self, result: CodexChainResult) -> list[dict[str, Any]]:
        return result.records()

    def reply_text(self, content: list[Any]) -> str:
        return reply_text(content)


SUMMARIZER = CodexSummarizer()

__all__ = [
    "SUMMARIZER",
    "CodexChain",
    "CodexChainResult",
    "CodexRequest",
    "codex_unsupported",
    "plan_codex_chains",
    "regenerate_codex",
    "requests_of_codex",
]
