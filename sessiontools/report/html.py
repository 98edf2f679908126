"""`sessiontools report`: one self-contained HTML file built from the commands' JSON documents.

Inputs are the dicts `inspect`, `replay`, `estimate-error` and `diff-summaries` print with
`--format json` (plus replay timelines); nothing else. The page has inline CSS and inline SVG
figures, no script, no network. Every piece of session text goes through `html.escape`: it is data,
never markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessiontools.report.layout import dollars, short_names, tokens
from sessiontools.report.svg import (
    PALETTE,
    TIMELINE_LEGEND,
    bars_svg,
    heat_color,
    legend_html,
    lines_svg,
    timeline_svg,
)
from sessiontools.report.text import html_text

CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1f24;margin:0;background:#f6f7f9}
main{max-width:1300px;margin:0 auto;padding:18px 28px 60px}
h1{font-size:26px;margin:8px 0 4px}h2{font-size:21px;margin:34px 0 8px;border-bottom:2px solid #d0d7de;padding-bottom:4px}
h3{font-size:17px;margin:22px 0 6px}
nav a{margin-right:14px}
.headline{background:#fff;border-left:4px solid #0969da;padding:6px 12px;margin:6px 0;font-weight:500}
.scroll{overflow-x:auto;background:#fff;border:1px solid #d0d7de;border-radius:6px;margin:8px 0}
table{border-collapse:collapse;font-size:14px;width:100%}
th,td{padding:4px 8px;text-align:right;white-space:nowrap;border-bottom:1px solid #eaeef2}
th{background:#f0f3f6;white-space:normal;vertical-align:bottom}th:first-child,td:first-child,td.l,th.l{text-align:left}
tr.total td{font-weight:600;border-top:2px solid #8c959f}
.note{color:#57606a;font-size:13px;margin:4px 0 10px}
figure{background:#fff;border:1px solid #d0d7de;border-radius:6px;margin:10px 0;padding:8px 10px}
figcaption{font-weight:600;margin-bottom:4px}
svg.chart{width:100%;max-width:760px;height:auto;display:block}
svg .tick{font-size:15px;fill:#333}svg .label{font-size:16px;fill:#111}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:13px;margin-top:4px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-1px;border-radius:2px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:10px}
details{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:6px 10px;margin:6px 0}
dl.terms dt{font-weight:600;margin-top:6px}dl.terms dd{margin:0 0 0 18px}
.empty{color:#57606a;font-style:italic}
"""


_e = html_text  # (an ESC byte in a file name is no markup, but it is no text either)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, left: int = 1,
           total: Sequence[Any] | None = None, styles: Sequence[Sequence[str]] | None = None) -> str:
    """An HTML table; cells are escaped text (a cell may be ("text", "css") to colour it)."""
    head = "".join(f'<th class="{"l" if i < left else ""}">{_e(h)}</th>' for i, h in enumerate(headers))
    body = []
    for r, row in enumerate(rows):
        cells = []
        for i, c in enumerate(row):
            style = styles[r][i] if styles and styles[r][i] else ""
            cls = ' class="l"' if i < left else ""
            cells.append(f'<td{cls}{f" style={chr(34)}{style}{chr(34)}" if style else ""}>{_e(c)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    if total is not None:
        body.append('<tr class="total">' + "".join(f"<td>{_e(c)}</td>" for c in total) + "</tr>")
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def _pct(v: float | None, signed: bool = False) -> str:
    return "-" if v is None else (f"{v:+.1%}" if signed else f"{v:.1%}")


# --------------------------------------------------------------------------- sections


def inspect_section(doc: Mapping[str, Any]) -> str:
    sessions = doc["sessions"]
    if not sessions:
        return '<p class="empty">No readable session.</p>'
    names = short_names([s["path"] for s in sessions])
    rows, tot = [], [0, 0, 0, 0, 0.0, 0, 0]
    for s in sessions:
        u = s["usage"]
        comps = len(s["compactions"]) + len(s.get("other_branch_compactions") or [])
        prompt = u["input"] + u["cache_read"] + u["cache_write"]
        leaves = ", ".join(s.get("leaf_ids") or []) if s["leaves"] > 1 else str(s["leaves"])
        rows.append([names[s["path"]], f"Pi {s['pi_version']}.x", f"{s['entries']:,}", f"{s['requests']:,}", comps,
                     leaves, tokens(prompt), tokens(u["output"]), f"${s['cost']:.3f}",
                     f"{s['errors']} ({s['overflow_errors']})"])
        for k, v in enumerate((s["entries"], s["requests"], comps, prompt, s["cost"], s["errors"], u["output"])):
            tot[k] += v
    total = ["total", f"{len(sessions)} sessions", f"{tot[0]:,}", f"{tot[1]:,}", tot[2], "", tokens(tot[3]),
             tokens(tot[6]), f"${tot[4]:.3f}", str(tot[5])]
    table = _table(["session", "read as", "entries", "requests", "compactions", "leaves (ids)", "prompt tokens",
                    "output tokens", "cost", "errors (overflow)"], rows, total=total)
    details = "".join(_session_details(s, names[s["path"]]) for s in sessions)
    return table + ('<p class="note">Compactions count every branch of the file; a file with several leaves '
                    "lists their ids (pass one to <code>--leaf</code>). Prompt tokens = input + cache read + "
                    "cache write, as recorded.</p>") + details


def _session_details(s: Mapping[str, Any], name: str) -> str:
    """Per session: models, tree, and every compaction (on this path and on other branches)."""
    comps = [(c, "this path") for c in s["compactions"]] + \
        [(c, f"other branch (leaf {c.get('leaf_id')})") for c in s.get("other_branch_compactions") or []]
    rows = [[c["entry_id"] or "-", c["line"], c["kind"], "-" if c["tokens_before"] is None else f"{c['tokens_before']:,}",
             c["first_kept_entry_id"] or "-", where] for c, where in comps]
    models = ", ".join(f"{k} ({v})" for k, v in (s.get("models") or {}).items()) or "-"
    problems = len(s.get("skipped_lines") or []) + len(s.get("recovered_lines") or [])
    body = (f"<p>{_e(s['path'])}<br>models: {_e(models)}<br>leaves: {_e(', '.join(str(i) for i in s.get('leaf_ids') or []))}; "
            f"branch points: {_e(s.get('branch_points', 0))}; skipped or recovered lines: {problems}</p>")
    if rows:
        body += _table(["entry", "line", "kind", "tokens before", "first kept", "where"], rows, left=1)
    return f"<details><summary>{_e(name)}: {len(comps)} compaction(s)</summary>{body}</details>"


def replay_section(doc: Mapping[str, Any], timelines: Sequence[Mapping[str, Any]]) -> str:
    runs = doc["runs"]
    if not runs:
        return '<p class="empty">No session could be replayed.</p>'
    names = short_names([r["session"] for r in runs])
    rows = []
    for r in runs:
        s, m, rm = r["settings"], r["metrics"], r["recorded_match"]
        rows.append([names[r["session"]], f"{tokens(s['context_window'])} / {tokens(s['reserve_tokens'])} / {tokens(s['keep_recent_tokens'])}",
                     s["policy"], m["compactions"], m["early"], m["late"], m["mid_run_crossings"], m["overflows"],
                     m["thrash"], tokens(m["peak_truth_tokens"]), tokens(m["billed_input_tokens"]),
                     "-" if m["cost"] is None else f"${dollars(m['cost'])}",
                     f"{rm['matched']}/{rm['recorded']}" + (f" +{rm['extra']}" if rm["extra"] else "")])
    out = [_table(["session", "W / R / K tokens", "policy", "compactions", "early", "late", "mid-run", "overflows",
                   "thrash", "peak tokens", "billed input tokens", "cost", "rec. match"], rows, left=3)]
    out.append('<p class="note">W window, R reserveTokens, K keepRecentTokens. rec. match = recorded compactions '
               "reproduced / recorded, +extra simulated ones (a setting far from the recorded one rarely matches).</p>")
    out.append("<h3>Grid heatmap: billed input tokens per setting (darker = more, per session)</h3>")
    out.append(_heatmap(runs, names))
    if timelines:
        out.append("<h3>Timelines (first setting of the grid)</h3>" + legend_html(TIMELINE_LEGEND) + '<div class="grid">')
        for tl in timelines:
            title = f"{names.get(tl['session'], tl['session'])}: threshold {tl['threshold']:,}, window {tl['window']:,}"
            out.append(f"<figure><figcaption>{_e(title)}</figcaption>{timeline_svg(tl, title)}</figure>")
        out.append("</div>")
    return "".join(out)


def _heatmap(runs: Sequence[Mapping[str, Any]], names: Mapping[str, str]) -> str:
    settings = list(dict.fromkeys(
        (r["settings"]["context_window"], r["settings"]["reserve_tokens"], r["settings"]["keep_recent_tokens"]) for r in runs))
    sessions = list(dict.fromkeys(r["session"] for r in runs))
    val = {(r["session"], (r["settings"]["context_window"], r["settings"]["reserve_tokens"],
                           r["settings"]["keep_recent_tokens"])): r["metrics"]["billed_input_tokens"] for r in runs}
    rows, styles = [], []
    for st in settings:
        row, sty = [f"{tokens(st[0])} / {tokens(st[1])} / {tokens(st[2])}"], [""]
        for s in sessions:
            col = [v for (ss, _), v in val.items() if ss == s]
            v = val.get((s, st))
            row.append("-" if v is None else tokens(v))
            sty.append("" if v is None else f"background:{heat_color(v, min(col), max(col))}")
        rows.append(row)
        styles.append(sty)
    return _table(["W / R / K", *[names[s] for s in sessions]], rows, styles=styles)


def estimate_section(doc: Mapping[str, Any]) -> str:
    ests = doc["estimators"]
    if not doc["requests"]:
        return '<p class="empty">No request with usable usage.</p>'
    names = list(ests)
    rows = [[k, f"{v['n']:,}", _pct(v["bias"], True), _pct(v["mape"]), "-" if v["median_ratio"] is None
             else f"x{v['median_ratio']:.3f}", tokens(v["p50_abs"]), tokens(v["p95_abs"]), tokens(v["max_abs"])]
            for k, v in ests.items()]
    out = [_table(["estimator", "requests", "bias", "MAPE", "median A/E", "p50 |E-A| tokens", "p95 |E-A| tokens",
                   "max |E-A| tokens"], rows)]
    series = [("MAPE %", [None if ests[k]["mape"] is None else ests[k]["mape"] * 100 for k in names]),
              ("bias %", [None if ests[k]["bias"] is None else ests[k]["bias"] * 100 for k in names])]
    out.append("<figure><figcaption>MAPE and bias by estimator (%)</figcaption>"
               + bars_svg(names, series, "MAPE and bias by estimator", "%", percent=False)
               + legend_html([(PALETTE[0], "MAPE % (mean |E - A| / A)"), (PALETTE[1], "bias % (negative = under-counts)")])
               + "</figure>")
    sessions = doc["sessions"]
    if sessions:
        snames = short_names([s["session"] for s in sessions])
        rows, styles = [], []
        for s in sessions:
            vals = [s["estimators"][k]["mape"] for k in names]
            rows.append([snames[s["session"]], f"{s['requests']:,}", *[_pct(v) for v in vals]])
            styles.append(["", "", *[f"background:{heat_color(v or 0, 0, 0.6)}" for v in vals]])
        out.append("<h3>MAPE by session</h3>" + _table(["session", "requests", *names], rows, styles=styles))
    cal = doc.get("calibration") or {}
    cal = cal.get("linear") or cal  # estimate-error keeps the linear fit under calibration.linear
    if cal.get("models"):
        rows = [[k, f"{m['a']:,.0f}", f"{m['b']:.3f}", f"{m['n']:,}", m["sessions"], _pct(m["mape_in_sample"]),
                 _pct(m["mape_out_of_sample"]), m["method"]] for k, m in cal["models"].items()]
        out.append(f"<h3>Calibration: A ~ a + b x {_e(cal['x'])}</h3>" + _table(
            ["model (* = all pooled)", "a (tokens)", "b", "requests", "sessions", "MAPE in sample",
             "MAPE out of sample", "judged by"], rows))
    return "".join(out)


def drift_section(doc: Mapping[str, Any]) -> str:
    chains = [c for c in doc["chains"] if c["summaries"]]
    if not chains:
        return '<p class="empty">No compaction summaries in these sessions.</p>'
    names = short_names([c["session"] for c in chains])
    rows = []
    for c in chains:
        m = c["metrics"]
        lit = m.get("min_literal_retention")
        rows.append([names[c["session"]], m["summaries"], m["pairs"], m["dropped_items"], m["added_items"],
                     m["dropped_literals"], "-" if lit is None else f"{lit:.0%}", m["resurrections"],
                     f"{m['growth_tokens']:+,}"])
    out = [_table(["session", "summaries", "pairs", "items dropped", "items added", "literals dropped",
                   "min literal retention", "came back", "growth tokens"], rows)]
    series = []
    for c in chains:
        for d in c["decay"][:1]:
            if d["points"]:
                pts = [(d["origin_position"], 1.0)] + [(p["position"], p["items_retained"]) for p in d["points"]
                                                       if p["items_retained"] is not None]
                series.append((names[c["session"]], pts))
    if series:
        out.append("<figure><figcaption>Items of the first summary still present, by summary position</figcaption>"
                   + lines_svg(series[:10], "decay", "summary position in the chain", "share retained")
                   + legend_html([(PALETTE[k % len(PALETTE)], n) for k, (n, _) in enumerate(series[:10])]) + "</figure>")
    for c in chains:
        dropped = [(p["position"], i) for p in c["pairs"] for i in p["items_detail"].get("dropped", [])]
        if dropped:
            items = "".join(f"<li>pair {k}, {_e(i['section'])}: {_e(i['text'])}</li>" for k, i in dropped[:12])
            more = f"<li>... and {len(dropped) - 12} more (JSON has them)</li>" if len(dropped) > 12 else ""
            out.append(f"<details><summary>{_e(names[c['session']])}: {len(dropped)} items dropped</summary>"
                       f"<ul>{items}{more}</ul></details>")
    return "".join(out)


TERMS = (
    ("A", "actual prompt tokens: input + cache read + cache write, as the provider counted them"),
    ("E, bias, MAPE", "an estimate; mean (E - A) / A (negative = under-counts); mean |E - A| / A"),
    ("A/E", "median of actual / estimate: x1.38 means the actual is 38% above the estimate"),
    ("OOS, LOSO", "out of sample; leave one session out (each session judged by a fit without it)"),
    ("* row", "the calibration pooled over every model, used for a model without its own fit"),
    ("W, R, K, T", "context window, reserveTokens, keepRecentTokens; threshold T = W - R"),
    ("truth", "the provider's prompt tokens for the simulated context (recorded, else modelled)"),
    ("early, late", "compaction while truth <= T; a check point over T without one"),
    ("mid-run", "a request inside a run whose truth is over T (between check points)"),
    ("overflow, thrash", "a request over W; a compaction after which the next check point is still over T"),
    ("rec. match", "recorded compactions the replay reproduces (matched / recorded, +extra simulated)"),
)


def render_report(*, inspect: Mapping[str, Any], replay: Mapping[str, Any], estimate_error: Mapping[str, Any],
                  drift: Mapping[str, Any], timelines: Sequence[Mapping[str, Any]] = (),
                  headlines: Sequence[str] = (), title: str = "sessiontools report") -> str:
    """The whole page as a string (UTF-8 when written)."""
    terms = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in TERMS)
    heads = "".join(f'<p class="headline">{_e(h)}</p>' for h in headlines)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">",
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body><main>",
        f"<h1>{_e(title)}</h1>", heads,
        '<nav><a href="#inspect">Sessions</a><a href="#replay">Replay</a><a href="#estimate-error">Estimate error</a>'
        '<a href="#drift">Summary drift</a><a href="#terms">Terms</a></nav>',
        f'<section id="inspect"><h2>Sessions (inspect)</h2>{inspect_section(inspect)}</section>',
        f'<section id="replay"><h2>Replay: what other settings would have done</h2>{replay_section(replay, timelines)}</section>',
        f'<section id="estimate-error"><h2>Estimate error</h2>{estimate_section(estimate_error)}</section>',
        f'<section id="drift"><h2>Summary drift (diff-summaries)</h2>{drift_section(drift)}</section>',
        f'<section id="terms"><h2>Terms</h2><dl class="terms">{terms}</dl></section>',
        "</main></body></html>",
    ]
    return "\n".join(parts) + "\n"
