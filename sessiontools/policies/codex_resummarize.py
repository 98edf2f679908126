"""Codex's part of `resummarize` (`replay.summarizer.Rewriter`, driven by `replay.resummarize` on the one
walk): the local compactions of a rollout (0.171.0, 0.145.0) regenerated, chained, written back as a
rollout. A pass walks the rollout's lines in order, holding the history as Codex holds it (the response items; a compaction
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
decision; a regenerated summary's own size moves the later ones (the driver replays the setting again
with the regenerated summaries' sizes, `CodexRewriter.given`, until the places stay).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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
from sessiontools.policies.views import GivenSummary
from sessiontools.read.codex.records import SessionMeta, TurnContext

_USER = "user"  # a compaction's reason when the user made it (`replay.records.CompactionReason.USER`)


def recorded_parents(path: Any) -> dict[int, int]:
    """The last message (path index) before each recorded compaction -> its `compacted` line."""
    work = [m.index for m in path.messages]
    out: dict[int, int] = {}
    for c in path.compactions:
        parent = max((i for i in work if i < c.index and path.messages[i].line < c.line), default=-1)
        out.setdefault(parent, c.line)
    return out


def places(run: Any, path: Any) -> dict[int, Any]:
    """Where each compaction of `run` goes: its recorded `compacted` line (a recorded compaction the
    walk reproduced, or the user's), else minus the line it comes after (a new place)."""
    recorded_parent = recorded_parents(path)
    out: dict[int, Any] = {}
    for sc in run.compactions:
        rec_line = recorded_parent.get(sc.parent_base_index)
        if (sc.matches_recorded or sc.reason == _USER) and rec_line is not None:
            out[rec_line] = sc
        else:
            after = path.messages[sc.parent_base_index].line if sc.parent_base_index >= 0 else 1
            out[-after] = sc
    return out


class _Regen:
    """One pass over a chain's rollout (see the module docstring); `p`: the driver's pass
    (`replay.resummarize.Pass`: `ask` a request, `done` a compaction, which may end the pass)."""

    def __init__(self, chain: Any, p: Any) -> None:
        self.chain, self.p = chain, p
        self.places = places(chain.run, chain.path)
        self.objects = chain.native
        self.meta = next((r for r in chain.session.records if isinstance(r, SessionMeta)), None)
        self.models = {r.line: r.model for r in chain.session.records if isinstance(r, TurnContext) and r.model}
        self.model = "unknown"
        self.history: list[Mapping[str, Any]] = []
        self.out: list[dict[str, Any]] = []
        self.seed = f"{self.meta.id if self.meta else chain.session.path}:{chain.label}"
        self.new = 0
        self.texts: dict[int, str] = {}  # compacted line -> its regenerated summary text

    def ask(self, sc: Any, recorded: str | None = None) -> str:
        meta = self.meta
        body = cc.request_body(self.history, model=self.model, base_instructions=meta.base_instructions if meta else None,
                               session_id=meta.id if meta else None)
        req = CodexRequest(body, cc.request_headers())
        ans = self.p.ask(req, len(self.p.result.compactions) + 1)
        text = cc.summary_text(ans.text)
        self.p.done(sc, [(req, ans)], text, recorded=recorded)
        return text

    def insert(self, sc: Any, ts: Any) -> None:
        """A compaction at a place no recorded one has: its answer item and `compacted` line."""
        self.new += 1
        k = self.new
        text = self.ask(sc)
        answer = {"type": "message", "status": "completed", "id": new_id(self.seed, f"answer-{k}"), "role": "assistant",
                  "content": [{"type": "output_text", "text": answer_of(text), "annotations": []}]}
        repl = cc.replacement_history(self.history, text, lambda what: new_id(self.seed, f"{k}-{what}"))
        self.out.append({"timestamp": ts, "type": "response_item", "payload": answer})
        self.out.append({"timestamp": ts, "type": "compacted", "payload": {"message": text, "replacement_history": repl}})
        self.history = list(repl)

    def answer(self, n: int, obj: Mapping[str, Any], compacted: int) -> None:
        """A recorded compaction's answer item: the request is sent here (the history is the one the
        compaction summarised), the item written with the new text, or dropped with its compaction."""
        sc = self.places.get(compacted)
        if sc is None:
            return
        if sc.reason == _USER:
            self.out.append(dict(obj))
            return
        rec = self.objects[compacted - 1]
        text = self.ask(sc, ((rec or {}).get("payload") or {}).get("message"))
        self.texts[compacted] = text
        item = json.loads(json.dumps(obj))
        hp = item["payload"]
        first = (hp.get("content") or [{"type": "output_text"}])[0]
        hp["content"] = [{**first, "text": answer_of(text)}]
        self.out.append(item)

    def recorded(self, n: int, obj: Mapping[str, Any]) -> None:
        """A recorded `compacted` line: regenerated, kept (a user's), or dropped (not at this setting)."""
        sc = self.places.get(n)
        payload = obj.get("payload") or {}
        replacement = list(payload.get("replacement_history") or [])
        if sc is None:  # the setting does not make this compaction: the history goes on
            return
        if sc.reason == _USER:
            self.out.append(dict(obj))
            self.history = replacement
            return
        text = self.texts.pop(n, None)
        if text is None:  # no answer item recorded before it
            text = self.ask(sc, payload.get("message"))
        repl = with_summary(replacement, text) if replacement else cc.replacement_history(
            self.history, text, lambda what: new_id(self.seed, f"{n}-{what}"))
        self.out.append({**obj, "payload": {**payload, "message": text, "replacement_history": repl}})
        self.history = list(repl)

    def run(self) -> list[dict[str, Any]]:
        objs = self.objects
        compaction_of = {a: c for c, a in answer_lines(objs).items()}
        next_item = next_items(objs)
        before: dict[int, list[Any]] = {}
        for key, sc in sorted(self.places.items(), key=lambda kv: -kv[0]):
            if key < 0:
                before.setdefault(next_item.get(-key, len(objs) + 1), []).append(sc)
        for n, obj in enumerate(objs, 1):
            for sc in before.get(n, ()):
                self.insert(sc, timestamp(obj) or timestamp(self.out[-1] if self.out else None))
            if obj is None:
                continue
            self.model = self.models.get(n, self.model)
            if n in compaction_of:
                self.answer(n, obj, compaction_of[n])
                continue
            if obj.get("type") == "compacted":
                self.recorded(n, obj)
                continue
            self.out.append(dict(obj))
            if obj.get("type") == "response_item" and isinstance(obj.get("payload"), Mapping):
                self.history.append(obj["payload"])
        for sc in before.get(len(objs) + 1, ()):  # after the last response item
            self.insert(sc, timestamp(self.out[-1] if self.out else None))
        return renumbered(self.out)


class CodexRewriter:
    """Codex's `Rewriter` (see the module docstring): the transcript walk's compactions over window x
    auto-compact limit, Codex's own compaction request, a rollout written back."""

    what = "Codex rollout"
    request_type = CodexRequest

    def unsupported(self, source: Any) -> str | None:
        return codex_unsupported(source)

    def native(self, source: Any) -> Any:
        from sessiontools.read.codex.load import rollout_objects

        return rollout_objects(source.path)  # the rollout's lines (index = line - 1), copied into the new one

    def label(self, s: Any) -> str:
        limit = dict(s.extra).get("auto_compact_limit")
        return f"w{s.context_window}-l{limit if limit is not None else 'default'}-{s.policy.value}"

    def requests_of(self, chain: Any) -> int:
        return sum(1 for sc in places(chain.run, chain.path).values() if sc.reason != _USER)

    def prompts_key(self, policy: str) -> str | None:
        return None  # Codex's compact prompt is its release's (`policies.codex_compact`)

    def prompts(self, key: str, initial: str | None, update: str | None) -> None:
        return None

    def request_key(self, request: CodexRequest) -> Any:
        return request.body

    def rewrite(self, chain: Any, p: Any, prompts: Any) -> list[dict[str, Any]]:
        return _Regen(chain, p).run()

    def given(self, r: Any, truth: Any) -> GivenSummary | None:
        """A regenerated summary message's tokens: the answer's output tokens (as the endpoint counted)
        plus the prefix at the truth model's rate; the whole text at that rate when it did not say;
        None for the recorded summary (the replay's own, recorded, sizes hold)."""
        if not r.regenerated or not r.calls or r.summary == r.recorded:
            return None
        ans = r.calls[-1][1]
        if ans.output_tokens is None:
            return GivenSummary(r.summary)
        return GivenSummary(r.summary, float(ans.output_tokens) + truth.text_tokens(max(0, len(r.summary) - len(ans.text))))

    def reply_text(self, content: list[Any]) -> str:
        return reply_text(content)


REWRITER = CodexRewriter()
