"""`sessiontools --help` starts fast: none of the heavy libraries is imported to print help."""

from __future__ import annotations

import os
import subprocess
import sys

HEAVY = ("numpy", "polars", "matplotlib", "tiktoken", "dask", "duckdb", "markdown_it", "rich", "orjson", "pyarrow",
         "fsspec")
#: sessiontools modules that `import sessiontools.cli` (and any --help) may load: the CLI's own, the errors.
LIGHT = ("sessiontools", "sessiontools.cli", "sessiontools.errors")

CODE = """
import sys
from sessiontools.cli import main
rc = main(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})
ours = sorted(m for m in sys.modules if m.startswith("sessiontools") and not m.startswith({light!r}))
print("HEAVY=" + ",".join(heavy + ours), file=sys.stderr)
"""


def _commands() -> list[list[str]]:
    """Every command and subcommand, from the app itself (a new command is covered without editing here)."""
    import typer.main

    from sessiontools.cli import app

    group = typer.main.get_command(app)
    out: list[list[str]] = [[]]

    def walk(cmd: object, prefix: list[str]) -> None:
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            out.append([*prefix, name])
            walk(sub, [*prefix, name])

    walk(group, [])
    return out


def test_every_help_imports_no_heavy_library() -> None:
    """A fresh interpreter (sys.modules clean) runs the CLI's --help and each command's --help: no
    heavy library (nor rich, nor any analysis, reader or report module) is imported."""
    commands = _commands()
    assert {"inspect", "cut", "replay", "estimate-error", "diff-summaries", "export", "report"} <= {
        c[0] for c in commands if c}
    for cmd in commands:
        args = [*cmd, "--help"]
        proc = subprocess.run([sys.executable, "-c", CODE.format(heavy=set(HEAVY), light=LIGHT), *args],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "Usage" in proc.stdout
        line = [ln for ln in proc.stderr.splitlines() if ln.startswith("HEAVY=")][-1]
        assert line == "HEAVY=", f"sessiontools {' '.join(args)} imported {line[6:]}"


def test_import_cli_imports_no_heavy_library() -> None:
    """`import sessiontools.cli` alone (what the console script does first) stays light."""
    code = ("import sys, sessiontools.cli; print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in "
            f"{set(HEAVY)!r})))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"import sessiontools.cli imported {proc.stdout.strip()}"


def test_version_imports_no_heavy_library() -> None:
    proc = subprocess.run([sys.executable, "-c", CODE.format(heavy=set(HEAVY), light=LIGHT), "--version"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("sessiontools ")
    assert proc.stderr.strip().splitlines()[-1] == "HEAVY="


def test_help_choices_have_one_home() -> None:
    """What --help shows is defined once, in sessiontools.names, and the layers use those objects."""
    from sessiontools import names
    from sessiontools.analysis.drift import METRICS as DRIFT
    from sessiontools.analysis.estimate import DEFAULT_THRESHOLD_GRID
    from sessiontools.cli import choices
    from sessiontools.policies.base import PolicyName
    from sessiontools.policies.pi import settings
    from sessiontools.policies.registry import POLICIES
    from sessiontools.tokens.calibrated import Tokenizer

    assert settings.CompactionSettings().reserve_tokens == names.DEFAULT_RESERVE_TOKENS
    assert settings.CompactionSettings().keep_recent_tokens == names.DEFAULT_KEEP_RECENT_TOKENS
    assert PolicyName is names.PolicyName and Tokenizer is names.Tokenizer is choices.CalibrationX
    assert DRIFT is names.DRIFT_METRICS and DEFAULT_THRESHOLD_GRID is names.DEFAULT_THRESHOLD_GRID
    assert [p.value for p in choices.Policy] == [n.value for n in POLICIES] == [n.value for n in names.POLICY_ORDER]
    assert set(POLICIES) == set(PolicyName)


def test_command_annotations_are_not_strings() -> None:
    """Typer evaluates string annotations (`from __future__ import annotations`) again on every start;
    the modules declaring commands keep them as objects."""
    from sessiontools.cli import app

    for info in [*app.registered_commands, app.registered_callback]:
        fn = info.callback
        strings = [k for k, v in fn.__annotations__.items() if isinstance(v, str)]
        assert not strings, f"{fn.__module__}.{fn.__name__}: string annotations {strings}"


#: What `inspect FILE --format json` on a Pi session must not import: rich (its one stderr line is
#: plain), the other agents' readers (the file starts with a Pi header; a file named needs no Claude
#: Code rule for directories), the process pool (one file), the neutral transcript's model and Pi's
#: context builder (Pi's inspect reads neither: ~40M instructions of dataclasses, issue 28).
NOT_FOR_ONE_PI_FILE = ("rich", "sessiontools.read.codex", "sessiontools.read.claude_code", "msgspec",
                       "multiprocessing", "concurrent.futures", "sessiontools.transcript.model",
                       "sessiontools.transcript.pi.context")


def test_inspect_json_of_one_pi_file_imports_only_what_it_uses(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The small-file run pays for what it uses only (issue 28: start-up is most of its CPU); its
    output and stderr lines are what they were (the headline, `wrote FILE`)."""
    from pathlib import Path

    sample = Path(__file__).resolve().parents[2] / "sample_sessions" / "pi0-tiny.jsonl"
    out = tmp_path / "out.json"
    code = ("import sys\nfrom sessiontools.cli import main\nrc = main(sys.argv[1:])\n"
            f"bad = sorted(m for m in sys.modules if m.startswith({NOT_FOR_ONE_PI_FILE!r}))\n"
            "print('LOADED=' + ','.join(bad), file=sys.stderr)\nsys.exit(rc)\n")
    proc = subprocess.run([sys.executable, "-c", code, "inspect", str(sample), "--format", "json", "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[-1] == "LOADED=", lines[-1]
    assert lines[0] == f"wrote {out}" and lines[1].startswith("inspect: 1 session(s), ")
    assert '"inspect"' in out.read_text()


def test_a_command_run_declares_only_that_command() -> None:
    """`sessiontools CMD ...` imports and declares CMD alone (issue 28: the other command modules and
    Typer's conversion of their parameters were start-up paid by every run); its help is the one the
    whole app gives."""
    from sessiontools import cli

    code = ("import sys\nfrom sessiontools.cli import main\nrc = main(sys.argv[1:])\n"
            "print('CMDS=' + ','.join(sorted(m for m in sys.modules if m.startswith('sessiontools.cli.cmd_'))), "
            "file=sys.stderr)\n")
    whole = "import sys\nfrom sessiontools.cli import app\napp(args=sys.argv[1:], standalone_mode=False)\n"
    env = {**os.environ, "COLUMNS": "100"}
    for name, loaded in (("inspect", ""), ("replay", "sessiontools.cli.cmd_replay")):
        proc, ref = (subprocess.run([sys.executable, "-c", c, name, "--help"], capture_output=True, text=True,
                                    timeout=120, env=env) for c in (code, whole))
        assert proc.returncode == 0 and ref.returncode == 0, proc.stderr + ref.stderr
        assert proc.stderr.splitlines()[-1] == f"CMDS={loaded}"
        assert proc.stdout == ref.stdout and proc.stdout.startswith(f"Usage: -c {name} [OPTIONS]")
    names = [cli._command_name(c) for c in cli.app.registered_commands]
    assert names == [*cli._OWN_COMMANDS, *cli._COMMAND_MODULES]  # every command, in --help's order
    import pkgutil

    modules = sorted(m.name for m in pkgutil.iter_modules(cli.__path__) if m.name.startswith("cmd_"))
    assert modules == [f"cmd_{n.replace('-', '_')}" for n in cli._COMMAND_MODULES]


#: What `inspect` of any agent's files, JSON or table, never needs: the libraries of the other
#: commands (dataframes, plots, tokenizers, Dask), the other commands' modules, importlib.resources
#: (the price catalogue is a plain file read), hashlib (OpenSSL's start: only the caches hash a
#: session) and secrets (`-o`'s temporary name is `os.urandom`'s, as `secrets.token_hex`'s is).
NOT_FOR_INSPECT = ("numpy", "polars", "matplotlib", "tiktoken", "dask", "distributed", "pyarrow", "duckdb",
                   "markdown_it", "fsspec", "msgspec", "importlib.resources", "sessiontools.cli.cmd_",
                   "sessiontools.tokens", "sessiontools.replay", "sessiontools.policies", "hashlib", "_hashlib",
                   "secrets")


def test_inspect_of_every_agent_imports_only_what_it_uses(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`inspect DIR --format json` (the bench command) and the default table, over Pi, Claude Code and
    Codex files together, in a fresh interpreter: none of NOT_FOR_INSPECT is imported; the JSON run
    imports no rich (issue 28: start-up is part of every ratio against ccusage)."""
    from pathlib import Path

    samples = Path(__file__).resolve().parents[2] / "sample_sessions"
    files = [samples / "pi0-tiny.jsonl", *sorted((samples / "claude-code").glob("*.jsonl"))[:1],
             *sorted((samples / "codex").glob("*.jsonl"))[:1]]
    assert len(files) == 3
    code = ("import sys\nfrom sessiontools.cli import main\nrc = main(sys.argv[1:])\n"
            f"bad = sorted(m for m in sys.modules if m.startswith({NOT_FOR_INSPECT!r}) or m == 'rich' and {{json}})\n"
            "print('LOADED=' + ','.join(bad), file=sys.stderr)\nsys.exit(rc)\n")
    for fmt in ("json", "table"):
        proc = subprocess.run([sys.executable, "-c", code.format(json=fmt == "json"), "inspect", *map(str, files),
                               "--format", fmt, "-o", str(tmp_path / ("out.json" if fmt == "json" else "out.txt")), "-j", "1"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.splitlines()[-1] == "LOADED=", (fmt, proc.stderr.splitlines()[-1])


def test_inspect_of_codex_or_claude_code_files_imports_no_pi_reader(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`inspect FILE --format json` of a Codex rollout or a Claude Code transcript reads no Pi session:
    `sessiontools.read` resolves the Pi reader's names on first use, so none of it is imported
    (issue 28: ~13M instructions of such a run's start-up)."""
    from pathlib import Path

    samples = Path(__file__).resolve().parents[2] / "sample_sessions"
    code = ("import sys\nfrom sessiontools.cli import main\nrc = main(sys.argv[1:])\n"
            "bad = sorted(m for m in sys.modules if m.startswith(('sessiontools.read.pi', 'sessiontools.transcript.pi')))\n"
            "print('LOADED=' + ','.join(bad), file=sys.stderr)\nsys.exit(rc)\n")
    for f in (sorted((samples / "codex").glob("*.jsonl"))[0], sorted((samples / "claude-code").glob("*.jsonl"))[0]):
        proc = subprocess.run([sys.executable, "-c", code, "inspect", str(f), "--format", "json", "-o",
                               str(tmp_path / "out.json")], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.splitlines()[-1] == "LOADED=", (f.name, proc.stderr.splitlines()[-1])


def test_estimate_error_json_imports_no_rich(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`estimate-error FILES --format json` (the bench command of `estimate_error_cold_vs_tokenize`)
    in a fresh interpreter imports no rich: its tables and figure are `report.estimate_error`'s, the
    headline is made from the JSON summary (`report.estimate_json`; rich's console and table were
    about a tenth of a cold run's imports, issue 28). The table output still renders with rich."""
    from pathlib import Path

    samples = Path(__file__).resolve().parents[2] / "sample_sessions"
    code = ("import sys\nfrom sessiontools.cli import main\nrc = main(sys.argv[1:])\n"
            "print('RICH=' + str('rich' in sys.modules), file=sys.stderr)\nsys.exit(rc)\n")
    for fmt, suffix, rich in (("json", "json", False), ("table", "txt", True)):
        proc = subprocess.run([sys.executable, "-c", code, "estimate-error", str(samples / "pi0-chinese.jsonl"),
                               "--estimators", "chars4", "--no-cache", "--format", fmt, "-o", str(tmp_path / f"out.{suffix}")],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.splitlines()[-1] == f"RICH={rich}", (fmt, proc.stderr)
