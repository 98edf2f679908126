"""`report/` reads run records by attribute (issue 24: "typed until the CLI/report boundary").

An AST scan of `sessiontools/report`: in each function, the names bound to a typed record (a
parameter or an annotated assignment whose annotation names one of the record types of
`replay.run_document` / `replay.records` / `replay.metrics`, and every name bound from one of them by
`for`, a comprehension or an assignment) are never indexed with a string (`r["metrics"]`) nor read
with `.get("...")`, directly or through what they hold (`r.metrics.to_dict()["cost"]`). Dicts that
are no run record (a heatmap panel, a polars row, another command's JSON document) are not scanned.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPORT = Path(__file__).resolve().parents[2] / "sessiontools" / "report"
#: The typed records a report function takes (`replay.run_document`, `replay.records`, `replay.metrics`).
RECORD_TYPES = frozenset({"RunRecord", "DeferredRecord", "MissingModel", "NoReplay", "InsteadOfRun", "CompactionRecord",
                          "TruthRecord", "PriceRecord", "Timeline", "RunMetrics", "ReplaySettings", "RecordedMatch"})
#: Calls whose result holds what their arguments hold (`enumerate(r.compactions)`).
_PASS_THROUGH = frozenset({"enumerate", "zip", "sorted", "reversed", "list", "tuple", "iter", "next", "min", "max"})


def _names_record(annotation: ast.expr | None) -> bool:
    return annotation is not None and any(isinstance(n, ast.Name) and n.id in RECORD_TYPES or
                                          isinstance(n, ast.Constant) and isinstance(n.value, str)
                                          and any(t in n.value for t in RECORD_TYPES)
                                          for n in ast.walk(annotation))


def _rooted(e: ast.expr, bound: set[str]) -> bool:
    """`e` reads a record bound in `bound` (through attributes, subscripts, method calls, pass-through calls)."""
    while True:
        if isinstance(e, ast.Name):
            return e.id in bound
        if isinstance(e, ast.Tuple | ast.List):
            return any(_rooted(x, bound) for x in e.elts)
        if isinstance(e, ast.Attribute | ast.Subscript | ast.Starred):
            e = e.value
        elif isinstance(e, ast.Call):
            if isinstance(e.func, ast.Name) and e.func.id in _PASS_THROUGH:
                return any(_rooted(a, bound) for a in e.args)
            e = e.func
        else:
            return False


def _targets(t: ast.expr) -> list[str]:
    return [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]


def _bound(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = fn.args
    bound = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if _names_record(a.annotation)}
    while True:
        more = set(bound)
        for node in ast.walk(fn):
            if isinstance(node, ast.For | ast.comprehension) and _rooted(node.iter, bound):
                more.update(_targets(node.target))
            elif isinstance(node, ast.Assign) and _rooted(node.value, bound):
                more.update(n for t in node.targets for n in _targets(t))
            elif isinstance(node, ast.AnnAssign) and (_names_record(node.annotation) or
                                                      node.value is not None and _rooted(node.value, bound)):
                more.update(_targets(node.target))
            elif isinstance(node, ast.NamedExpr) and _rooted(node.value, bound):
                more.add(node.target.id)
        if more == bound:
            return bound
        bound = more


def string_keyed_reads(source: str, filename: str = "<src>") -> list[str]:
    """Each `record["key"]` or `record.get("key")` on a name bound to a typed record, as `file:line`."""
    out: list[tuple[int, str]] = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        bound = _bound(fn)
        if not bound:
            continue
        for node in ast.walk(fn):
            if (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                    and isinstance(node.slice.value, str) and _rooted(node.value, bound)):
                out.append((node.lineno, f"{filename}:{node.lineno}: [{node.slice.value!r}]"))
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                  and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                  and _rooted(node.func.value, bound)):
                out.append((node.lineno, f"{filename}:{node.lineno}: .get({node.args[0].value!r})"))
    return [hit for _, hit in sorted(set(out))]


def test_report_reads_no_run_record_by_string_key() -> None:
    """No module of `report/` indexes a typed run record (or anything it holds) by a string key."""
    found = [hit for f in sorted(REPORT.glob("*.py")) for hit in string_keyed_reads(f.read_text(), f.name)]
    assert found == []


def test_the_scan_scans_the_report_modules_that_take_records() -> None:
    """The scan sees the record parameters of the replay report (it would pass vacuously otherwise)."""
    tree = ast.parse((REPORT / "replay.py").read_text())
    taking = [fn.name for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef) and _bound(fn)]
    assert {"replay_table", "replay_headline", "truth_counter_notes", "cost_split"} <= set(taking)


def test_the_scan_finds_string_keyed_reads() -> None:
    """A string key on a record, on what it holds, through a loop, a comprehension or an unpacking is
    found; attributes, and string keys of dicts that hold no record, are not."""
    bad = '''
def f(records: Sequence[RunRecord], tl: "Timeline") -> None:
    for r in records:
        r["metrics"]
        r.metrics.to_dict().get("cost")
    s, m = records[0].settings, records[0].metrics
    m["overflows"]
    [c["reason"] for c in records[0].compactions]
    for k, c in enumerate(records[0].compactions):
        c["early"]
    tl["truth"]
'''
    assert [h.split(": ", 1)[1] for h in string_keyed_reads(bad)] == [
        "['metrics']", ".get('cost')", "['overflows']", "['reason']", "['early']", "['truth']"]
    good = '''
def f(records: Sequence[RunRecord], panel: dict[str, Any]) -> None:
    for r in records:
        r.metrics.cost
    panel["xs"]
    rows = {"a": 1}
    rows["a"]
'''
    assert string_keyed_reads(good) == []
