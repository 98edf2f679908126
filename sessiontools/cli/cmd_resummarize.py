"""`sessiontools resummarize`."""

import os
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from sessiontools.cli.choices import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS
from sessiontools.cli.diagnostics import safe_text
from sessiontools.cli.inputs import exit_code_for, load_all, token_cache_path
from sessiontools.cli.options import EXIT_INPUT, LeafOpt, PathsArg, StrictOpt, TableJson
from sessiontools.cli.outputs import emit_json, emit_renderables, stderr_console
from sessiontools.cli.token_options import parse_token_list, tokens_option
from sessiontools.errors import InputError, UsageError
from sessiontools.names import RESUMMARIZE_HELP, RESUMMARIZE_POLICIES


class ApiChoice(str, Enum):
    openai = "openai-completions"
    anthropic = "anthropic-messages"


#: `--policy`'s choices (`names.RESUMMARIZE_POLICIES`).
SummaryPolicy = Enum("SummaryPolicy", {p.value: p.value for p in RESUMMARIZE_POLICIES}, type=str)  # type: ignore[misc]


#: Where the API key is read from, per wire format (the environment only; never an option's value).
KEY_ENV = {"openai-completions": "OPENAI_API_KEY", "anthropic-messages": "ANTHROPIC_API_KEY"}


def register(app: typer.Typer) -> None:
    @app.command()
    def resummarize(
        paths: PathsArg = None,
        endpoint: Annotated[str, typer.Option("--endpoint", help="The model server's base URL, e.g. http://127.0.0.1:11434/v1 (Ollama), http://127.0.0.1:8080/v1 (llama.cpp), https://api.openai.com/v1.")] = ...,  # type: ignore[assignment]
        model: Annotated[str, typer.Option("--model", help="PROVIDER/ID: ID is sent to the server; PROVIDER/ID prices the calls when the catalogue knows it.")] = ...,  # type: ignore[assignment]
        api: Annotated[ApiChoice, typer.Option("--api", help="Wire format: openai-completions (chat completions) or anthropic-messages.")] = ApiChoice.openai,
        prompt: Annotated[Path | None, typer.Option("--prompt", help=RESUMMARIZE_HELP["prompt"])] = None,
        update_prompt: Annotated[Path | None, typer.Option("--update-prompt", help=RESUMMARIZE_HELP["update_prompt"])] = None,
        context_window: Annotated[str | None, typer.Option("--context-window", help="Window(s) W, comma-separated (default: the recorded model's, from the catalogue).")] = None,
        reserve: Annotated[str, typer.Option("--reserve", help="reserveTokens value(s), comma-separated.")] = str(DEFAULT_RESERVE_TOKENS),
        keep_recent: Annotated[str, typer.Option("--keep-recent", help="keepRecentTokens value(s), comma-separated.")] = str(DEFAULT_KEEP_RECENT_TOKENS),
        policy: Annotated[SummaryPolicy | None, typer.Option("--policy", help=RESUMMARIZE_HELP["policy"])] = None,  # type: ignore[valid-type]
        auto_compact_limit: Annotated[str | None, typer.Option("--auto-compact-limit", help=RESUMMARIZE_HELP["auto_compact_limit"])] = None,
        leaf: LeafOpt = None,
        summary_tokens: Annotated[int | None, tokens_option("--summary-tokens", minimum=1, help="Size the replay gives a new summary when deciding where compactions fire (default: learnt from the recorded ones).")] = None,
        model_max_tokens: Annotated[int | None, tokens_option("--model-max-tokens", minimum=1, help=RESUMMARIZE_HELP["model_max_tokens"])] = None,
        output_dir: Annotated[Path, typer.Option("--output-dir", "-o", help="Directory for the new session files: <input stem>.<setting>.jsonl.")] = ...,  # type: ignore[assignment]
        format: Annotated[TableJson, typer.Option("--format", "-f", help="table, or json (every file with each compaction's requests) on stdout.")] = TableJson.table,
        stream: Annotated[bool, typer.Option("--stream/--no-stream", help="openai-completions: stream the answers (server-sent events).")] = False,
        max_tokens_field: Annotated[str, typer.Option("--max-tokens-field", help="openai-completions: max_tokens, or max_completion_tokens (OpenAI's newer models).")] = "max_tokens",
        concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Requests in flight at once (settings and files run in parallel; one chain is sequential).")] = 4,
        timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds to wait for one answer.")] = 300.0,
        retries: Annotated[int, typer.Option("--retries", min=0, help="Retries after a connection error, a timeout, HTTP 429 or 5xx (back-off 1 s, 2 s, 4 s, ...; Retry-After honoured).")] = 3,
        no_cache: Annotated[bool, typer.Option("--no-cache", help="Send every request again (the fresh answers replace the cached ones).")] = False,
        cache_dir: Annotated[Path | None, typer.Option("--cache-dir", help="Response cache (default: the user cache directory's resummarize/).")] = None,
        strict: StrictOpt = False,
    ) -> None:
        """Regenerate the summaries each setting's compactions would get from a summariser.

        Replays every Pi session at each setting (as `replay` does), builds the summarisation
        request Pi itself sends at each simulated compaction (its prompts, or --prompt /
        --update-prompt), chains them (each regenerated summary is the next one's previous
        summary), sends them to the endpoint (key from $OPENAI_API_KEY or $ANTHROPIC_API_KEY),
        and writes a new Pi session per input and setting under -o with the regenerated
        compactions at their simulated places. Answers are cached under a hash of the exact
        request: a re-run sends nothing. Compare the files with `diff-summaries --compare`.

        Codex 0.171.0 rollouts: each local compaction of each setting (window x
        --auto-compact-limit) is Codex's own Responses request (its compact prompt over the
        history), sent to ENDPOINT/responses, and a new rollout is written. Remote (encrypted)
        compactions cannot be regenerated; Claude Code transcripts are not supported.
        """
        _run(paths, endpoint, model, api, prompt, update_prompt, context_window, reserve, keep_recent, policy, leaf,
             summary_tokens, model_max_tokens, output_dir, format, stream, max_tokens_field, concurrency, timeout,
             retries, no_cache, cache_dir, strict, auto_compact_limit)


def _prompt_text(opt: str, path: Path | None) -> str | None:
    """The text of a --prompt / --update-prompt file (its final newline dropped), None when not given."""
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{opt} {path}: {exc}") from None
    return text[:-1] if text.endswith("\n") else text


def _run(paths, endpoint, model, api, prompt, update_prompt, context_window, reserve, keep_recent, policy, leaf,  # type: ignore[no-untyped-def]
         summary_tokens, model_max_tokens, output_dir, format, stream, max_tokens_field, concurrency, timeout, retries,
         no_cache, cache_dir, strict, auto_compact_limit=None) -> None:
    from sessiontools.cli.inputs import progress
    from sessiontools.endpoint.cache import ResponseCache
    from sessiontools.endpoint.client import Api, Endpoint, EndpointConfig
    from sessiontools.endpoint.run import Grid, plan_all, prompt_keys, resummarize, total_requests
    from sessiontools.replay.catalog import lookup
    from sessiontools.report.resummarize import resummarize_headline, resummarize_table
    from sessiontools.report.writers import envelope

    provider, sep, model_id = model.partition("/")
    if not sep or not provider or not model_id:
        raise UsageError(f"--model {model!r}: give PROVIDER/ID, e.g. ollama/qwen3:8b")
    if max_tokens_field not in ("max_tokens", "max_completion_tokens"):
        raise UsageError(f"--max-tokens-field {max_tokens_field!r}: max_tokens or max_completion_tokens")
    if output_dir.exists() and not output_dir.is_dir():
        raise UsageError(f"-o {output_dir}: not a directory")
    err = stderr_console()
    info = lookup(provider, model_id)  # prices, and the model's output limit (Pi 1.x asks for it)
    if model_max_tokens is None and info is not None and info.max_tokens:
        model_max_tokens = info.max_tokens
    grid = Grid(parse_token_list(context_window, "--context-window", minimum=1),
                parse_token_list(reserve, "--reserve") or [DEFAULT_RESERVE_TOKENS],
                parse_token_list(keep_recent, "--keep-recent") or [DEFAULT_KEEP_RECENT_TOKENS],
                policy.value if policy else None, leaf, summary_tokens, model_max_tokens,
                parse_token_list(auto_compact_limit, "--auto-compact-limit", minimum=1) or [None])
    from sessiontools.replay.registry import summarizers, unsupported

    loaded = load_all(paths, err, any_agent=True, skip=unsupported)
    sessions = loaded.sessions
    if not sessions:
        if loaded.unreadable:
            raise typer.Exit(exit_code_for(loaded, strict))
        what = " or ".join(s.what for s in summarizers().values())
        raise InputError(f"resummarize: no {what} to resummarize (see the notes above)")
    chains = plan_all(sessions, grid)
    keys = prompt_keys(chains)  # the prompt files are read when a chain's prompt can be replaced
    texts = (_prompt_text("--prompt", prompt), _prompt_text("--update-prompt", update_prompt)) if keys else (None, None)
    prompts_by_key = {(s, k): s.prompts(k, *texts) for s, k in keys}
    key = os.environ.get(KEY_ENV[api.value]) or None
    config = EndpointConfig(endpoint, model_id, Api(api.value), key, stream, max_tokens_field, timeout, retries,
                            concurrency=concurrency)
    cache_root = cache_dir if cache_dir is not None else token_cache_path().parent / "resummarize"
    client = Endpoint(config, ResponseCache(cache_root), refresh=no_cache)
    with progress(err, total_requests(chains), "summarising") as advance:
        records = resummarize(chains, client, output_dir, concurrency=concurrency, prompts=prompts_by_key,
                              prices=info.prices if info else None, on_answer=advance)
    if format == TableJson.json:
        emit_json(envelope("resummarize", endpoint=endpoint, model=model, api=api.value, outputs=records), None)
    else:
        emit_renderables([resummarize_table(records)], None)
    for r in records:
        if r["error"]:
            st = r["settings"]
            setting = f"window {st['context_window']}, reserve {st['reserve_tokens']}, keep {st['keep_recent_tokens']}"
            err.print(safe_text(f"error: {r['session']} ({setting}): {r['error']}"))
    err.print(resummarize_headline(records, client.sent, client.hits), markup=False)
    code = exit_code_for(loaded, strict)
    raise typer.Exit(code or (EXIT_INPUT if any(r["error"] for r in records) else 0))

