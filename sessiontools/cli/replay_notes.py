"""Options of `replay` that applied to no file: said after the run, never accepted silently.

Each setting option belongs to some policies (Pi's reserve and keep, Claude Code's auto-compact
percentage and max output, Codex's auto-compact limit). When no replayed file ran under a policy
the option belongs to, a note says it was ignored; a `--keep-recent` not below a Pi run's window
(Pi would keep the whole context) is said too. The table below is data: when the policies declare
their settings axes themselves (`policies/`), it should be read from there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: option -> the policies whose rule reads it
OPTION_POLICIES: dict[str, tuple[str, ...]] = {
    "--reserve": ("pi-0", "pi-1"),
    "--keep-recent": ("pi-0", "pi-1"),
    "--autocompact-pct": ("claude-code",),
    "--max-output-tokens": ("claude-code", "claude-code-reactive"),
    "--auto-compact-limit": ("codex",),
}


def given_options(reserve: str, keep_recent: str, autocompact_pct: str | None, max_output_tokens: int | None,
                  auto_compact_limit: str | None) -> list[str]:
    """The setting options given on the command line (a default value counts as not given)."""
    from sessiontools.names import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS

    return [o for o, on in (("--reserve", reserve != str(DEFAULT_RESERVE_TOKENS)),
                            ("--keep-recent", keep_recent != str(DEFAULT_KEEP_RECENT_TOKENS)),
                            ("--autocompact-pct", autocompact_pct is not None),
                            ("--max-output-tokens", max_output_tokens is not None),
                            ("--auto-compact-limit", auto_compact_limit is not None)) if on]


def ignored_option_notes(records: Sequence[Mapping[str, Any]], given: Iterable[str]) -> list[str]:
    """One note per option given that no replayed run's policy reads, and one for Pi runs whose
    keepRecentTokens is not below their window."""
    policies = {r["settings"]["policy"] for r in records}
    notes = []
    for opt in given:
        wanted = OPTION_POLICIES.get(opt, ())
        if wanted and not policies & set(wanted):
            notes.append(f"note: {opt} was ignored: it applies to {', '.join(wanted)}, and the files were replayed "
                         f"under {', '.join(sorted(policies))}")
    if "--keep-recent" in given:
        over = [r for r in records if r["settings"]["policy"] in OPTION_POLICIES["--keep-recent"]
                and r["settings"]["keep_recent_tokens"] >= r["settings"]["context_window"]]
        if over:
            keep = sorted({r["settings"]["keep_recent_tokens"] for r in over})
            notes.append(f"note: --keep-recent {', '.join(f'{k:,}' for k in keep)} is not below the window of "
                         f"{len(over)} run(s): Pi would keep the whole context, so those compactions summarise "
                         "nothing")
    return notes
