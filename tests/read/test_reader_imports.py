"""Each agent's reader loads alone: reading a Pi file (directory expansion included) imports no other
agent's reader, and the Codex and Claude Code readers import nothing of Pi's (import-linter's
independence contract checks the imports written in the readers; this checks what a fresh
interpreter actually loads, package `__init__`s and lazy imports included)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"
READERS = ("sessiontools.read.pi", "sessiontools.read.codex", "sessiontools.read.claude_code")

_PROBE = """
import json, sys
from sessiontools.read.sources import expand_sources, load_source
from sessiontools.transcript.load import transcript_of
for f in expand_sources(sys.argv[1:]):
    transcript_of(load_source(f))
print(json.dumps(sorted(sys.modules)))
"""


def loaded_readers(*paths: Path | str) -> set[str]:
    """The agents' reader packages a fresh interpreter has loaded after expanding `paths` and reading
    each file into its transcript."""
    out = subprocess.run([sys.executable, "-c", _PROBE, *map(str, paths)], capture_output=True, text=True,
                         check=True).stdout
    mods = json.loads(out)
    return {r for r in READERS for m in mods if m == r or m.startswith(r + ".")}


def _samples(pattern: str) -> list[Path]:
    files = sorted(SAMPLES.glob(pattern))
    if not files:
        pytest.skip(f"no sample sessions {pattern}")
    return files


def test_reading_pi_files_loads_only_pis_reader(tmp_path: Path) -> None:
    """A Pi file, named or found in a directory, loads Pi's reader alone (`expand_sources` used to
    import the Claude Code reader for its subagent rule: ~10M instructions per run)."""
    pi = _samples("pi*-tiny.jsonl")[0]
    (tmp_path / pi.name).write_bytes(pi.read_bytes())
    assert loaded_readers(pi) == {"sessiontools.read.pi"}
    assert loaded_readers(tmp_path) == {"sessiontools.read.pi"}


@pytest.mark.parametrize("folder", ["codex", "claude-code"])
def test_the_other_readers_load_nothing_of_pis(folder: str) -> None:
    files = _samples(f"{folder}/*.jsonl")
    loaded = loaded_readers(*files[:3])
    assert loaded and "sessiontools.read.pi" not in loaded, loaded


def test_reading_claude_code_files_loads_no_codex_reader() -> None:
    """Detection asks the Codex reader first: its first-line check lives in `read.sniff`, so a Claude
    Code run does not import the Codex reader to hear no (about 0.015 s of CPU per run)."""
    files = _samples("claude-code/*.jsonl")
    assert loaded_readers(*files[:3]) == {"sessiontools.read.claude_code"}


def test_importing_each_reader_loads_no_other() -> None:
    for reader in READERS:
        code = f"import json, sys, {reader}.load; print(json.dumps(sorted(sys.modules)))"
        mods = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                         check=True).stdout)
        others = {r for r in READERS if r != reader for m in mods if m == r or m.startswith(r + ".")}
        assert not others, (reader, others)
