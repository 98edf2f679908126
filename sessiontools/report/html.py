"""`sessiontools report`: one self-contained HTML file built from the commands' JSON documents.

Inputs are the dicts `inspect`, `replay`, `estimate-error` and `diff-summaries` print with
`--format json` (plus replay timelines); nothing else. The page has inline CSS and inline SVG
figures, no script, no network. Every piece of session text goes through `html.escape`: it is data,
never markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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

#: Sessions each section of the page shows open (worst first); the rest are in a closed <details>
#: (`report.html_folder`, `report.html_replay`).
SHOWN = 10


def collapsed(summary: str, body: str) -> str:
    """A closed `<details>`: `summary` (text) over `body` (HTML)."""
    return f"<details><summary>{_e(summary)}</summary>{body}</details>"


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
    return collapsed(f"{name}: {len(comps)} compaction(s)", body)


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
    from sessiontools.report.html_folder import drift_section, estimate_section, inspect_section
    from sessiontools.report.html_replay import replay_section

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
