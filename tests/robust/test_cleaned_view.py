"""Raw entries for the Pi port, a cleaned view for everything reported (issue 27).

Pi keeps a lone surrogate escape as written, and its counts depend on it: `JSON.stringify` writes
one inside tool-call arguments as a six-character escape. So the Pi reader's entries keep it (the
exact port and `chars4` read them), while the neutral transcript, inspect's facts, replay records and
dataset rows carry U+FFFD. A file name that is not UTF-8 (its bytes decoded to lone surrogates) is
cleaned the same way. No output retries a polars frame with cleaned strings any more: what reaches a
frame is clean already."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiontools.read import parallel, values
from sessiontools.read.sources import load_source
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.load import transcript_of
from tests.conftest import SAMPLES
from tests.robust.mutate import dumps, run

_KEEP = ("type", "role", "id", "parentId", "stopReason", "api", "timestamp", "firstKeptEntryId", "customType",
         "toolCallId")


def _dirty(v: Any) -> Any:
    """Every free-text string of a Pi record with a lone surrogate appended (ids and enums kept)."""
    if isinstance(v, str):
        return v + "\ud800" if v else v
    if isinstance(v, list):
        return [_dirty(x) for x in v]
    if isinstance(v, dict):
        return {k: (x if k in _KEEP else _dirty(x)) for k, x in v.items()}
    return v


def _dirty_file(path: Path, base: Path) -> Path:
    out = []
    for line in base.read_text().splitlines():
        r = json.loads(line)
        out.append(dumps(r if r.get("type") == "session" else _dirty(r)))
    path.write_text("\n".join(out) + "\n")
    return path


def _surrogates_in(value: Any, skip: frozenset[str] = frozenset({"raw"})) -> list[str]:
    """Every string of `value` (dataclasses walked, their `raw` fields skipped) holding a lone surrogate."""
    found: list[str] = []

    def walk(v: Any) -> None:
        if type(v) is str:
            if any("\ud800" <= c <= "\udfff" for c in v):
                found.append(v)
        elif isinstance(v, list | tuple):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(k)
                walk(x)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            for f in dataclasses.fields(v):
                if f.name not in skip:
                    walk(getattr(v, f.name))
    walk(value)
    return found


def test_the_port_reads_raw_entries_and_the_transcript_is_clean(tmp_path: Path) -> None:
    f = _dirty_file(tmp_path / "s.jsonl", SAMPLES / "pi0-pair-a.jsonl")
    s = load_source(f)
    assert s.surrogates > 0
    call = next(e for e in s.entries if e.role == "assistant"
                and any(b.get("type") == "toolCall" for b in e.message["content"]))
    block = next(b for b in call.message["content"] if b.get("type") == "toolCall")
    assert block["name"].endswith("\ud800")  # the entry as Pi reads it
    # Pi counts the escape JSON.stringify writes (six characters) in the arguments: a cleaned copy
    # would count one, so the counts must come from the raw entries.
    cleaned = values.clean_strings(call.message)
    assert estimate_tokens(call.message, "0") != estimate_tokens(cleaned, "0")
    t = transcript_of(s)
    assert _surrogates_in(t) == []
    assert "\ufffd" in t.paths[0].messages[1].text or any("\ufffd" in m.text for m in t.paths[0].messages)
    # the neutral messages keep the entry's own message object (`raw`), for Pi's exact counts
    raw = {id(m.raw) for m in t.paths[0].messages if m.raw is not None}
    assert id(call.message) in raw
    # the models of the requests, the diagnostics: clean too
    assert any(r.model and r.model.endswith("\ufffd") for r in t.paths[0].requests)


def test_a_clean_file_is_not_copied() -> None:
    s = load_source(SAMPLES / "pi0-pair-a.jsonl")
    assert s.surrogates == 0 and not values.needs_cleaning(s)
    obj = {"a": ["x", ("y", {"z": 1})]}
    assert values.clean_strings(obj) is obj
    assert values.clean_strings({"a": ["x", "b\udc80"]}) == {"a": ["x", "b\ufffd"]}


def test_frame_safe_is_gone() -> None:
    assert not hasattr(values, "frame_safe")


@pytest.fixture
def dirty_dir(tmp_path: Path) -> Path:
    d = tmp_path / "in"
    d.mkdir()
    _dirty_file(d / "dirty-pi0.jsonl", SAMPLES / "pi0-pair-a.jsonl")
    _dirty_file(d / "dirty-pi1.jsonl", SAMPLES / "pi1-branches.jsonl")
    for src in ("pi0-tiny.jsonl", "codex/codex-pair-a.jsonl", "claude-code/claude-manual.jsonl"):
        shutil.copy(SAMPLES / src, os.fsencode(d) + b"/\xff-" + os.fsencode(Path(src).name))  # not UTF-8
    return d


@pytest.mark.parametrize("args", [
    ["inspect", "--format", "json", "-o", "{out}/i.json"],
    ["export", "-o", "{out}/ds", "--replay-window", "30000"],
    ["replay", "--format", "csv", "--context-window", "30000", "-o", "{out}/r.csv",
     "--compactions-output", "{out}/c.parquet"],
    ["replay", "--format", "parquet", "--context-window", "30000", "-o", "{out}/r.parquet"],
    ["estimate-error", "--format", "parquet", "-o", "{out}/e.parquet"],
    ["estimate-error", "--format", "csv", "-o", "{out}/e.csv"],
    ["diff-summaries", "--format", "csv", "-o", "{out}/d.csv"],
    ["report", "-o", "{out}/r.html", "--context-window", "30000"],
])
def test_every_frame_output_takes_dirty_strings(dirty_dir: Path, tmp_path: Path, args: list[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "CONTAIN_ERRORS", False)  # a bug is seen, not hidden as exit 3
    monkeypatch.setenv("SESSIONTOOLS_CACHE_DIR", str(tmp_path / "cache"))  # (the token cache: keyed by file name)
    argv = [args[0], str(dirty_dir), *(a.replace("{out}", str(tmp_path)) for a in args[1:])]
    code, err = run(argv)
    assert code == 0, err
    if args[0] == "export":
        import polars as pl

        files = pl.read_parquet(tmp_path / "ds" / "_files").get_column("file").to_list()
        assert sorted(Path(x).name for x in files) == sorted(
            ["dirty-pi0.jsonl", "dirty-pi1.jsonl", "\ufffd-pi0-tiny.jsonl", "\ufffd-codex-pair-a.jsonl",
             "\ufffd-claude-manual.jsonl"])
        models = pl.read_parquet(tmp_path / "ds" / "requests").get_column("model").to_list()
        assert any(m and m.endswith("\ufffd") for m in models)
