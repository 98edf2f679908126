"""What every folder answer shares: `--group-by` labels, names that fit, the worst-first cut.

A folder of sessions is answered in one screen (issue 26): totals per setting / estimator / section
and group first, then the few worst sessions, then one line on how to see the rest. The commands
differ in what they total; the grouping, the naming and the cut are here, once.

Groups (`--group-by`): `agent` (pi, codex, claude-code), `model` (provider/model as recorded),
`provider`, `project` (the session's working directory), `day`, `week` (ISO week, `2026-W10`) and
`month` of the session's start (UTC, as the file records it). Agent, project and times come from
the first lines of each file (`read.facts`), the model from the command's own result.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

from sessiontools.names import GROUP_BY
from sessiontools.read.facts import SessionFacts, session_facts

__all__ = ["GROUP_BY", "folder_names", "group_label", "middle", "more_line", "session_groups"]
#: What a folder answer shows of its worst sessions before "... and N more".
WORST_SHOWN = 5
#: The widest a session or project name may be in a folder table (longer ones lose their middle).
NAME_WIDTH = 36
ELLIPSIS = "…"
NO_GROUP = "(unknown)"


def middle(text: str, width: int = NAME_WIDTH) -> str:
    """`text` in at most `width` characters, its middle replaced by an ellipsis (the start says where,
    the end says which: a session's date and id, a project's last directory)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    tail = (width - 1) // 2 + (width - 1) % 2
    return text[: width - 1 - tail] + ELLIPSIS + text[-tail:]


def folder_names(paths: Iterable[str], width: int = NAME_WIDTH) -> dict[str, str]:
    """Each path relative to the folder the paths have in common (`.jsonl` dropped), shortened in the
    middle to `width`. Two files keep distinct names whenever the middle cut leaves them so."""
    unique = list(dict.fromkeys(paths))
    norm = {p: p.replace("\\", "/") for p in unique}
    if len(unique) == 1:
        rel = {unique[0]: posixpath.basename(norm[unique[0]])}
    else:
        try:
            common = posixpath.commonpath(list(norm.values()))
        except ValueError:  # absolute and relative paths mixed
            common = ""
        rel = {p: (n[len(common):].lstrip("/") if common else n) or n for p, n in norm.items()}
    out = {}
    for p, r in rel.items():
        r = r[: -len(".jsonl")] if r.endswith(".jsonl") else r
        out[p] = middle(r, width)
    return out


def _week(day: str) -> str:
    try:
        y, w, _ = date.fromisoformat(day).isocalendar()
    except ValueError:
        return NO_GROUP
    return f"{y}-W{w:02d}"


def group_label(by: str, facts: SessionFacts | None, model: str | None) -> str:
    """The group of one session under `by` (one of `GROUP_BY`)."""
    if by == "model":
        return model or NO_GROUP
    if by == "provider":
        return (model or "").partition("/")[0] or NO_GROUP
    if facts is None:
        return NO_GROUP
    if by == "agent":
        return facts.agent
    if by == "project":
        return facts.cwd or NO_GROUP
    started = facts.started or ""
    if len(started) < 10:
        return NO_GROUP
    if by == "day":
        return started[:10]
    if by == "week":
        return _week(started[:10])
    if by == "month":
        return started[:7]
    raise ValueError(f"unknown grouping {by!r}; known: {', '.join(GROUP_BY)}")


#: The group of a record that does not say which agent wrote its file (no agent is assumed).
UNKNOWN_AGENT = "unknown"


def agent_of(record: Mapping[str, Any]) -> str:
    """The agent a JSON record (replay run, inspect report, session row) names, else `UNKNOWN_AGENT`."""
    agent = record.get("agent")
    return str(agent) if agent else UNKNOWN_AGENT


def session_groups(by: str, sessions: Iterable[str], models: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """Each session's group under `by`; the first lines of a file are read only when `by` needs them."""
    if by not in GROUP_BY:
        raise ValueError(f"unknown grouping {by!r}; known: {', '.join(GROUP_BY)}")
    models = models or {}
    out = {}
    for s in dict.fromkeys(sessions):
        facts = None if by in ("model", "provider") else session_facts(s)
        out[s] = group_label(by, facts, models.get(s))
    return out


def more_line(shown: int, total: int, what: str, how: str, every: str = "JSON/CSV have every row") -> str:
    """The one line under a worst-first cut: how many `what` (a plural) are not shown, how to see them."""
    rest = total - shown
    if rest <= 0:
        return f"all {total:,} {what} shown; {how}"
    return f"... and {rest:,} more {what}: {how}; {every}"
