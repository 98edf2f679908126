"""The one `resummarize` driver (`replay.resummarize.regenerate`) with a stand-in rewriter: the walk
again gets each regenerated summary at its own compaction's ordinal, a compaction the rewriter keeps
as recorded (a user's, which Codex's rewriter does not report) included."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from sessiontools.policies.views import GivenSummary
from sessiontools.replay import resummarize, walk
from sessiontools.replay.summarizer import Answer


class _Rewriter:
    """Reports only the second compaction of the run (the first is a user's, kept as recorded)."""

    def request_key(self, request: Any) -> Any:
        return request.user

    def rewrite(self, chain: Any, p: Any, prompts: Any) -> list[dict[str, Any]]:
        user, auto = chain.run.compactions
        req = SimpleNamespace(kind=SimpleNamespace(value="compact"), user="u")
        ans = p.ask(req, 1)
        p.done(auto, [(req, ans)], ans.text)
        return [{"lines": len(chain.run.compactions)}]

    def given(self, r: Any, truth: Any) -> GivenSummary | None:
        return GivenSummary(r.summary, 42.0)


def test_each_summary_is_given_at_its_compactions_ordinal(monkeypatch: pytest.MonkeyPatch) -> None:
    run = SimpleNamespace(compactions=[SimpleNamespace(name="user"), SimpleNamespace(name="auto")], settings=None)
    chain = SimpleNamespace(rewriter=_Rewriter(), run=run, truth=None, path=None, policy=None, walk_grid=None,
                            settings=None)
    seen: list[list[Any]] = []

    def again(path: Any, policy: Any, settings: Any, truth: Any, sizes: Any, **kw: Any) -> Any:
        seen.append(list(sizes))
        return SimpleNamespace(compactions=[SimpleNamespace(name="user"), SimpleNamespace(name="auto")], settings=None)

    monkeypatch.setattr(walk, "simulate_path", again)
    result = resummarize.regenerate(chain, lambda req: Answer("summary", 1, 1))  # type: ignore[arg-type]
    assert result.error is None
    assert seen[0] == [None, GivenSummary("summary", 42.0)]
