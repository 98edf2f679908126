"""Context windows for models the catalogue lacks: `--context-window MODEL=W`, OpenClaw's config,
one line per missing model (with its file count and a "did you mean").

Replaying a folder without `--context-window` takes each file's window from the catalogue (bundled,
Pi's `models.json`, `--models`). A model found nowhere used to cost one error line per file and a
run with no result. Now:

- `--context-window PROVIDER/MODEL=W` (repeatable, beside the plain `--context-window W,...`) gives one
  model its window; a bare `MODEL=W` applies to that id under any provider the catalogue lacks;
- OpenClaw's own config (`$OPENCLAW_CONFIG_PATH`, else `~/.openclaw/openclaw.json`: JSON5 with
  Pi's `models.providers` shape) is read like a Pi `models.json` when it exists;
- files whose model has no window are left out of the run; the others finish; one line per missing
  model says how many files were left out and, when the same id exists under another provider in
  the catalogue, which (`did you mean qwen-token-plan/MiniMax-M2.5`); the exit code is then 3.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sessiontools.errors import UsageError
from sessiontools.replay.run_document import MissingModel, NoReplay


def split_windows(values: Sequence[str] | None) -> tuple[str | None, dict[str, str]]:
    """`--context-window` values: the plain comma-separated windows (or None) and {MODEL: W text}."""
    plain: list[str] = []
    per_model: dict[str, str] = {}
    for v in values or []:
        for part in (p.strip() for p in v.split(",")):
            if not part:
                continue
            model, eq, w = part.rpartition("=")
            if eq:
                if not model.strip() or not w.strip():
                    raise UsageError(f"--context-window {part!r}: give MODEL=W, e.g. minimax/MiniMax-M2.5=200k")
                per_model[model.strip()] = w.strip()
            else:
                plain.append(part)
    return (",".join(plain) if plain else None), per_model


def replay_or_miss(source: Any, *, replay: Any, keep_missing: bool = False, **options: Any) -> list[Any]:
    """`replay.session.replay_or_left_out`: the file's run records, or the one record a file left out
    gets (`MissingModel`: its model has no window, `NoReplay`: nothing to replay).
    `keep_missing`: a `MissingModel` keeps the source (`cli.priors.kept`), to be replayed again from
    memory once a window is known for its model (`replay_files`' second pass)."""
    from sessiontools.replay.session import replay_or_left_out

    out = replay_or_left_out(source, replay=replay, **options)
    if keep_missing and len(out) == 1 and isinstance(out[0], MissingModel):
        from sessiontools.cli.priors import kept

        return kept(out, source)
    return out


def split_misses(per_file: Iterable[list[Any]]) -> tuple[list[list[Any]], dict[str, list[str]]]:
    """The files' run records, and {missing model: its files} for the files left out."""
    kept: list[list[Any]] = []
    misses: dict[str, list[str]] = {}
    for recs in per_file:
        if len(recs) == 1 and isinstance(recs[0], MissingModel):
            misses.setdefault(recs[0].model, []).append(recs[0].session)
        else:
            kept.append(recs)
    return kept, misses


def did_you_mean(provider_model: str, known: Iterable[tuple[str, str]]) -> list[str]:
    """Catalogue entries with the same model id under other providers (`provider/id`): the exact id
    first, then the id without case and ids that end in `/id` (a hub's `org/id`)."""
    provider, _, model = provider_model.partition("/") if "/" in provider_model else ("", "", provider_model)
    low = model.lower()
    exact, near = [], []
    for p, i in known:
        if p == provider:
            continue
        if i == model:
            exact.append(f"{p}/{i}")
        elif i.lower() == low or i.lower().endswith("/" + low):
            near.append(f"{p}/{i}")
    return list(dict.fromkeys(sorted(exact) + sorted(near)))


def miss_lines(misses: Mapping[str, Sequence[str]], known: Iterable[tuple[str, str]]) -> list[str]:
    """One line per missing model, most files first."""
    known = list(known)
    lines = []
    for model, files in sorted(misses.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        hint = did_you_mean(model, known)
        also = f"; did you mean {', '.join(hint[:3])}{' ...' if len(hint) > 3 else ''}?" if hint else ""
        lines.append(f"error: model {model} is not in the catalogue: {len(files)} file(s) left out{also} "
                     f"Give its window with --context-window {model}=W (or --models FILE)")
    return lines


def _strip_json5(text: str) -> str:
    """JSON5 -> JSON for config files: comments, trailing commas and unquoted keys (strings kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            s = text[i + 1:j]
            out.append('"' + (s.replace('"', '\\"') if c == "'" else s) + '"')
            i = j + 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(c)
            i += 1
    joined = "".join(out)
    joined = re.sub(r",(\s*[}\]])", r"\1", joined)
    return re.sub(r'([{,]\s*)([A-Za-z_$][\w$-]*)(\s*:)', r'\1"\2"\3', joined)


def openclaw_config() -> Path | None:
    """OpenClaw's config file when it exists: `$OPENCLAW_CONFIG_PATH`, else `~/.openclaw/openclaw.json`."""
    env = os.environ.get("OPENCLAW_CONFIG_PATH")
    p = Path(env).expanduser() if env else Path.home() / ".openclaw" / "openclaw.json"
    return p if p.is_file() else None


def openclaw_providers(data: bytes) -> dict[str, Any]:
    """The `models.providers` object of an OpenClaw config (JSON5), in Pi's models.json shape."""
    import orjson

    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        doc = orjson.loads(_strip_json5(data.decode("utf-8", "replace")))
    models = doc.get("models") if isinstance(doc, dict) else None
    providers = models.get("providers") if isinstance(models, dict) else None
    return providers if isinstance(providers, dict) else {}


def _entry(model_id: str, window: int, provider: str | None) -> dict[str, Any]:
    """A Pi models.json model entry; the bundled prices kept when the catalogue knows the model."""
    from sessiontools.replay.catalog import lookup

    entry: dict[str, Any] = {"id": model_id, "contextWindow": window}
    info = lookup(provider, model_id) if provider else None
    if info is not None and info.prices:
        keys = (("input", "input"), ("output", "output"), ("cache_read", "cacheRead"), ("cache_write", "cacheWrite"))
        entry["cost"] = {theirs: info.prices.get(ours, 0.0) * 1e6 for ours, theirs in keys}
    return entry


def windows_file(per_model: Mapping[str, int], misses: Iterable[str] = (), openclaw: Mapping[str, Any] | None = None,
                 directory: str | None = None) -> str | None:
    """A temporary models.json (Pi's format) with OpenClaw's providers and the `MODEL=W` windows:
    `provider/model` as given, a bare id for each missing `provider/model` with that id."""
    import orjson

    providers: dict[str, Any] = {k: dict(v) for k, v in (openclaw or {}).items() if isinstance(v, dict)}
    for model, w in per_model.items():
        targets = [model] if "/" in model else [m for m in misses if m.partition("/")[2] == model]
        for target in targets:
            prov, _, mid = target.partition("/")
            models = providers.setdefault(prov, {}).setdefault("models", [])
            models[:] = [m for m in models if not (isinstance(m, dict) and m.get("id") == mid)]
            models.append(_entry(mid, w, prov))
    if not providers:
        return None
    fd, path = tempfile.mkstemp(prefix="sessiontools-windows-", suffix=".json", dir=directory)
    with os.fdopen(fd, "wb") as fh:
        fh.write(orjson.dumps({"providers": providers}))
    return path


def _temp(path: str | None) -> str | None:
    """A temporary windows file, removed when the process exits."""
    if path is not None:
        import atexit

        atexit.register(_unlink, path)
    return path


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _openclaw(err: Any) -> dict[str, Any]:
    from sessiontools.report.text import safe_text

    path = openclaw_config()
    if path is None:
        return {}
    try:
        return openclaw_providers(path.read_bytes())
    except (OSError, ValueError) as exc:
        err.print(safe_text(f"note: {path}: OpenClaw's config not read ({exc}); its models' windows are not used"))
        return {}


def replay_files(paths: Any, err: Any, model_windows: Mapping[str, int], options: dict[str, Any], replay: Any,
                 jobs: int | None, *, agents: Any, executor: Any) -> tuple[list[list[Any]], Any, dict[str, list[str]]]:
    """`run_files` of `replay(source, **options)` over every file, with OpenClaw's windows and the
    `provider/model=W` ones; the files whose model is still missing run again when a bare `id=W`
    names it. Returns the run records per file, the `Loaded` summary and {missing model: files}.
    `options["models"]` gets the windows files (the caller's later replays use them too)."""
    from functools import partial

    from sessiontools.cli.inputs import run_files

    providers = _openclaw(err)
    first = _temp(windows_file({m: w for m, w in model_windows.items() if "/" in m}, (), providers))
    options["models"] = [*options["models"], *([first] if first else [])]
    bare = {m: w for m, w in model_windows.items() if "/" not in m}
    # A file left out for its model's window keeps its source when a bare id may give it one.
    fn = partial(replay_or_miss, replay=partial(replay, **options), keep_missing=bool(bare))
    per_file, loaded = run_files(paths, err, fn, jobs, "replaying", agents=agents, executor=executor,
                               content_hash=True)  # (the key of the counter choices kept: `choices_kept`)
    per_file = left_out_empty(err, per_file)
    sources = {recs[0].session: src for recs in per_file if (src := getattr(recs, "source", None)) is not None}
    per_file, misses = split_misses(per_file)
    named = {m for m in misses if m.partition("/")[2] in bare}
    if named:
        second = _temp(windows_file(bare, named))
        options["models"] = [*options["models"], *([second] if second else [])]
        again = [f for m in sorted(named) for f in misses[m]]
        fn = partial(replay_or_miss, replay=partial(replay, **options))
        more, bad = _replay_sources(err, fn, [(f, sources[f]) for f in again if f in sources])
        reread = [Path(f) for f in again if f not in sources]  # (a large file, a URL: read again)
        if reread:
            more2, loaded2 = run_files(reread, err, fn, jobs, "replaying (windows given by id)", agents=agents,
                                       executor=executor, content_hash=True)
            more, bad = more + more2, bad + loaded2.unreadable
        more, still = split_misses(more)
        per_file += more
        loaded.unreadable += bad
        misses = {**{m: fs for m, fs in misses.items() if m not in named}, **still}
    unused = [m for m in model_windows if "/" not in m and m not in {x.partition("/")[2] for x in named}]
    if unused and options.get("windows") is None:
        err.print(f"note: --context-window {', '.join(unused)}=...: no file's model lacked a window under that id "
                  "(give provider/model to override a catalogued window)", markup=False, soft_wrap=True)
    return per_file, loaded, misses


def _replay_sources(err: Any, fn: Any, sources: Sequence[tuple[str, Any]]) -> tuple[list[list[Any]], int]:
    """`fn(source)` of each kept source, in this process (its file is not read again); a file whose
    replay fails is said in one line and counted, the others go on (as `run_files` does)."""
    from sessiontools.errors import SessionToolsError
    from sessiontools.read import parallel
    from sessiontools.report.text import safe_text

    out, bad = [], 0
    for path, source in sources:
        try:
            out.append(fn(source))
            continue
        except UsageError:
            raise
        except SessionToolsError as exc:
            line = str(exc)
        except Exception as exc:
            if not parallel.CONTAIN_ERRORS:
                raise
            line = parallel.internal_error(path, exc)
        err.print(safe_text(f"error: {line}"), markup=False, soft_wrap=True)
        bad += 1
    return out, bad


def left_out_empty(err: Any, per_file: list[list[Any]]) -> list[list[Any]]:
    """The files with something to replay; one note line for each one without a model request (a
    rollout closed before its first response: readable, so not an input error)."""
    from sessiontools.report.text import safe_text

    kept = []
    for recs in per_file:
        if len(recs) == 1 and isinstance(recs[0], NoReplay):
            err.print(safe_text(f"note: {recs[0].reason}; left out"), markup=False, soft_wrap=True)
        else:
            kept.append(recs)
    return kept


def report_misses(err: Any, misses: Mapping[str, Sequence[str]]) -> int:
    """One line per missing model on stderr; the number of files left out (they make the exit code 3)."""
    from sessiontools.replay.catalog import catalogue
    from sessiontools.report.text import safe_text

    known = [(m["provider"], m["id"]) for m in catalogue()["models"]]
    for line in miss_lines(misses, known):
        err.print(safe_text(line), soft_wrap=True)
    return sum(len(fs) for fs in misses.values())
