"""`sessiontools report`: one self-contained HTML page over every command's JSON."""

from pathlib import Path
from typing import Annotated, Any

import typer

from sessiontools.cli.choices import DEFAULT_RESERVE_TOKENS, Policy
from sessiontools.cli.diagnostics import safe_text
from sessiontools.cli.inputs import exit_code_for
from sessiontools.cli.options import EXIT_INPUT, JobsOpt, PathsArg, StrictOpt
from sessiontools.cli.outputs import check_output_path, stderr_console, wrote
from sessiontools.cli.token_options import parse_token_list
from sessiontools.errors import UsageError
from sessiontools.names import axis_help


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report_cmd(
        paths: PathsArg = None,
        output: Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write (report.html).")] = Path("report.html"),
        context_window: Annotated[str | None, typer.Option("--context-window", help="Replay window(s), comma-separated (default: the recorded model's). 16k = 16000.")] = None,
        reserve: Annotated[str, typer.Option("--reserve", help="Replay reserveTokens value(s), comma-separated.")] = "16384",
        keep_recent: Annotated[str, typer.Option("--keep-recent", help="Replay keepRecentTokens value(s), comma-separated.")] = "20000",
        policy: Annotated[Policy | None, typer.Option("--policy", help="Replay every file under this compaction rule (default: each agent's own, as `replay`).")] = None,
        auto_compact_limit: Annotated[str | None, typer.Option("--auto-compact-limit", help=axis_help("auto_compact_limit", " of the replay", " (default: 90% of the window)."))] = None,
        autocompact_pct: Annotated[str | None, typer.Option("--autocompact-pct", help=axis_help("autocompact_pct", " of the replay", "."))] = None,
        strict: StrictOpt = False,
        jobs: JobsOpt = None,
    ) -> None:
        """One self-contained HTML file (no network, no script): inspect, replay grid with timelines and a
        heatmap, estimate error with its plots, summary drift; every term defined at the end."""
        if output.suffix.lower() not in (".html", ".htm"):
            raise UsageError(f"--output {output}: the report is HTML; use a .html file name")
        check_output_path(output)
        windows = parse_token_list(context_window, "--context-window", minimum=1)
        reserves = parse_token_list(reserve, "--reserve") or [16384]
        keeps = parse_token_list(keep_recent, "--keep-recent") or [20000]
        from sessiontools.cli.cmd_replay import axis_options, check_grid

        check_grid(windows, reserves, policy.value if policy else None, reserve != str(DEFAULT_RESERVE_TOKENS))
        policy_options = {"policy": policy.value if policy else None,
                          **axis_options(auto_compact_limit, autocompact_pct)}
        raise typer.Exit(_build(paths, output, jobs, windows, reserves, keeps, strict, policy_options))


def _build(paths: list[Path] | None, output: Path, jobs: int | None, windows: list[int] | None,
           reserves: list[int], keeps: list[int], strict: bool, policy_options: dict[str, Any] | None = None) -> int:
    from sessiontools.cli.progress import stage

    err = stderr_console()
    with stage("report"):  # every progress label says it is the report's: "report: fitting priors; ..."
        return _build_in_stage(err, paths, output, jobs, windows, reserves, keeps, strict, policy_options or {})


def _build_in_stage(err: Any, paths: list[Path] | None, output: Path, jobs: int | None, windows: list[int] | None,
                    reserves: list[int], keeps: list[int], strict: bool, policy_options: dict[str, Any]) -> int:
    from sessiontools.cli.documents import report_documents
    from sessiontools.cli.progress import phase
    from sessiontools.report.estimate_json import estimate_error_headline
    from sessiontools.report.html import render_report
    from sessiontools.report.inspect import inspect_headline
    from sessiontools.report.replay import replay_headline
    from sessiontools.report.writers import write_atomic

    # Each file is read once; every section is made from that one read (`report_documents`): one
    # counted pass over the files, then the uncounted phases (priors, estimators, summary pairs).
    docs, errors, loaded = report_documents(paths, err, jobs, windows=windows, reserves=reserves, keeps=keeps,
                                            **policy_options)
    insp, rep, est, dri = docs["inspect"], docs["replay"], docs["estimate-error"], docs["diff-summaries"]
    for line in errors:  # a section lacks a file the others have, e.g. a model missing from the catalogue
        err.print(safe_text(f"error: {line}"))
    failed = bool(errors)
    # Each session's first run carries its timeline (the same run as its row of the table).
    timelines = [r.timeline for r in rep["runs"] if r.timeline is not None]
    heads = []
    if insp["sessions"]:
        heads.append(inspect_headline(insp["sessions"]))
    if rep["runs"]:
        heads.extend(replay_headline(rep["runs"]).splitlines())  # one line per agent
    if est["requests"]:
        heads.append(estimate_error_headline(est))
    m = dri["metrics"]
    heads.append(f"diff-summaries: {m['summaries']} summaries, {m['pairs']} pairs; dropped {m['dropped_items']} items "
                 f"and {m['dropped_literals']} literals")
    with phase(err, "rendering the HTML page"):
        html = render_report(inspect=insp, replay=rep, estimate_error=est, drift=dri, timelines=timelines,
                             headlines=heads)
    with phase(err, f"writing {output.name}"):
        write_atomic(output, html)
    wrote(output, f"{output.stat().st_size / 1024:.0f} KiB")
    code = exit_code_for(loaded, strict)
    return code or (EXIT_INPUT if failed else 0)  # the page is written, but a section lacks some sessions
