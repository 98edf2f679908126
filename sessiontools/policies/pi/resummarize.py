"""Pi's part of `resummarize` (`replay.summarizer.Rewriter`, driven by `replay.resummarize`): at each
compaction the walk made with Pi's own `prepareCompaction` (`policies.pi.compactor`, its
`Preparation` on the run's compaction), the requests Pi sends (`policies.pi.summarize`) with the
previous *regenerated* summary as the previous summary, so drift accumulates as it would, each
answer assembled as Pi does, and the session written back: the simulated path (the compactor's) with
the regenerated compactions at their places, relinked. A compaction the user or an extension made
is kept as recorded (its prompt is not Pi's) and restarts the chain from its recorded summary.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from sessiontools.policies.pi.summarize import (
    ModelLimits,
    Prompts,
    RequestKind,
    SummaryPlan,
    SummaryRequest,
    answer_text,
    pi_prompts,
    plan_summary,
    prompts_version,
)
from sessiontools.policies.pi.usage import current_system_message
from sessiontools.policies.views import GivenSummary
from sessiontools.read.pi.entries import Entry
from sessiontools.transcript.pi.context import entry_messages_v1


def _entry_id(seed: str, n: int, taken: set[str]) -> str:
    """A deterministic 8-hex id (Pi's shape) for the n-th new compaction, unused in the session."""
    k = 0
    while True:
        h = hashlib.sha256(f"{seed}:{n}:{k}".encode()).hexdigest()[:8]
        if h not in taken:
            taken.add(h)
            return h
        k += 1


def _usage(calls: Sequence[tuple[SummaryRequest, Any]]) -> dict[str, Any] | None:
    """Pi 1.x's `usage` of a compaction entry: the summarisation calls' tokens, as the endpoint counted."""
    if not calls or any(a.input_tokens is None or a.output_tokens is None for _, a in calls):
        return None
    inp = sum(a.input_tokens or 0 for _, a in calls)
    out = sum(a.output_tokens or 0 for _, a in calls)
    return {"input": inp, "output": out, "cacheRead": 0, "cacheWrite": 0, "totalTokens": inp + out}


def _system_message(path: Sequence[Entry], upto: int) -> dict[str, Any] | None:
    msgs = [m for e in path[:upto] if e.role == "system" and e.type != "compaction" for m in entry_messages_v1(e)]
    return current_system_message(msgs)


def _timestamp_before(path: Sequence[Entry], at: int) -> Any:
    for e in reversed(path[:at]):
        ts = e.data.get("timestamp")
        if ts is not None:
            return ts
    return None


def _record(entry: Entry, sc: Any, summary: str, plan: SummaryPlan, calls: Sequence[tuple[SummaryRequest, Any]],
            new_id: Any, at: int, path: Sequence[Entry], recorded: bool) -> dict[str, Any]:
    """The compaction entry written: the recorded one's fields where the walk made the recorded
    compaction (`recorded`: its entry is on the path, with the regenerated summary once it is given),
    Pi's own otherwise."""
    prep = sc.preparation
    base = dict(entry.data) if recorded else {}
    rec: dict[str, Any] = {
        "type": "compaction",
        "id": base.get("id") or new_id(),
        "parentId": sc.parent_entry_id,
        "timestamp": base.get("timestamp") or _timestamp_before(path, at),
    }
    rec.update({k: v for k, v in base.items() if k not in rec})
    rec["summary"] = summary
    rec["firstKeptEntryId"] = prep.first_kept_entry_id
    rec["tokensBefore"] = prep.tokens_before
    rec["details"] = plan.details()
    if prep.pi_version == "1":
        usage = _usage(calls)
        if usage is not None:
            rec["usage"] = usage
        else:
            rec.pop("usage", None)
        rec.setdefault("fromHook", False)
        if "systemMessage" not in rec:
            system = _system_message(path, at)
            if system is not None:
                rec["systemMessage"] = system
    return rec


def summary_tokens(summary: str, calls: Sequence[tuple[SummaryRequest, Any]], truth: Any) -> float | None:
    """A regenerated summary's size in the context: the output tokens the endpoint counted for its
    answers, plus the text Pi adds around them (file lists, the turn-prefix merge) at the truth model's
    rate; None (the truth model counts the whole text) when the endpoint did not say."""
    if not calls or any(a.output_tokens is None for _, a in calls):
        return None
    answered = sum(len(a.text) for _, a in calls)
    extra = max(0, len(summary) - answered)
    return float(sum(a.output_tokens or 0 for _, a in calls)) + (truth.text_tokens(extra) if truth else extra / 4)


class PiRewriter:
    """Pi's `Rewriter` (see the module docstring)."""

    what = "Pi session"
    request_type = SummaryRequest

    def unsupported(self, source: Any) -> str | None:
        return None

    def native(self, source: Any) -> None:
        return None

    def label(self, s: Any) -> str:
        return f"w{s.context_window}-r{s.reserve_tokens}-k{s.keep_recent_tokens}-{s.policy.value}"

    def requests_of(self, chain: Any) -> int:
        n = 0
        for sc in chain.run.compactions:
            p = sc.preparation
            if p is not None:
                split = p.is_split_turn and bool(p.turn_prefix_messages)
                n += (1 if not split or p.messages_to_summarize else 0) + (1 if split else 0)
        return n

    def prompts_key(self, policy: str) -> str | None:
        return prompts_version(policy)

    def prompts(self, key: str, initial: str | None, update: str | None) -> Prompts:
        from dataclasses import replace

        p = pi_prompts(key)
        return replace(p, **{k: v for k, v in (("initial", initial), ("update", update)) if v is not None})

    def request_key(self, request: SummaryRequest) -> Any:
        return request.to_dict()

    def rewrite(self, chain: Any, p: Any, prompts: Prompts | None) -> list[dict[str, Any]]:
        session, path = chain.session, chain.run.path
        limits = ModelLimits(chain.settings.context_window, chain.grid.model_max_tokens) if chain.grid.model_max_tokens \
            else ModelLimits(chain.settings.context_window)
        seed = f"{session.header.id if session.header else session.path}:{chain.label}"
        taken = {e.id for e in session.entries if e.id}
        ids = frozenset(taken)  # a compaction entry of the session's own on the path: the recorded one
        places = [k for k, e in enumerate(path) if e.type == "compaction"]
        replaced: dict[int, dict[str, Any]] = {}
        previous: Any = None
        n = 0
        for sc, at in zip(chain.run.compactions, places, strict=True):
            entry = path[at]
            prep = sc.preparation
            if prep is None:  # the user's own compaction: kept as recorded, the chain restarts from it
                previous = entry.data.get("summary")
                p.done(sc, [], previous or "", regenerated=False, record=dict(entry.data))
                continue
            n += 1
            plan = plan_summary(prep, previous if prep.has_previous_compaction else None, limits, prompts)
            calls: list[tuple[SummaryRequest, Any]] = []
            answers: dict[RequestKind, str] = {}
            for req in plan.requests:
                ans = p.ask(req, n)
                calls.append((req, ans))
                answers[req.kind] = ans.text
            history = answers.get(RequestKind.UPDATE, answers.get(RequestKind.INITIAL))
            summary = plan.assemble(history, answers.get(RequestKind.TURN_PREFIX))
            k = n
            # The recorded compaction itself: its entry, made after the entry it was recorded after.
            recorded = entry.id in ids and entry.data.get("parentId") == sc.parent_entry_id
            rec = _record(entry, sc, summary, plan, calls, lambda k=k: _entry_id(seed, k, taken), at, path, recorded)
            replaced[at] = rec
            previous = summary
            p.done(sc, calls, summary, record=rec, plan=plan)
        return self.records(chain, replaced)

    def records(self, chain: Any, replaced: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
        """The new session file: the input's header (version 3), then the simulated path with the
        regenerated compactions in place, each entry's parentId the entry before it."""
        session = chain.session
        header = dict(session.header.data) if session.header is not None else {"type": "session"}
        header["version"] = 3
        out: list[dict[str, Any]] = [header]
        parent: Any = None
        for k, e in enumerate(chain.run.path):
            got = replaced.get(k)
            rec = dict(got) if got is not None else dict(e.data)
            rec["parentId"] = parent
            out.append(rec)
            parent = rec.get("id")
        return out

    def given(self, r: Any, truth: Any) -> GivenSummary | None:
        if not r.regenerated:
            return None
        return GivenSummary(r.summary, summary_tokens(r.summary, r.calls, truth))

    def reply_text(self, content: list[Any]) -> str:
        return answer_text(content)


REWRITER = PiRewriter()
