"""`sessiontools replay`."""

from enum import Enum
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

from sessiontools.cli.choices import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS, Policy
from sessiontools.cli.executor import Executor, ExecutorOpt
from sessiontools.cli.grouping import GroupByOpt, PerSessionOpt
from sessiontools.cli.inputs import exit_code_for
from sessiontools.cli.options import (
    EXIT_GATE,
    AllLeavesOpt,
    JobsOpt,
    LeafOpt,
    OutputOpt,
    PathsArg,
    StrictOpt,
    check_leaf_options,
)
from sessiontools.cli.options import TableFormat as Fmt
from sessiontools.cli.outputs import (
    check_output_path,
    check_plot_path,
    emit_json,
    emit_renderables,
    resolve_format,
    save_figure,
    stderr_console,
    write_frame,
)
from sessiontools.cli.progress import phase
from sessiontools.cli.token_options import parse_percent_list, parse_token_list, parse_tokens, tokens_option
from sessiontools.errors import InputError, UsageError
from sessiontools.names import (
    CHARS4_OWN_HELP,
    CLI_VERSION_HELP,
    MAX_OUTPUT_HELP,
    MODELS_HELP,
    OWN_RULES_HELP,
    WINDOW_DEFAULT_HELP,
    axis_help,
    policy_help,
)
from sessiontools.tokens.registry import DEFAULT_TRUTH_TOKENIZER


class TruthTokenizer(str, Enum):
    """`--truth-tokenizer`: how the truth model counts messages (`tokens.registry.TRUTH_TOKENIZERS`)."""

    auto = "auto"
    chars4 = "chars4"
    o200k = "o200k"
    model = "model"


_DEFAULT_TRUTH = TruthTokenizer(DEFAULT_TRUTH_TOKENIZER)


def _ints(value: str | None, name: str, minimum: int = 0) -> list[int] | None:
    return parse_token_list(value, name, minimum=minimum)


def _grid_options(context_window: str | None, reserve: str, keep_recent: str, policy: Any,
                  auto_compact_limit: str | None, autocompact_pct: str | None,
                  max_output_tokens: int | None) -> tuple[list[int] | None, list[int], list[int], dict[str, Any]]:
    """Windows, reserves and keeps (checked for Pi's policies), and the per-agent options of
    `replay_records`: Codex's `limits`, Claude Code's `claude`."""
    windows = _ints(context_window, "--context-window", minimum=1)
    reserves = _ints(reserve, "--reserve") or [DEFAULT_RESERVE_TOKENS]
    keeps = _ints(keep_recent, "--keep-recent") or [DEFAULT_KEEP_RECENT_TOKENS]
    check_grid(windows, reserves, policy.value if policy else None, reserve != str(DEFAULT_RESERVE_TOKENS))
    return windows, reserves, keeps, axis_options(auto_compact_limit, autocompact_pct, max_output_tokens)


def axis_options(limit: str | None, pct: str | None, max_output_tokens: int | None = None,
                 names: tuple[str, str] = ("--auto-compact-limit", "--autocompact-pct")) -> dict[str, Any]:
    """The other policies' own axes as `replay_records` takes them (`Policy.grid_extras`): Codex's
    `limits` and Claude Code's `claude` options, from the command's options `names`. One home for
    `replay`, `report` and `export --replay-*`."""
    limits: list[int | None] = list(parse_token_list(limit, names[0], minimum=1) or [None])
    claude = {"autocompact_pcts": parse_percent_list(pct, names[1]), "max_output_tokens": max_output_tokens}
    return {"limits": limits, "claude": claude}


def check_grid(windows: list[int] | None, reserves: list[int], policy: str | None, reserve_given: bool,
               options: tuple[str, str] = ("--reserve", "--context-window")) -> None:
    """W > reserve where the policy's threshold uses a reserve (its `reserve_tokens` axis, `Policy.axes`;
    with no --policy and the default reserve, each file is checked when it is replayed under its own
    agent's rule, which may have no reserve). `options`: the command's names of the two options. One
    rule for `replay`, `report` and `export --replay-*`."""
    from sessiontools.replay.registry import policy_axes

    uses_reserve = any(a.key == "reserve_tokens" for a in policy_axes(policy)) if policy else reserve_given
    if not uses_reserve:
        return
    for w in windows or []:
        for r in reserves:
            if r >= w:
                raise UsageError(f"{options[0]} {r:,} is not below {options[1]} {w:,}: the threshold W - reserve "
                                 "would be zero or negative")


def run_label(record: Any) -> str:
    """A run (`RunRecord`) in words, for gate messages: the window, then the policy's own axes (`Policy.axes`)."""
    from sessiontools.replay.registry import policy_axes

    s = record.settings
    leaf = f", leaf {record.leaf_id}" if record.leaf_id else ""
    axes = "".join(f", {a.label} {s.value(a.key)}{'%' if a.unit == 'percent' else ''}"
                   for a in policy_axes(s.policy)[1:] if s.value(a.key) is not None)
    if not axes and s.shown_threshold is not None:  # the policy's default: its threshold tells the run
        axes = f", threshold {s.shown_threshold}"
    return f"session {record.session}{leaf}, window {s.context_window}{axes}, policy {s.policy}"


def model_files(given: list[Path] | None) -> list[str]:
    """The default agent's own models.json (Pi's: `$PI_CODING_AGENT_DIR/models.json`, else
    `~/.pi/agent/models.json`, `read.sources.DEFAULT_HOME`) when it exists, then every `--models PATH`
    (later files win)."""
    from sessiontools.cli.inputs import agent_home
    from sessiontools.read.sources import DEFAULT_HOME

    own = agent_home() / DEFAULT_HOME.models if DEFAULT_HOME.models else None
    out = [str(own)] if own is not None and own.is_file() else []
    for p in given or []:
        if not p.is_file():
            raise UsageError(f"--models {p}: no such file")
        out.append(str(p))
    return out


def register(app: typer.Typer) -> None:
    @app.command()
    def replay(
        paths: PathsArg = None,
        context_window: Annotated[list[str] | None, typer.Option("--context-window", help=f"Window(s) W, comma-separated (default, per file: {WINDOW_DEFAULT_HELP}); or MODEL=W for one model the catalogue lacks (provider/model, or a bare id); repeatable.")] = None,
        reserve: Annotated[str, typer.Option("--reserve", help="reserveTokens value(s), comma-separated.")] = str(DEFAULT_RESERVE_TOKENS),
        keep_recent: Annotated[str, typer.Option("--keep-recent", help="keepRecentTokens value(s), comma-separated.")] = str(DEFAULT_KEEP_RECENT_TOKENS),
        policy: Annotated[Policy | None, typer.Option("--policy", help=policy_help("the agent's own; " + OWN_RULES_HELP))] = None,
        auto_compact_limit: Annotated[str | None, typer.Option("--auto-compact-limit", help=axis_help("auto_compact_limit", tail=" (default: 90% of the window)."))] = None,
        autocompact_pct: Annotated[str | None, typer.Option("--autocompact-pct", help=axis_help("autocompact_pct", " P", ": T = min(floor(E x P / 100), E - 13000), E = W - min(max output, 20000)."))] = None,
        max_output_tokens: Annotated[int | None, tokens_option("--max-output-tokens", minimum=1, help=MAX_OUTPUT_HELP)] = None,
        cli_version: Annotated[str | None, typer.Option("--cli-version", help=CLI_VERSION_HELP)] = None,
        leaf: LeafOpt = None,
        all_leaves: AllLeavesOpt = False,
        models: Annotated[list[Path] | None, typer.Option("--models", help=MODELS_HELP)] = None,
        summary_tokens: Annotated[int | None, tokens_option("--summary-tokens", minimum=1, help="Size of a new summary (default: learnt from the recorded summaries).")] = None,
        truth_tokenizer: Annotated[TruthTokenizer, typer.Option("--truth-tokenizer", help=f"How the truth model counts a message the recording never priced: auto (per session, chars4 or model, whichever predicts the session's later recorded requests from its earlier ones better; chars4 when it has too few requests to tell), chars4 ({CHARS4_OWN_HELP}), o200k, or model (the model's own tokenizer where it beats o200k, else o200k). truth_model.counter and counter_choice say which and why; docs/estimate-error.md has the measured error of each.")] = _DEFAULT_TRUTH,
        format: Annotated[Fmt | None, typer.Option("--format", "-f", help="table, json, csv or parquet (one row per setting); default: from the -o suffix, else table.")] = None,
        output: OutputOpt = None,
        plot: Annotated[Path | None, typer.Option("--plot", help="PNG/SVG: the timeline of one setting, or a heatmap for a grid.")] = None,
        plot_metric: Annotated[str, typer.Option("--plot-metric", help="Metric of the grid heatmap.")] = "billed_input_tokens",
        fail_if: Annotated[list[str] | None, typer.Option("--fail-if", help="Exit 1 when METRIC OP NUMBER holds for any run, e.g. overflows>0, early_rate>0.2.")] = None,
        compactions_out: Annotated[Path | None, typer.Option("--compactions-output", help="Also write one row per compaction to this CSV (or .parquet) file.")] = None,
        strict: StrictOpt = False,
        jobs: JobsOpt = None,
        executor: ExecutorOpt = Executor.processes,
        per_session: PerSessionOpt = False,
        group_by: GroupByOpt = None,
    ) -> None:
        """Re-run an agent's compaction rule (its own, or another's with --policy) offline over a grid
        of settings: the window and the policy's own axes (pi-0/pi-1: --reserve, --keep-recent; codex:
        --auto-compact-limit; claude-code: --autocompact-pct). 16k = 16000.

        Terms: truth = the provider's prompt tokens for the simulated context; T = the policy's
        threshold (W - reserve for pi-0/pi-1); early = compacts while truth <= T; late = a check point over T without a compaction;
        mid-run = a request inside a run over T; overflow = a request over W; thrash = a compaction
        after which the next check point is still over T; rec. match = recorded compactions
        reproduced (matched/recorded, +extra simulated ones); cost = agent + summarisation requests,
        priced per token class with prompt caching.
        """
        _run(paths, context_window, reserve, keep_recent, policy, auto_compact_limit, autocompact_pct,
             max_output_tokens, cli_version, leaf, all_leaves, models, summary_tokens, format, output, plot, plot_metric, fail_if,
             compactions_out, strict, jobs, executor, per_session, group_by.value if group_by else None,
             truth_tokenizer.value)


def _checked_cli_version(cli_version: str) -> str:
    """--cli-version as given, refused (exit 2) unless it reads as a version."""
    from sessiontools.policies.version import parse_version

    if parse_version(cli_version) is None:
        raise UsageError(f"--cli-version takes a version such as 2.1.63 or 0.171.0, got {cli_version!r}")
    return cli_version


def _run(paths: list[Path] | None, context_window: list[str] | str | None, reserve: str, keep_recent: str, policy: Any,
         auto_compact_limit: str | None, autocompact_pct: str | None, max_output_tokens: int | None,
         cli_version: str | None, leaf: str | None, all_leaves: bool, models: list[Path] | None, summary_tokens: int | None,
         format: Fmt | None,
         output: Path | None, plot: Path | None, plot_metric: str, fail_if: list[str] | None,
         compactions_out: Path | None, strict: bool, jobs: int | None, executor: Executor,
         per_session: bool = False, group_by: str | None = None, truth_tokenizer: str = DEFAULT_TRUTH_TOKENIZER) -> None:
    from sessiontools.replay import METRICS
    from sessiontools.replay.frames import compactions_frame, runs_frame
    from sessiontools.report.gates import parse_gates, tripped
    from sessiontools.report.replay import replay_headline, replay_table
    from sessiontools.report.replay_figures import heatmap_figure, timeline_figure
    from sessiontools.report.writers import envelope

    check_leaf_options(leaf, all_leaves)
    gates = parse_gates(fail_if or [], METRICS)
    if plot_metric not in METRICS:
        raise UsageError(f"--plot-metric {plot_metric!r}: unknown; known: {', '.join(METRICS)}")
    format = resolve_format(format, output, Fmt)
    if format == Fmt.parquet and output is None:
        raise UsageError("--format parquet needs --output PATH")
    check_output_path(output)
    check_plot_path(plot)
    check_output_path(compactions_out, "--compactions-output")  # before the work, not after it
    from sessiontools.cli import windows as per_model_windows
    context_window, per_model = per_model_windows.split_windows(
        [context_window] if isinstance(context_window, str) else context_window)
    model_windows = {m: parse_tokens(w, f"--context-window {m}=", minimum=1) for m, w in per_model.items()}
    windows, reserves, keeps, agent_options = _grid_options(context_window, reserve, keep_recent, policy,
                                                            auto_compact_limit, autocompact_pct, max_output_tokens)
    if cli_version is not None:
        agent_options["cli_version"] = _checked_cli_version(cli_version)
    if truth_tokenizer != DEFAULT_TRUTH_TOKENIZER:
        agent_options["truth_tokenizer"] = truth_tokenizer
    if truth_tokenizer != "chars4":  # the tokenizer's counts of the truth model, kept across runs
        from sessiontools.cli.inputs import token_cache_path

        agent_options["token_store"] = str(token_cache_path())
    err = stderr_console()
    options = dict(windows=windows, reserves=reserves, keeps=keeps, policy=policy.value if policy else None,
                   leaf=leaf, all_leaves=all_leaves, summary_tokens=summary_tokens, models=model_files(models))
    per_file, loaded, misses = _replay_all(paths, err, model_windows, options, agent_options, plot is not None,
                                           jobs, policy, executor)
    records = [r for recs in per_file for r in recs]
    loaded.unreadable += per_model_windows.report_misses(err, misses)
    if not records:
        if loaded.unreadable:  # each file's reason is already on stderr, one line each
            raise typer.Exit(exit_code_for(loaded, strict))
        raise InputError("replay: no session could be replayed")
    if format == Fmt.json:
        emit_json(envelope("replay", runs=[r.to_dict() for r in records]), output)
    elif format in (Fmt.csv, Fmt.parquet):
        write_frame(runs_frame(records), format.value, output)
    elif per_session or len({r.session for r in records}) == 1:
        emit_renderables([replay_table(records)], output)
    else:  # a folder: totals per setting and group, the worst sessions first
        from sessiontools.report.replay_totals import folder_answer
        emit_renderables([folder_answer(records, group_by, gates[0].metric if gates else None)], output)
    if plot is not None:
        if len(records) == 1 and records[0].timeline is not None:
            fig = timeline_figure(records[0])
        else:
            fig = heatmap_figure(records, plot_metric)
        save_figure(fig, plot)
    if compactions_out is not None:
        write_frame(compactions_frame(records), "parquet" if compactions_out.suffix == ".parquet" else "csv",
                    compactions_out)
    err.print(replay_headline(records), markup=False)
    from sessiontools.cli.replay_notes import given_options, run_notes
    for note in run_notes(records, given_options(reserve, keep_recent, autocompact_pct, max_output_tokens,
                                                 auto_compact_limit), windows_given=bool(context_window or per_model)):
        err.print(note, markup=False, soft_wrap=True)
    problems = tripped(gates, [(run_label(r), r.metrics.to_dict()) for r in records])
    for msg in problems:
        err.print(msg, markup=False)
    code = exit_code_for(loaded, strict)
    raise typer.Exit(code or (EXIT_GATE if problems else 0))


def _replay_all(paths: list[Path] | None, err: Any, model_windows: dict[str, int], options: dict[str, Any],
                agent_options: dict[str, Any], timeline: bool, jobs: int | None, policy: Policy | None,
                executor: Executor) -> tuple[list[Any], Any, Any]:
    """Every file replayed in the cleaned view (`read.values.cleaned_for`); with --plot of one setting,
    the run carries its timeline (the figure is of the same run as the table). Sessions with too few
    requests to fit their truth model are only fitted first, then replayed once with a prior learnt
    from the rest, from memory (`cli.priors`: such a session's file is not read a second time)."""
    from sessiontools.cli import windows as per_model_windows
    from sessiontools.cli.priors import choices_kept, refit_kept, replay_keeping
    from sessiontools.read.values import cleaned_call
    from sessiontools.replay import replay_records
    from sessiontools.replay.registry import replay_agents

    first = partial(choices_kept, partial(replay_keeping, partial(cleaned_call, partial(
        replay_records, **agent_options, timeline=timeline, defer_prior_dominated=True))))
    per_file, loaded, misses = per_model_windows.replay_files(
        paths, err, model_windows, options, first, jobs, agents=replay_agents(policy.value if policy else None),
        executor=executor)
    replay_one = partial(choices_kept, partial(cleaned_call, partial(replay_records, **agent_options, **options,
                                                                     timeline=timeline)))
    with phase(err, "fitting priors; replaying the sessions with few requests"):
        return refit_kept(per_file, replay_one), loaded, misses
