"""Any agent's loaded session (`read.sources.load_source`) as the neutral `Transcript`.

One registry maps an agent to its adapter; nothing else in the package asks which agent it is
looking at. Options that only make sense for some agents (`leaf`/`all_leaves` pick Pi branches,
`rule_version` the version of its agent's reading rules a file is read as, Pi's 0.x or 1.x) are
passed to every adapter, which ignores what it has no use for.

`OWN_INSPECT` names the agents whose reader keeps more than the transcript holds, with the
`inspect` that reads their session itself (the others are inspected from their transcript).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sessiontools.read.agents import Agent

if TYPE_CHECKING:  # (Pi's inspect reads no transcript: its ten dataclasses are ~30M instructions to build)
    from sessiontools.transcript.model import Transcript


def _pi(source: Any, *, leaf: str | None, all_leaves: bool, rule_version: str | None) -> Transcript:
    from sessiontools.transcript.pi.neutral import pi_transcript

    return pi_transcript(source, leaf=leaf, all_leaves=all_leaves, pi_version=rule_version)


def _codex(source: Any, *, leaf: str | None, all_leaves: bool, rule_version: str | None) -> Transcript:
    from sessiontools.read.codex.summary import CodexSummary

    if isinstance(source, CodexSummary):  # (the C's summary of a rollout read for `inspect`)
        from sessiontools.transcript.codex_summary import summary_transcript

        return summary_transcript(source)
    from sessiontools.transcript.codex import codex_transcript

    return codex_transcript(source)


def _claude_code(source: Any, *, leaf: str | None, all_leaves: bool, rule_version: str | None) -> Transcript:
    from sessiontools.transcript.claude_code import claude_transcript

    return claude_transcript(source)  # with its subagent files (`source.subagents`) as sidechains


ADAPTERS: dict[Agent, Callable[..., Transcript]] = {
    Agent.PI: _pi,
    Agent.CODEX: _codex,
    Agent.CLAUDE_CODE: _claude_code,
}


def transcript_of(
    source: Any, *, leaf: str | None = None, all_leaves: bool = False, rule_version: str | None = None
) -> Transcript:
    """The neutral transcript of a loaded session of any agent."""
    return ADAPTERS[source.agent](source, leaf=leaf, all_leaves=all_leaves, rule_version=rule_version)


def _pi_inspect(source: Any, *, leaf: str | None = None, all_leaves: bool = False,
                rule_version: str | None = None) -> dict[str, Any]:
    from sessiontools.transcript.pi.inspect import inspect_session

    return inspect_session(source, leaf=leaf, all_leaves=all_leaves, pi_version=rule_version)


OWN_INSPECT: dict[Agent, Callable[..., dict[str, Any]]] = {
    Agent.PI: _pi_inspect,
}


def _pi_estimate_source(source: Any, leaf: str | None, all_leaves: bool, rule_version: str | None) -> Any:
    from sessiontools.transcript.pi.estimate import pi_source

    return pi_source(source, leaf, all_leaves, rule_version)


#: The agents whose reader keeps more than the transcript estimate-error needs (Pi: the session
#: tree, for context edits and resets), each with the maker of its `transcript.source.Source`; the
#: others are read through `ADAPTERS`.
ESTIMATE_SOURCES: dict[Agent, Callable[[Any, str | None, bool, str | None], Any]] = {
    Agent.PI: _pi_estimate_source,
}


def load_transcript(path: Any, **options: Any) -> Transcript:
    """Read a file with its agent's reader and build its transcript."""
    from sessiontools.read.sources import load_source

    return transcript_of(load_source(path), **options)
