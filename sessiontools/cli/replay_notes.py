"""Options of `replay` that applied to no file: said after the run, never accepted silently.

Each setting option sets one key of a run's settings (Pi's reserve and keep, Claude Code's
auto-compact percentage and max output, Codex's auto-compact limit). Which policies read it is the
policies' own data: the key is one of the policy's settings axes (`Policy.axes`) or one of the
options its grid takes (`Policy.grid_extras`, where it sets the key to the value given). When no replayed file ran under such a policy, a note
says the option was ignored; a `--keep-recent` not below a Pi run's window (Pi would keep the whole
context) is said too. Files of a model the catalogue lacks that their agent's rule gave a window
anyway (Claude Code: 200k, 1M for `[1m]`, whatever the model) are said as well: replayed, not refused,
cost unknown. So are runs whose threshold is above their window, which an agent's own rule can give
(Claude Code's auto-compact window is at least 100,000, whatever W): a request can then overflow W
before the threshold is reached.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

#: option -> (the key it sets in a run's settings, the `Policy.grid_extras` option and a value of it)
OPTION_KEYS: dict[str, tuple[str, tuple[str, Any] | None]] = {
    "--reserve": ("reserve_tokens", None),
    "--keep-recent": ("keep_recent_tokens", None),
    "--autocompact-pct": ("autocompact_pct", ("autocompact_pcts", [50])),
    "--max-output-tokens": ("max_output_tokens", ("max_output_tokens", 32000)),
    "--auto-compact-limit": ("auto_compact_limit", ("limits", [100000])),
}


@cache
def option_policies(option: str) -> tuple[str, ...]:
    """The policies whose rule reads `option` (in `--policy` order), from the policies' declarations."""
    from sessiontools.policies.registry import POLICIES, make_policy

    key, extra = OPTION_KEYS[option]
    out = []
    for name in POLICIES:
        policy = make_policy(name)
        keys = {a.key for a in policy.axes}
        if extra is not None:
            keys |= {k for setting in policy.grid_extras(**{extra[0]: extra[1]}) for k, v in setting if v is not None}
        if key in keys:
            out.append(str(name))
    return tuple(out)


def given_options(reserve: str, keep_recent: str, autocompact_pct: str | None, max_output_tokens: int | None,
                  auto_compact_limit: str | None) -> list[str]:
    """The setting options given on the command line (a default value counts as not given)."""
    from sessiontools.names import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS

    return [o for o, on in (("--reserve", reserve != str(DEFAULT_RESERVE_TOKENS)),
                            ("--keep-recent", keep_recent != str(DEFAULT_KEEP_RECENT_TOKENS)),
                            ("--autocompact-pct", autocompact_pct is not None),
                            ("--max-output-tokens", max_output_tokens is not None),
                            ("--auto-compact-limit", auto_compact_limit is not None)) if on]


def ignored_option_notes(records: Sequence[Any], given: Iterable[str]) -> list[str]:
    """One note per option given that no replayed run's policy reads, and one for Pi runs whose
    keepRecentTokens is not below their window."""
    policies = {r.settings.policy.value for r in records}
    notes = []
    for opt in given:
        wanted = option_policies(opt) if opt in OPTION_KEYS else ()
        if wanted and not policies & set(wanted):
            notes.append(f"note: {opt} was ignored: it applies to {', '.join(wanted)}, and the files were replayed "
                         f"under {', '.join(sorted(policies))}")
    if "--keep-recent" in given:
        over = [r for r in records if r.settings.policy in option_policies("--keep-recent")
                and r.settings.keep_recent_tokens >= r.settings.context_window]
        if over:
            keep = sorted({r.settings.keep_recent_tokens for r in over})
            notes.append(f"note: --keep-recent {', '.join(f'{k:,}' for k in keep)} is not below the window of "
                         f"{len(over)} run(s): {_agents_of(over)} would keep the whole context, so those "
                         "compactions summarise nothing")
    return notes


def run_notes(records: Sequence[Any], given: Iterable[str], windows_given: bool) -> list[str]:
    """Every note `replay` prints after its runs, in order: options the runs ignored, models the
    catalogue lacks, thresholds above the window."""
    return (ignored_option_notes(records, given) + uncatalogued_model_notes(records, windows_given)
            + threshold_above_window_notes(records))


def _agents_of(records: Sequence[Any]) -> str:
    """The agents whose rules the runs follow, as people name them ("Pi")."""
    from sessiontools.policies.registry import OWN_AGENT
    from sessiontools.read.agents import AGENT_LABELS

    return " and ".join(sorted({AGENT_LABELS[OWN_AGENT[r.settings.policy]] for r in records}))


def uncatalogued_model_notes(records: Sequence[Any], windows_given: bool) -> list[str]:
    """One note for the runs whose model the catalogue lacks, replayed at the window their agent's rule
    gives (no `--context-window` given): which models, at which windows; cost unknown."""
    if windows_given:
        return []
    from sessiontools.replay.catalog import lookup

    missing: dict[str, set[int]] = {}
    files: set[str] = set()
    priced = False
    for r in records:
        provider, _, model = str(r.model or "").partition("/")
        if model and lookup(provider or None, model) is None:
            missing.setdefault(f"{provider}/{model}", set()).add(r.settings.context_window)
            files.add(str(r.session))
            priced = priced or r.metrics.cost is not None
    if not missing:
        return []
    cost = ("priced by the agents' price list where it has the model, else unknown (-), never $0" if priced
            else "their cost is unknown (-), never $0")
    models = ", ".join(sorted(missing)[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    windows = ", ".join(f"{w:,}" for w in sorted(set().union(*missing.values())))
    return [f"note: {len(files)} file(s) of model(s) the catalogue lacks ({models}) were replayed at the window "
            f"their agent's own rule gives (the one it recorded, or its CLI's default whatever the model: {windows}); "
            + cost]


def threshold_above_window_notes(records: Sequence[Any]) -> list[str]:
    """One note for the runs whose threshold (the one their policy derived from the settings) is above
    their window: which settings, and what it means for the run."""
    over = [r for r in records if (t := r.settings.value("threshold")) is not None and t > r.settings.context_window]
    if not over:
        return []
    pairs = sorted({(r.settings.context_window, r.settings.value("threshold")) for r in over})
    shown = "; ".join(f"W {w:,}: threshold {t:,}" for w, t in pairs[:3])
    more = f" and {len(pairs) - 3} more" if len(pairs) > 3 else ""
    return [f"note: the threshold is above the window in {len(over)} run(s) ({shown}{more}), as {_agents_of(over)}'s "
            "own rule sets it for these settings: a request can overflow W before the threshold is reached"]
