"""The report's replay section for any number of sessions: the answer first, details on demand.

- totals per setting (and per agent where several agents were replayed): the same rows as the
  terminal's folder answer (`report.replay_totals`, from `replay.frames.runs_frame`), with how many
  runs were priced (an unknown cost is not $0);
- the worst sessions (each session ranked by its worst run: overflows, then late check points,
  then billed tokens), every setting of each as a row, at most `SHOWN` sessions open;
- a heatmap per policy over that policy's own settings (rows: sessions, worst first; columns: the
  settings it ran under; colour: billed input tokens within the row), the worst sessions open;
- every run and every timeline in closed `<details>`, worst session first.

A report of 136 sessions showed 408 table rows, a heatmap of 136 columns cut off at 1280 px and
136 timelines, all open (about 60,000 px of the page).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sessiontools.report import html as h
from sessiontools.report.folder import UNKNOWN_AGENT, folder_names
from sessiontools.report.html import SHOWN, collapsed
from sessiontools.report.layout import dollars, tokens
from sessiontools.report.replay import match_cell, priced_words, runs_cost, setting_legend, settings_cell
from sessiontools.report.svg import TIMELINE_LEGEND, heat_color, legend_html, timeline_svg

if TYPE_CHECKING:
    from sessiontools.replay.run_document import RunRecord, Timeline


#: Per run (the policy and mid-run crossings are in the totals and the JSON: a policy name such as
#: claude-code-reactive made the table wider than 1280 px).
_RUN_COLUMNS = ["session", "setting", "compactions", "early", "late", "overflows", "thrash", "peak tokens",
                "billed input tokens", "cost", "rec. match"]


def _run_row(r: RunRecord, name: str) -> list[Any]:
    m = r.metrics
    return [name, settings_cell(r.settings), m.compactions, m.early, m.late,
            m.overflows, m.thrash, tokens(m.peak_truth_tokens), tokens(m.billed_input_tokens),
            "-" if m.cost is None else f"${dollars(m.cost)}", match_cell(r.recorded_match)]


def _totals(runs: Sequence[RunRecord]) -> str:
    from sessiontools.replay.frames import runs_frame
    from sessiontools.report.replay_totals import setting_label, totals_frame

    agents = {r.session: r.agent or UNKNOWN_AGENT for r in runs}
    several = len(set(agents.values())) > 1
    totals = totals_frame(runs_frame(list(runs)), agents if several else None)
    rows = []
    for t in totals.iter_rows(named=True):
        cost = "-" if t["cost"] is None else f"${dollars(t['cost'])}" + ("" if t["priced"] == t["runs"] else "*")
        rows.append([*([t["_group"]] if several else []), setting_label(t), t["policy"], f"{t['sessions']:,}",
                     f"{t['compactions']:,}", f"{t['early']:,}", f"{t['late']:,}", f"{t['overflows']:,}",
                     f"{t['thrash']:,}", tokens(t["billed_input_tokens"]), cost, f"{t['priced']}/{t['runs']}"])
    heads = [*(["agent"] if several else []), "setting", "policy", "sessions", "compactions", "early", "late",
             "overflows", "thrash", "billed input tokens", "cost", "priced runs"]
    return h._table(heads, rows, left=3 if several else 2)


def _worst_first(runs: Sequence[RunRecord]) -> list[str]:
    """Sessions ordered by their worst run: overflows, then late check points, then billed tokens."""
    score: dict[str, tuple[float, float, float]] = {}
    for r in runs:
        m = r.metrics
        key = (m.overflows, m.late, m.billed_input_tokens)
        score[r.session] = max(score.get(r.session, key), key)
    return sorted(score, key=lambda s: (tuple(-v for v in score[s]), s))


def _heatmaps(runs: Sequence[RunRecord], order: Sequence[str], names: Mapping[str, str]) -> str:
    """Per policy: sessions x that policy's settings, billed input tokens coloured within each row."""
    out = []
    for policy in dict.fromkeys(r.settings.policy for r in runs):
        rs = [r for r in runs if r.settings.policy == policy]
        settings = list(dict.fromkeys(settings_cell(r.settings) for r in rs))
        val: dict[tuple[str, str], float] = {(r.session, settings_cell(r.settings)): r.metrics.billed_input_tokens
                                             for r in rs}
        sessions = [s for s in order if any((s, st) in val for st in settings)]
        rows, styles = [], []
        for s in sessions:
            row_vals = [v for (ss, _), v in val.items() if ss == s]
            row, sty = [names[s]], [""]
            for st in settings:
                v = val.get((s, st))
                row.append("-" if v is None else tokens(v))
                sty.append("" if v is None else f"background:{heat_color(v, min(row_vals), max(row_vals))}")
            rows.append(row)
            styles.append(sty)
        table = h._table
        title = (f"<h3>Heatmap, {h._e(policy)}: billed input tokens per setting, each session's row coloured "
                 f"from its cheapest (light) to its dearest setting (dark); {len(sessions):,} session(s)</h3>")
        out.append(title + table(["session", *settings], rows[:SHOWN], styles=styles[:SHOWN]))
        if len(rows) > SHOWN:
            out.append(collapsed(f"every session's row ({len(rows):,}, worst first)",
                                 table(["session", *settings], rows, styles=styles)))
    return "".join(out)


def _timelines(timelines: Sequence[Timeline], order: Sequence[str], names: Mapping[str, str]) -> str:
    rank = {s: k for k, s in enumerate(order)}
    tls = sorted(timelines, key=lambda tl: rank.get(tl.session, len(rank)))
    figs = []
    for tl in tls:
        title = f"{names.get(tl.session, tl.session)}: threshold {tl.threshold:,}, window {tl.window:,}"
        figs.append(f"<figure><figcaption>{h._e(title)}</figcaption>{timeline_svg(tl, title)}</figure>")
    body = legend_html(TIMELINE_LEGEND) + '<div class="grid">' + "".join(figs) + "</div>"
    return "<h3>Timelines (first setting of the grid)</h3>" + collapsed(
        f"the timeline of each of {len(figs):,} session(s), worst first", body)


def replay_section(doc: Mapping[str, Any], timelines: Sequence[Timeline]) -> str:
    """Totals per setting, the worst sessions, the heatmaps, then every run and timeline collapsed.
    `doc`: the replay document of `cli.documents.report_documents`, its `runs` typed (`RunRecord`)."""
    runs: Sequence[RunRecord] = doc["runs"]
    if not runs:
        return '<p class="empty">No session could be replayed.</p>'
    order = _worst_first(runs)
    names = folder_names(order)
    out = [f"<h3>Totals per setting over {len(order):,} session(s)</h3>", _totals(runs)]
    policies = list(dict.fromkeys(r.settings.policy.value for r in runs))
    out.append(f'<p class="note">setting: {h._e(setting_legend(policies))}. cost: summed over the runs with a known '
               f"price (* = not every run priced); over every run: {h._e(priced_words(runs_cost(runs)))}.</p>")
    by_session: dict[str, list[RunRecord]] = {}
    for r in runs:
        by_session.setdefault(r.session, []).append(r)
    worst = [_run_row(r, names[s]) for s in order[:SHOWN] for r in by_session[s]]
    out.append(f"<h3>Worst sessions (overflows, then late check points, then billed tokens), "
               f"{min(SHOWN, len(order))} of {len(order):,}</h3>")
    out.append(h._table(_RUN_COLUMNS, worst, left=2))
    if len(order) > SHOWN:
        every = [_run_row(r, names[s]) for s in order for r in by_session[s]]
        out.append(collapsed(f"every run ({len(every):,} of {len(order):,} sessions, worst first)",
                             h._table(_RUN_COLUMNS, every, left=2)))
    out.append('<p class="note">rec. match = recorded compactions reproduced / recorded, +extra simulated ones '
               "(a setting far from the recorded one rarely matches). Names are relative to the folder the "
               "sessions share.</p>")
    out.append(_heatmaps(runs, order, names))
    if timelines:
        out.append(_timelines(timelines, order, names))
    return "".join(out)
