"""Every command prints input problems through `cli.diagnostics` (issue 24: "one diagnostics printer"):
`print_diagnostics` (`kind: file:line: reason`, at most 20 a file), `print_unreadable` and
`print_skipped`. A module that loops over a file's diagnostics and prints them, passes them to a
print call, or writes the printer's line shapes itself would show the same problem two ways."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "sessiontools"
PRINTER = PACKAGE / "cli" / "diagnostics.py"
#: Where a reader's `Diagnostic`s are held (`Session.diagnostics`/`skipped`/`recovered`/`notices`/
#: `fatal`, `FileResult.diagnostics`, the readers' `diags`).
HOLDERS = frozenset({"diagnostics", "skipped", "recovered", "notices", "fatal", "diags"})
PRINTS = frozenset({"print", "echo", "secho", "write", "log"})
#: The line shapes the printer writes (`_LABELS` and the skipped note).
SHAPES = ("skipped: ", "recovered: ", ": skipped, ")


def _holds(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in HOLDERS or isinstance(n, ast.Name) and n.id in HOLDERS
               for n in ast.walk(node))


def _is_print(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id in PRINTS) or (isinstance(f, ast.Attribute) and f.attr in PRINTS)


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def own_printing(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of each place that prints diagnostics without `cli.diagnostics`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.AsyncFor) and _holds(node.iter):
            if any(_is_print(n) for stmt in node.body for n in ast.walk(stmt)):
                found.append((node.lineno, "prints in a loop over diagnostics"))
        elif isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            if any(_holds(g.iter) for g in node.generators) and any(_is_print(n) for n in ast.walk(node.elt)):
                found.append((node.lineno, "prints in a comprehension over diagnostics"))
        if _is_print(node):
            assert isinstance(node, ast.Call)
            if any(_holds(a) for a in [*node.args, *(k.value for k in node.keywords)]):
                found.append((node.lineno, "passes diagnostics to a print call"))
            if any(shape in s for a in node.args for s in _strings(a) for shape in SHAPES):
                found.append((node.lineno, "writes the printer's line shape"))
    return found


def test_the_scan_finds_each_way_of_printing_diagnostics() -> None:
    src = ("for d in s.diagnostics:\n    err.print(f'skipped: {d}')\n"
           "[print(d) for d in res.fatal]\n"
           "err.print(res.diagnostics)\n"
           "err.print(f'note: {p}: skipped, {why}')\n")
    got = own_printing(ast.parse(src))
    assert sorted(got) == [(1, "prints in a loop over diagnostics"), (2, "writes the printer's line shape"),
                           (3, "prints in a comprehension over diagnostics"),
                           (4, "passes diagnostics to a print call"), (5, "writes the printer's line shape")]
    # what the commands do is not flagged: hand the diagnostics to the printer, count them, find the fatal one
    ok = ("print_diagnostics(err, res.diagnostics, p)\n"
          "n = len(s.skipped) + len(s.recovered)\n"
          "fatal = next((d for d in res.diagnostics if d.kind == 'fatal'), None)\n")
    assert own_printing(ast.parse(ok)) == []


def test_no_module_prints_diagnostics_its_own_way() -> None:
    found = [f"{p.relative_to(PACKAGE.parent)}:{line}: {what}" for p in sorted(PACKAGE.rglob("*.py")) if p != PRINTER
             for line, what in own_printing(ast.parse(p.read_text(encoding="utf-8")))]
    assert found == [], f"print input problems through sessiontools.cli.diagnostics: {found}"


def test_every_command_that_reads_files_reports_through_the_printer() -> None:
    """The commands' shared readers (`cli.inputs`) call the printer for each file's diagnostics."""
    tree = ast.parse((PACKAGE / "cli" / "inputs.py").read_text(encoding="utf-8"))
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert {"print_diagnostics", "print_unreadable", "print_skipped"} <= called
