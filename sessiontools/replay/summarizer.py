"""What `resummarize` asks of an agent's summariser, agent-free: the answer a summariser returns, the
error that stops a chain, the Responses-style request (`policies.summary_request`), the `Summarizer`
interface the endpoint, the run and the report speak to, and the `Rewriter` interface each agent's
part of `resummarize` implements in `policies/` (`replay.registry.SUMMARIZERS` names the module, or
why an agent has none).

There is one driver (`replay.resummarize`): it replays every agent's input on the one walk
(`replay.walk`) over the settings grid of the agent's rule, and makes each rewriter a `Summarizer`.
The rewriter owns what is the agent's: the request it sends at each compaction (prompt, request
shape), what it keeps of the answer (`reply_text`), how each regenerated summary is chained into the
next request, and the file it writes back in its own format.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sessiontools.jsvalues import utf16_len
from sessiontools.policies.summary_request import ResponsesRequest


@dataclass(frozen=True, slots=True)
class Answer:
    """A summariser's reply to one request."""

    text: str
    input_tokens: int | None = None  # as the endpoint counted them (None: it did not say)
    output_tokens: int | None = None
    latency_s: float = 0.0
    cache_hit: bool = False
    stop_reason: str | None = None


#: Answers one request (raises `SummarizerError` when it cannot).
Summarize = Callable[[Any], Answer]


class SummarizerError(Exception):
    """The summariser could not answer a request (after its retries): the chain stops there."""


@dataclass(frozen=True, slots=True)
class SummaryGrid:
    """The settings `resummarize` regenerates each input at, as its options give them; each
    summariser takes the axes of its own rule (and ignores the others)."""

    windows: Sequence[int] | None
    reserves: Sequence[int]
    keeps: Sequence[int]
    policy: str | None = None
    leaf: str | None = None
    summary_tokens: int | None = None
    model_max_tokens: int | None = None
    limits: Sequence[int | None] = (None,)  # an auto-compact limit (None: the rule's default)
    models: Sequence[str] = ()  # models.json files for the window when none is given


class Summarizer(Protocol):
    """An agent's summariser (`replay.resummarize.Summarizer` over the `REWRITER` of the module
    `replay.registry.SUMMARIZERS` names).

    A chain is one input under one setting (`session`, `label`, `settings`, `leaf_id`); a result is a
    regenerated chain (`chain`, `compactions`, `error`)."""

    #: What an input of this agent is called in messages ("Pi session").
    what: str
    #: The type of the requests it sends (the endpoint picks `reply_text` by it).
    request_type: type

    def unsupported(self, source: Any) -> str | None:
        """None when `source` can be resummarized, else why not (said once per file)."""

    def plan(self, source: Any, grid: SummaryGrid) -> list[Any]:
        """`source` replayed at every setting of `grid` it takes: one chain each."""

    def requests_of(self, chain: Any) -> int:
        """How many requests regenerating `chain` sends at most (for a progress bar)."""

    def empty_result(self, chain: Any) -> Any:
        """The result of `chain` before anything is regenerated (for its output path)."""

    def prompts_key(self, chain: Any) -> str | None:
        """Which prompt set `chain` uses (None: the agent's prompt cannot be replaced)."""

    def prompts(self, key: str, initial: str | None, update: str | None) -> Any:
        """Prompt set `key`, the first summary's and the later summaries' prompts replaced when given."""

    def regenerate(self, chain: Any, summarize: Summarize, prompts: Any,
                   on_answer: Callable[[], None] | None) -> Any:
        """Regenerate `chain`'s compactions in order, each summary chained into the next request."""

    def records(self, result: Any) -> list[dict[str, Any]]:
        """The new file's JSON lines, in the agent's own format."""

    def reply_text(self, content: list[Any]) -> str:
        """What the agent keeps of a reply's content (blocks, or a Responses call's output items)."""


class Rewriter(Protocol):
    """The agent's part of `resummarize` (in `policies/`; the `REWRITER` of the module
    `replay.registry.SUMMARIZERS` names): the one driver (`replay.resummarize`) replays the input on
    the one walk and asks the rewriter, for a chain (`replay.resummarize.Chain`: the input, its path,
    the setting's run with the agent's own simulated path), what each compaction sends, what is kept of
    the answer and the file written back. It reads the run's compactions (`SimCompaction`) as values."""

    what: str
    request_type: type

    def unsupported(self, source: Any) -> str | None:
        """None when `source` can be resummarized, else why not."""

    def native(self, source: Any) -> Any:
        """What the rewriter reads of the input besides its transcript (Codex: the rollout's lines)."""

    def label(self, settings: Any) -> str:
        """A setting's name in output file names (`w16000-r3000-k4000-pi-0`)."""

    def requests_of(self, chain: Any) -> int:
        """How many requests regenerating `chain` sends at most."""

    def prompts_key(self, policy: str) -> str | None:
        """The prompt set of `policy`'s requests (None: the agent's prompt cannot be replaced)."""

    def prompts(self, key: str, initial: str | None, update: str | None) -> Any:
        """Prompt set `key`, the first and later summaries' prompts replaced when given."""

    def request_key(self, request: Any) -> Any:
        """A request as JSON values: two requests with equal keys get one answer."""

    def rewrite(self, chain: Any, p: Any, prompts: Any) -> list[dict[str, Any]]:
        """One pass over `chain.run`'s compactions in order: each request asked through `p.ask`, each
        compaction given to `p.done` (which may stop the pass); the new file's records."""

    def given(self, regenerated: Any, truth: Any) -> Any:
        """A regenerated compaction's summary as the walk replays it again (`GivenSummary`; None: the
        replay's own)."""

    def reply_text(self, content: list[Any]) -> str:
        """What the agent keeps of a reply's content."""


def estimated_tokens(text: str) -> int:
    """chars/4 of a text (UTF-16 units, Pi's own estimate), for the request/answer sizes reported."""
    return math.ceil(utf16_len(text) / 4)


__all__ = ["Answer", "ResponsesRequest", "Rewriter", "Summarize", "SummarizerError", "Summarizer", "SummaryGrid",
           "estimated_tokens"]
