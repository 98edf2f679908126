"""The billed calls of a Codex rollout (`Transcript.billed`, see `transcript.codex`'s docstring):
every `token_count` whose `total_token_usage` changed, with its `last_token_usage` (else the change
of the total) and the model of the turn, but not a spawned subagent's replay of its parent's counts."""

from __future__ import annotations

from collections.abc import Mapping

from sessiontools.read.codex.records import Rollout, SessionMeta, TokenCount, TokenUsage, TurnContext
from sessiontools.transcript.model import Request, Usage


def usage_of(u: TokenUsage) -> Usage:
    """OpenAI usage -> neutral classes (cached tokens are inside `input_tokens`)."""
    cached = min(u.cached_input_tokens, u.input_tokens)
    return Usage(input=u.input_tokens - cached, cache_read=cached, cache_write=0, output=u.output_tokens)


def _delta(a: TokenUsage, b: TokenUsage | None) -> TokenUsage:
    if b is None:
        return a
    return TokenUsage(*(max(x - y, 0) for x, y in zip(_fields(a), _fields(b), strict=True)))


def _fields(u: TokenUsage) -> tuple[int, ...]:
    return tuple(getattr(u, f) for f in TokenUsage.__dataclass_fields__)


def _spawned(metas: list[SessionMeta]) -> bool:
    """A subagent's rollout (``session_meta.source.subagent.thread_spawn``, Codex 0.119+)."""
    meta = metas[0].data if metas else {}
    source = meta.get("source") if isinstance(meta, Mapping) else None
    sub = source.get("subagent") if isinstance(source, Mapping) else None
    return isinstance(sub, Mapping) and "thread_spawn" in sub


def _replayed_second(counts: list[TokenCount]) -> str | None:
    """The second (``YYYY-MM-DDTHH:MM:SS``) of the parent's counts a spawned subagent's rollout
    begins with: its first two counts written in the same second are a replay, not its own calls."""
    stamps = [(c.timestamp or "")[:19] for c in counts[:2]]
    return stamps[0] if len(stamps) == 2 and len(stamps[0]) == 19 and stamps[0] == stamps[1] else None


def billed(rollout: Rollout, provider: str | None, metas: list[SessionMeta]) -> list[Request]:
    """Every call the rollout's counts bill (see the module docstring), as requests on no path."""
    out: list[Request] = []
    model: str | None = None
    prev: TokenUsage | None = None
    replay = None
    if _spawned(metas):
        counts = [r for r in rollout.records if isinstance(r, TokenCount) and (r.total or r.last)]
        replay = _replayed_second(counts)
    for r in rollout.records:
        if isinstance(r, TurnContext):
            model = r.model or model
        elif isinstance(r, TokenCount) and (r.total is not None or r.last is not None):
            if replay is not None:
                if (r.timestamp or "")[:19] == replay:
                    prev = r.total or prev  # the parent's calls, replayed: not billed here
                    continue
                replay = None
            if r.total is not None and r.total == prev:
                continue  # Codex repeats an unchanged count
            use = r.last if r.last is not None else _delta(r.total, prev)  # type: ignore[arg-type]
            prev = r.total if r.total is not None else prev
            u = usage_of(use)
            if u.total > 0:
                out.append(Request(-1, r.line, u, (), provider, model, r.timestamp))
    return out
