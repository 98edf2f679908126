"""Replay output: rich tables and headlines of typed run records (`replay.run_document.RunRecord`, read
by attribute); the figures are `report.replay_figures`, the DataFrames `replay.frames`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Group

from sessiontools.replay.invariants import PricedTotal, priced_total
from sessiontools.report.folder import UNKNOWN_AGENT
from sessiontools.report.layout import Column, FittedTable, short_names, tokens
from sessiontools.report.text import safe_text, strip_control

if TYPE_CHECKING:
    from sessiontools.replay.metrics import RunMetrics
    from sessiontools.replay.records import RecordedMatch, ReplaySettings
    from sessiontools.replay.run_document import RunRecord, TruthRecord


def _k(n: float) -> str:
    return f"{n / 1000:.1f}k" if n >= 10_000 else f"{n:,.0f}"


def _setting(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 and n >= 1000 else _k(n)


def setting_legend(policies: Sequence[str]) -> str:
    """What the setting cell shows for each policy present, from its axes (`Policy.axes`): the window,
    its token axes (else its threshold T), its percentage axis after @; and how T follows (W - reserve
    where the policy has a reserve axis, else the policy's own T)."""
    from sessiontools.replay.registry import policy_axes

    shapes: dict[str, list[str]] = {}
    for p in policies:
        axes = policy_axes(p)[1:]
        toks = [a.label for a in axes if a.unit == "tokens"]
        pct = "".join(f" @{a.label}" for a in axes if a.unit != "tokens")
        shape = "W/" + ("/".join(toks) if toks else "T") + pct
        if toks and not any(a.key == "reserve_tokens" for a in axes):
            shape += ", or W/T at its default"
        shapes.setdefault(shape, []).append(p)
    parts = "; ".join(f"{', '.join(ps)}: {shape}" for shape, ps in shapes.items())
    return f"the window W and the policy's own axes ({parts}; tokens, 16k = 16,000)"


def _threshold_legend(policies: Sequence[str]) -> str:
    from sessiontools.replay.registry import policy_axes

    reserve = [p for p in policies if any(a.key == "reserve_tokens" for a in policy_axes(p))]
    own = [p for p in policies if p not in reserve]
    words = ([f"W - reserve for {', '.join(reserve)}"] if reserve else []) + \
        ([f"the policy's own for {', '.join(own)}"] if own else [])
    return f"compactions while truth <= the threshold T ({'; '.join(words)})"


def replay_columns(policies: Sequence[str]) -> tuple[Column, ...]:
    """The replay table's columns, their legends written for the policies of its runs."""
    return (
        Column("setting", setting_legend(policies), "left"),
        Column("pol.", f"policy: whose compaction rule replayed the file ({', '.join(dict.fromkeys(policies))})",
               "left", optional=True),
        Column("comp", "compactions"),
        Column("early", _threshold_legend(policies)),
        Column("late", "check points over T without a compaction"),
        Column("mid", "mid-run crossings: requests inside a run over T"),
        Column("ovf", "overflows: requests over W"),
        Column("thr", "thrash: compactions after which the next check point is still over T"),
        Column("peak tok", "largest truth (tokens)", optional=True),
        Column("billed tok", "billed input tokens: uncached input + cache reads + cache writes, summaries included"),
        Column("cache rd tok", "prompt tokens read from the provider's cache (billed at the cache-read price)",
               optional=True),
        Column("cost $", "agent + summarisation requests, priced per token class with prompt caching; "
               "- = no price known"),
        Column("rec.", "recorded compactions matched / recorded, +extra simulated (rec. match)"),
    )


def run_label(r: RunRecord, names: dict[str, str], multi_leaf: bool) -> str:
    """A run's session name, with its leaf when one file gives several paths (--all-leaves)."""
    name = names[r.session]
    return f"{name} @ leaf {r.leaf_id}" if multi_leaf and r.leaf_id else name


def _axes(policy: str) -> tuple[Any, ...]:
    """The policy's settings axes after the window (`Policy.axes`: Pi reserve and keep, Codex its
    limit, Claude Code its percentage): data, so no policy's name is tested here."""
    from sessiontools.replay.registry import policy_axes

    return policy_axes(policy)[1:]


def _axis_value(a: Any, v: Any) -> str:
    return f"{v:g}%" if a.unit == "percent" else _setting(v)


def setting_cell(policy: str, value: Callable[[str], Any]) -> str:
    """W/R/K (Pi), W/limit (Codex), W/T @P% (Claude Code): the window, then the policy's token axes
    that are set, else its threshold; a percentage axis follows with @. `value(key)`: the setting's
    value of a column (`ReplaySettings.value`, or a row of `replay.frames.runs_frame`: the same keys)."""
    axes = _axes(policy)
    vals = {a.key: value(a.key) for a in axes}
    toks = [_setting(vals[a.key]) for a in axes if a.unit == "tokens" and vals[a.key] is not None]
    pct = "".join(f" @{_axis_value(a, vals[a.key])}" for a in axes if a.unit != "tokens" and vals[a.key] is not None)
    return "/".join([_setting(value("context_window")), *(toks or [_setting(value("threshold"))])]) + pct


def settings_cell(s: ReplaySettings) -> str:
    """`setting_cell` of a run's settings."""
    return setting_cell(s.policy, s.value)


def money(v: float) -> str:
    """Dollars: cents from $1 on, else four decimals."""
    return f"${v:.2f}" if v >= 0.995 else f"${v:.4f}"


def cost_split(m: RunMetrics) -> str:
    """A run's cost as the agent's requests + the summaries' (`-` when no price is known)."""
    if m.cost is None or m.cost_agent is None or m.cost_summarization is None:
        return "-"
    return f"{money(m.cost)} = {money(m.cost_agent)}+{money(m.cost_summarization)}"


def match_cell(rm: RecordedMatch) -> str:
    """Recorded compactions matched / recorded, +extra simulated ones."""
    return f"{rm.matched}/{rm.recorded}" + (f" +{rm.extra}" if rm.extra else "")


def replay_table(records: Sequence[RunRecord]) -> Group:
    """One row per (session, setting): what Pi would have done (all metrics are in --format json)."""
    names = short_names([r.session for r in records])
    leaves: dict[str, set[Any]] = {}
    for r in records:
        leaves.setdefault(r.session, set()).add(r.leaf_id)
    policies = list(dict.fromkeys(r.settings.policy.value for r in records))
    t = FittedTable("replay: one row per setting (truth = provider-counted prompt tokens)", replay_columns(policies))
    for r in records:
        m = r.metrics
        t.add_row(
            settings_cell(r.settings),
            r.settings.policy.value,
            str(m.compactions),
            str(m.early),
            str(m.late),
            str(m.mid_run_crossings),
            str(m.overflows),
            str(m.thrash),
            tokens(m.peak_truth_tokens),
            tokens(m.billed_input_tokens),
            tokens(m.cache_read_tokens),
            cost_split(m),
            match_cell(r.recorded_match),
            group=run_label(r, names, len(leaves[r.session]) > 1),
        )
    t.notes.extend(truth_counter_notes(records))
    parts: list[Any] = [t]
    if len(records) == 1 and records[0].compactions:
        c = FittedTable("compactions of this setting", COMPACTION_COLUMNS)
        for k, comp in enumerate(records[0].compactions, start=1):
            flags = " ".join(f for f, on in (("early", comp.early), ("thrash", comp.thrash),
                                             ("split", comp.is_split_turn), ("=rec", comp.matches_recorded))
                             if on)
            c.add_row(
                str(k), comp.reason, _entry(comp.parent_entry_id), _entry(comp.first_kept_entry_id),
                f"{comp.tokens_before:,}", f"{comp.truth_at_trigger:,}", flags or "-",
                str(comp.messages_summarized), f"{comp.kept_tokens:,}",
                f"{comp.summary_tokens:,} {comp.summary_source}",
                "-" if comp.cache_bust_cost is None else money(comp.cache_bust_cost),
            )
        parts.append(c)
    return Group(*parts)


def truth_counter_notes(records: Sequence[RunRecord]) -> list[str]:
    """The truth model's counter of each session (`truth_model.counter`, chars/4 when absent) and, for
    one session, why `--truth-tokenizer auto` chose it (`truth_model.counter_choice`); for several,
    the count of sessions per counter."""
    first: dict[str, TruthRecord] = {}
    for r in records:
        first.setdefault(r.session, r.truth_model)
    if not first:
        return []
    from sessiontools.replay.counter_choice import counter_label

    names = [counter_label(tm.counter) for tm in first.values()]
    if len(first) == 1:
        (tm,) = first.values()
        why = tm.counter_choice.note if tm.counter_choice is not None else None
        return [strip_control(f"truth counter: {names[0]}" + (f" (auto: {why})" if why else ""))]
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    chosen = any(tm.counter_choice is not None for tm in first.values())
    return [strip_control(f"truth counter{' (auto, per session)' if chosen else ''}: "
                      + ", ".join(f"{n} {k} session(s)" for n, k in counts.items())
                      + ("; why: --format json, truth_model.counter_choice" if chosen else ""))]


def _entry(entry_id: str | None) -> str:
    """An entry id for a cell: "-" where the compaction has none (a policy that keeps no message)."""
    return "-" if entry_id is None else safe_text(entry_id)


COMPACTION_COLUMNS = (
    Column("#", "compaction number"),
    Column("why", "threshold (the policy's own count over T), overflow (recovery after a rejected request) or "
           "user (recorded manual or hook compaction)", "left"),
    Column("after", "entry id the compaction follows", "left"),
    Column("first kept", "first entry id kept verbatim (-: the policy keeps no recorded message)", "left"),
    Column("before tok", "the tokens before the compaction as the policy reports them"),
    Column("truth tok", "provider-counted prompt tokens at the trigger"),
    Column("flags", "early, thrash, split (a turn is split), =rec (same as a recorded compaction)", "left"),
    Column("msgs", "messages summarised", optional=True),
    Column("kept tok", "tokens kept verbatim", optional=True),
    Column("summary tok", "size of the new summary and where it came from (recorded or model)", "left",
           optional=True),
    Column("bust $", "cache-bust cost: what the next request paid over a cache hit", optional=True),
)


def _setting_key(s: ReplaySettings, keys: Sequence[str], window: bool = True) -> tuple[Any, ...]:
    """What a user varies: the window and the settings axes `keys` (the policies' own, `Policy.axes`),
    `_ANY` for an axis the run's policy does not read (Claude Code's reactive rule reads no percentage:
    its run is the same at every one). Not the policy or what follows from it and the file (Pi's
    version, Claude Code's recorded auto-compact switch, the threshold)."""
    own = {a.key for a in _axes(s.policy)}
    w = (s.context_window,) if window else ()
    return (*w, *(s.value(k) if k in own else _ANY for k in keys))


#: An axis a run's policy does not read, in `_setting_key`: the run belongs to every value of it.
_ANY = object()


def _matches(key: tuple[Any, ...], other: tuple[Any, ...]) -> bool:
    return all(a is _ANY or b is _ANY or a == b for a, b in zip(key, other, strict=True))


def setting_words(s: ReplaySettings, window: bool = True) -> str:
    """A setting as people read it ('W 200,000, reserve 16,384, keep 20,000'): the window and the axes set."""
    w = f"W {s.context_window:,}" if window else "each model's window"
    words = [f"{a.label} {v:,}" if a.unit == "tokens" else f"{a.label} {v}%"
             for a in _axes(s.policy) if (v := s.value(a.key)) is not None]
    if not words and window and s.shown_threshold is not None:
        words = [f"the policy's default threshold {s.shown_threshold:,}"]
    return ", ".join([w, *words])


def runs_cost(rs: Sequence[RunRecord], key: str = "cost") -> PricedTotal:
    """A cost metric (`cost`, `cost_agent`, `cost_summarization`) totalled over runs (rule 10 of
    `replay.invariants`: how many were priced; an unknown cost is no 0)."""
    return priced_total(r.metrics.value(key) for r in rs)


def _score(rs: Sequence[RunRecord]) -> tuple[float, ...]:
    """Fewest overflows, then the most runs priced (a total over fewer runs is not cheaper), then the
    cost of those priced, then billed input tokens."""
    cost = runs_cost(rs)
    return (sum(r.metrics.overflows for r in rs), -cost.priced, cost.total if cost.total is not None else 0.0,
            sum(r.metrics.billed_input_tokens for r in rs))


def priced_words(total: PricedTotal) -> str:
    """A total cost in words, saying how many runs had a price (an unknown cost is not $0)."""
    if total.total is None:
        return "no price known"
    dollars = f"${total.total:.2f}"
    return dollars if total.complete else f"{dollars} over the {total.priced} of {total.runs} runs with a price"


def _totals(rs: Sequence[RunRecord]) -> str:
    ovf = sum(r.metrics.overflows for r in rs)
    billed = sum(r.metrics.billed_input_tokens for r in rs)
    return (f"{int(ovf)} overflow(s), {tokens(billed)} billed input tokens, {priced_words(runs_cost(rs))}; "
            f"{sum(r.recorded_match.matched for r in rs)}/{sum(r.recorded_match.recorded for r in rs)} "
            "recorded compactions reproduced")


def _agent_headline(records: Sequence[RunRecord]) -> str:
    """The best setting among those every session was replayed under (fewest overflows, then cost),
    with the window if every session shares it, else each model's own; the one setting's result; or,
    when no setting is common to every session, the totals of every run."""
    sessions = {r.session for r in records}
    keys = list(dict.fromkeys(a.key for p in dict.fromkeys(r.settings.policy for r in records) for a in _axes(p)))
    for window in (True, False):
        by: dict[tuple[Any, ...], list[RunRecord]] = {}
        for r in records:
            by.setdefault(_setting_key(r.settings, keys, window), []).append(r)
        # A setting is a key with every axis given (when no run has them all: each key); a run of a policy
        # that does not read an axis is in each setting that matches it on the axes it reads. Each
        # group's own runs come first (its words are the first run's setting).
        named = [k for k in by if _ANY not in k] or list(by)
        groups = [[*by[k], *(r for other, rs in by.items() if other != k and _matches(k, other) for r in rs)]
                  for k in named]
        shared = [rs for rs in groups if {r.session for r in rs} == sessions]
        if shared:
            best = min(shared, key=_score)
            what = f"{setting_words(best[0].settings, window)}: {_totals(best)}"
            if len(named) == 1:
                return f"{len(records)} run(s) at {what}"
            return f"best setting in this grid (fewest overflows, then cost): {what}"
    return f"{len(records)} run(s) of {len(sessions)} session(s), each at its own settings (none common to all): {_totals(records)}"


def replay_headline(records: Sequence[RunRecord]) -> str:
    """One line per agent: the best setting of its grid, the one setting's result, or the totals."""
    agents: dict[str, list[RunRecord]] = {}
    for r in records:
        agents.setdefault(r.agent or UNKNOWN_AGENT, []).append(r)
    if len(agents) == 1:
        return f"replay: {_agent_headline(records)}"
    return "\n".join(f"replay ({agent}): {_agent_headline(rs)}" for agent, rs in agents.items())
