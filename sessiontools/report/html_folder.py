"""The report's inspect, estimate-error and drift sections for a folder: aggregates first, the
worst sessions next, every session behind one collapsed `<details>` (issue 26).

A report of 136 sessions used to be ~51,000 px tall: one table row, one collapsible and one
timeline per session, all open. Here each section shows a screenful at most: the totals (per agent,
per estimator, per section), the ten worst sessions, and one closed `<details>` holding every
session's row (worst first) for whoever wants them. Names are relative to the common folder and
cut in the middle so the tables fit 1280 px. The replay section is built in `report/html_replay.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessiontools.read.agents import read_as
from sessiontools.report import html as h
from sessiontools.report.folder import agent_of, folder_names, middle
from sessiontools.report.html import SHOWN, collapsed
from sessiontools.report.layout import tokens
from sessiontools.report.svg import PALETTE, bars_svg, heat_color, legend_html, lines_svg


def _prompt(s: Mapping[str, Any]) -> int:
    u = s["usage"]
    return int(u["input"] + u["cache_read"] + u["cache_write"])


def _comps(s: Mapping[str, Any]) -> int:
    return len(s["compactions"]) + len(s.get("other_branch_compactions") or [])


def _cost_sum(ss: Sequence[Mapping[str, Any]]) -> str:
    """The recorded cost of some sessions; a session without a known cost adds nothing and is counted."""
    known = [s["cost"] for s in ss if s.get("cost") is not None]
    if not known:
        return "-"
    return f"${sum(known):.2f}" + ("" if len(known) == len(ss) else f" ({len(known)} of {len(ss)} priced)")


def inspect_section(doc: Mapping[str, Any]) -> str:
    """Totals per agent, the largest sessions, then every session (largest first) collapsed."""
    sessions = doc["sessions"]
    if not sessions:
        return '<p class="empty">No readable session.</p>'
    names = folder_names([s["path"] for s in sessions])
    by_agent: dict[str, list[Mapping[str, Any]]] = {}
    for s in sessions:
        by_agent.setdefault(agent_of(s), []).append(s)

    def agg(label: str, ss: Sequence[Mapping[str, Any]]) -> list[Any]:
        return [label, f"{len(ss):,}", f"{sum(s['requests'] for s in ss):,}", f"{sum(_comps(s) for s in ss):,}",
                f"{sum(s['overflow_errors'] for s in ss):,}", tokens(sum(_prompt(s) for s in ss)),
                tokens(sum(s["usage"]["output"] for s in ss)), _cost_sum(ss)]

    heads = ["agent", "sessions", "requests", "compactions", "overflow errors", "prompt tokens", "output tokens",
             "recorded cost"]
    out = [h._table(heads, [agg(a, by_agent[a]) for a in sorted(by_agent)], total=agg("all", sessions))]
    order = sorted(sessions, key=lambda s: (-_prompt(s), s["path"]))

    def row(s: Mapping[str, Any]) -> list[Any]:
        label = read_as(s) or str(s.get("format") or s.get("agent") or "-")
        return [names[s["path"]], label, f"{s['entries']:,}", f"{s['requests']:,}", _comps(s), s["leaves"],
                tokens(_prompt(s)), tokens(s["usage"]["output"]), "-" if s.get("cost") is None else f"${s['cost']:.3f}",
                f"{s['errors']} ({s['overflow_errors']})"]

    cols = ["session", "read as", "entries", "requests", "compactions", "leaves", "prompt tokens", "output tokens",
            "cost", "errors (overflow)"]
    out.append(f"<h3>Largest sessions (prompt tokens), {min(SHOWN, len(order))} of {len(order):,}</h3>")
    out.append(h._table(cols, [row(s) for s in order[:SHOWN]]))
    if len(order) > SHOWN:
        out.append(collapsed(f"every session ({len(order):,}, largest first)", h._table(cols, [row(s) for s in order])))
    with_comps = [s for s in order if _comps(s)]
    if with_comps:
        inner = "".join(h._session_details(s, names[s["path"]]) for s in with_comps)
        out.append(collapsed(f"compactions of the {len(with_comps):,} session(s) that have any", inner))
    out.append('<p class="note">Names are relative to the folder the sessions share. Compactions count every branch '
               "of a file. Prompt tokens = input + cache read + cache write, as recorded.</p>")
    return "".join(out)


def estimate_section(doc: Mapping[str, Any]) -> str:
    """Per estimator (the totals), the bars, per group, the sessions worst first (ten open, all collapsed)."""
    ests = doc["estimators"]
    if not doc["requests"]:
        return '<p class="empty">No request with usable usage.</p>'
    names = list(ests)
    rows = [[k, f"{v['n']:,}", h._pct(v["bias"], True), h._pct(v["mape"]), "-" if v["median_ratio"] is None
             else f"x{v['median_ratio']:.3f}", tokens(v["p50_abs"]), tokens(v["p95_abs"]), tokens(v["max_abs"])]
            for k, v in ests.items()]
    out = [h._table(["estimator", "requests", "bias", "MAPE", "median A/E", "p50 |E-A| tokens", "p95 |E-A| tokens",
                     "max |E-A| tokens"], rows)]
    series = [("MAPE %", [None if ests[k]["mape"] is None else ests[k]["mape"] * 100 for k in names]),
              ("bias %", [None if ests[k]["bias"] is None else ests[k]["bias"] * 100 for k in names])]
    out.append("<figure><figcaption>MAPE and bias by estimator (%)</figcaption>"
               + bars_svg(names, series, "MAPE and bias by estimator", "%", percent=False)
               + legend_html([(PALETTE[0], "MAPE % (mean |E - A| / A)"),
                                (PALETTE[1], "bias % (negative = under-counts)")]) + "</figure>")
    if doc.get("groups"):
        grows = [[middle(str(g["group"])), f"{g['requests']:,}",
                  *[h._pct(g["estimators"][k]["mape"]) for k in names]] for g in doc["groups"]]
        out.append(f"<h3>MAPE by {h._e(doc['by'])}</h3>" + h._table([doc["by"], "requests", *names], grows))
    sessions = doc["sessions"]
    if sessions:
        from sessiontools.analysis.estimate.options import Estimator

        own = Estimator.OWN.value  # the agent's own estimate ranks the sessions when it was computed
        rank = own if own in names else names[0]
        snames = folder_names([s["session"] for s in sessions])
        order = sorted(sessions, key=lambda s: (-(s["estimators"][rank]["mape"] or 0.0), s["session"]))

        def table(ss: Sequence[Mapping[str, Any]]) -> str:
            rows, styles = [], []
            for s in ss:
                vals = [s["estimators"][k]["mape"] for k in names]
                rows.append([snames[s["session"]], f"{s['requests']:,}", *[h._pct(v) for v in vals]])
                styles.append(["", "", *[f"background:{heat_color(v or 0, 0, 0.6)}" for v in vals]])
            return h._table(["session", "requests", *names], rows, styles=styles)

        out.append(f"<h3>Worst sessions by MAPE of {h._e(rank)}, {min(SHOWN, len(order))} of {len(order):,}</h3>")
        out.append(table(order[:SHOWN]))
        if len(order) > SHOWN:
            out.append(collapsed(f"every session ({len(order):,}, worst first)", table(order)))
    cal = doc.get("calibration") or {}
    cal = cal.get("linear") or cal  # estimate-error keeps the linear fit under calibration.linear
    if cal.get("models"):
        rows = [[k, f"{m['a']:,.0f}", f"{m['b']:.3f}", f"{m['n']:,}", m["sessions"], h._pct(m["mape_in_sample"]),
                 h._pct(m["mape_out_of_sample"]), m["method"]] for k, m in cal["models"].items()]
        out.append(collapsed(f"calibration: A ~ a + b x {cal['x']} ({len(rows)} model(s))", h._table(
            ["model (* = all pooled)", "a (tokens)", "b", "requests", "sessions", "MAPE in sample",
             "MAPE out of sample", "judged by"], rows)))
    return "".join(out)


def _section_rows(chains: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    from sessiontools.analysis.drift.sections import TEMPLATE_SECTIONS

    counts: dict[str, dict[str, int]] = {}
    for c in chains:
        for p in c["pairs"]:
            for sec, cnt in (p.get("by_section") or {}).items():
                acc = counts.setdefault(sec, {})
                for k, v in cnt.items():
                    acc[k] = acc.get(k, 0) + v

    def row(label: str, c: Mapping[str, int]) -> list[Any]:
        kept = c.get("kept", 0) + c.get("changed", 0) + c.get("moved", 0)
        old = kept + c.get("dropped", 0)
        return [label, f"{old:,}", f"{c.get('kept', 0):,}", f"{c.get('changed', 0):,}", f"{c.get('moved', 0):,}",
                f"{c.get('dropped', 0):,}", f"{c.get('added', 0):,}", f"{kept / old:.0%}" if old else "-"]

    order = [s for s in TEMPLATE_SECTIONS if s in counts] + sorted(s for s in counts if s not in TEMPLATE_SECTIONS)
    rows = [row(middle(s, 40), counts[s]) for s in order[:14]]
    rest = order[14:]
    if rest:
        rows.append(row(f"{len(rest)} other section(s)", {k: sum(counts[s].get(k, 0) for s in rest)
                                                          for k in ("kept", "changed", "moved", "dropped", "added")}))
    rows.append(row("all sections", {k: sum(c.get(k, 0) for c in counts.values())
                                     for k in ("kept", "changed", "moved", "dropped", "added")}))
    return rows


def drift_section(doc: Mapping[str, Any]) -> str:
    """Retention per section, the paths that lost most (ten open, all collapsed), the decay curves,
    the dropped items behind one <details>; paths without summaries counted in one line."""
    chains = [c for c in doc["chains"] if c["summaries"]]
    if not chains:
        return '<p class="empty">No compaction summaries in these sessions.</p>'
    without = len(doc["chains"]) - len(chains)
    names = folder_names([c["session"] for c in chains])
    out = []
    if any(c["pairs"] for c in chains):
        out.append("<h3>Retention per section over every pair S(k) → S(k+1)</h3>")
        out.append(h._table(["section", "items of S(k)", "kept", "changed", "moved", "dropped", "added", "retained"],
                            _section_rows(chains)))
    order = sorted(chains, key=lambda c: (-c["metrics"]["dropped_items"], -c["metrics"]["dropped_literals"],
                                          c["session"]))

    def row(c: Mapping[str, Any]) -> list[Any]:
        m = c["metrics"]
        lit = m.get("min_literal_retention")
        return [names[c["session"]], m["summaries"], m["pairs"], m["dropped_items"], m["added_items"],
                m["dropped_literals"], "-" if lit is None else f"{lit:.0%}", m["resurrections"], f"{m['growth_tokens']:+,}"]

    cols = ["session", "summaries", "pairs", "items dropped", "items added", "literals dropped",
            "min literal retention", "came back", "growth tokens"]
    out.append(f"<h3>Paths that lost most, {min(SHOWN, len(order))} of {len(order):,}</h3>"
               + h._table(cols, [row(c) for c in order[:SHOWN]]))
    if len(order) > SHOWN:
        out.append(collapsed(f"every path with summaries ({len(order):,}, most dropped first)",
                             h._table(cols, [row(c) for c in order])))
    if without:
        out.append(f'<p class="note">{without:,} path(s) have no summaries (not listed).</p>')
    series = []
    for c in order:
        for d in c["decay"][:1]:
            if d["points"]:
                pts = [(d["origin_position"], 1.0)] + [(p["position"], p["items_retained"]) for p in d["points"]
                                                       if p["items_retained"] is not None]
                series.append((names[c["session"]], pts))
    if series:
        out.append("<figure><figcaption>Items of the first summary still present, by summary position (the paths "
                   "that lost most)</figcaption>"
                   + lines_svg(series[:10], "decay", "summary position in the chain", "share retained")
                   + legend_html([(PALETTE[k % len(PALETTE)], n) for k, (n, _) in enumerate(series[:10])])
                   + "</figure>")
    lists = []
    for c in order:
        dropped = [(p["position"], i) for p in c["pairs"] for i in p["items_detail"].get("dropped", [])]
        if dropped:
            items = "".join(f"<li>pair {k}, {h._e(i['section'])}: {h._e(i['text'])}</li>" for k, i in dropped[:12])
            more = f"<li>... and {len(dropped) - 12} more (JSON has them)</li>" if len(dropped) > 12 else ""
            lists.append(collapsed(f"{names[c['session']]}: {len(dropped)} items dropped", f"<ul>{items}{more}</ul>"))
    if lists:
        out.append(collapsed(f"dropped items of {len(lists):,} path(s), most dropped first", "".join(lists)))
    return "".join(out)
