"""`diff-summaries --compare A B`: read both sides, pair them by session, measure, gate."""

from pathlib import Path
from typing import Any

import typer

from sessiontools.cli.inputs import exit_code_for, load_all
from sessiontools.cli.options import EXIT_GATE, EXIT_OK
from sessiontools.cli.outputs import emit_json, emit_renderables, stderr_console
from sessiontools.errors import InputError, UsageError


def _side(path: Path, err: Any) -> Any:
    return load_all([path], err)


def run_compare(paths: list[Path] | None, leaf: str | None, format: str | None, output: Path | None,
                fail_if: list[str] | None, tokenizer: str, strict: bool) -> None:
    from sessiontools.analysis.drift import DriftWorker
    from sessiontools.analysis.drift.compare import METRICS, Comparison, pair_by_session, session_key
    from sessiontools.report.drift_compare import compare_headline, compare_table, compare_to_dict
    from sessiontools.report.drift_json import gate_results
    from sessiontools.report.gates import parse_gates, tripped
    from sessiontools.report.writers import envelope

    if not paths or len(paths) != 2:
        raise UsageError("--compare takes exactly two paths, A and B (two files or two directories)")
    a, b = paths
    if a.is_dir() != b.is_dir():
        raise UsageError("--compare: A and B must both be files or both be directories")
    if format not in (None, "table", "json"):
        raise UsageError("--compare writes table or json")
    gates = parse_gates(fail_if or [], METRICS)
    err = stderr_console()
    la, lb = _side(a, err), _side(b, err)
    if a.is_dir():
        try:
            pairs, unpaired = pair_by_session(la.sessions, lb.sessions)
        except ValueError as exc:
            raise UsageError(f"--compare: {exc}") from None
    else:
        pairs, unpaired = ([(la.sessions[0], lb.sessions[0])] if la.sessions and lb.sessions else []), []
    if not pairs:
        raise InputError(f"--compare: no session of {a} pairs with one of {b}")
    worker = DriftWorker(leaf=leaf, all_leaves=False, tokenizer=tokenizer)
    cmp = Comparison(tuple((session_key(sa), tuple(worker(sa)), tuple(worker(sb))) for sa, sb in pairs),
                     tuple(unpaired))
    m = cmp.metrics()
    results = gate_results(m, gates)
    if format == "json" or (format is None and output is not None and output.suffix == ".json"):
        emit_json(envelope("diff-summaries", compare=compare_to_dict(cmp, m, str(a), str(b)), gates=results), output)
    else:
        emit_renderables([compare_table(cmp, m, str(a), str(b))], output)
    err.print(compare_headline(cmp, m), markup=False)
    messages = tripped(gates, [(f"A {a} vs B {b}", m)])
    for msg in messages:
        err.print(msg, markup=False)
    code = max(exit_code_for(la, strict), exit_code_for(lb, strict))
    raise typer.Exit(code if code != EXIT_OK else (EXIT_GATE if messages else EXIT_OK))
