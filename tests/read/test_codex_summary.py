"""The C's summary of a Codex rollout (`read.codex.summary`, sessiontools/read/_codex_summary.c)
against the ordinary lean reading: `inspect`'s JSON byte for byte, over the samples, the probes, the
bad fixtures, a benchmark corpus, real rollouts when this machine has them, and edited files (odd
values in every field, cut lines and files, Unicode spaces around a compaction's summary, escapes,
moved, doubled and glued lines). Where the C is not sure it says None and the rollout goes the
ordinary way: each test also counts how many rollouts the C summed up itself, so a C that gave up
on everything would fail them too."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiontools.analysis.inspect import inspect_source
from sessiontools.read.codex import summary as summary_mod
from sessiontools.read.codex.load import read_rollout_bytes
from sessiontools.read.codex.summary import CodexSummary, summarize
from sessiontools.read.sources import load_source
from tests.conftest import BAD, ROOT, SAMPLES
from tests.robust.mutate import ODD_VALUES, dumps, field_paths, line_object, mutated

ROLLOUTS = sorted((SAMPLES / "codex").glob("*.jsonl"))
PROBES = sorted((ROOT / "tests" / "fixtures" / "codex_probes").glob("*.jsonl.gz"))
CORPUS = ROOT / "bench" / "corpus-codex"
#: Real rollouts downloaded by hand (public backups of ~/.codex/sessions; never committed).
REAL = Path("/tmp/codex/real")


def _native() -> None:
    if summary_mod.codex_summary is None:
        pytest.skip("the C extension is not built on this machine")


def _json(source: Any) -> bytes:
    return orjson.dumps(inspect_source(source))


def _same(data: bytes, limit: int | None = 5_000_000) -> bool:
    """inspect's JSON of a rollout is the same from the C's summary as the ordinary lean reading's;
    True when the C summed it up (False: it said not sure)."""
    s = summarize(data, "r.jsonl", limit)
    if s is None:
        return False
    ordinary = read_rollout_bytes(data, "r.jsonl", max_line_bytes=limit, lean=True)
    assert _json(s) == _json(ordinary)
    assert ordinary.diagnostics == [] == s.diagnostics  # (what `read.parallel` counts of a file)
    return True


def test_every_sample_probe_and_bad_fixture() -> None:
    _native()
    samples = sum(_same(f.read_bytes()) for f in ROLLOUTS)
    probes = sum(_same(gzip.decompress(f.read_bytes())) for f in PROBES)
    for f in sorted(BAD.rglob("*.jsonl")):
        _same(f.read_bytes())
    # (every sample but the overflow, which the C leaves to the ordinary way; every probe)
    assert samples == len(ROLLOUTS) - 1 and probes == len(PROBES)


def _corpus(tmp: Path) -> list[Path]:
    if CORPUS.is_dir():
        return sorted(CORPUS.rglob("*.jsonl"))[::3]
    from bench.corpus_agents import build
    from bench.corpus_codex import session

    return build(session, tmp / "corpus", 12, 11)


def test_a_benchmark_corpus(tmp_path: Path) -> None:
    """bench/corpus-codex when made (every third file), else a small one of the same generator:
    compactions, repeated counts, Chinese and code texts; every file summed up by the C."""
    _native()
    files = _corpus(tmp_path)
    assert files and sum(_same(f.read_bytes()) for f in files) == len(files)


def test_real_rollouts() -> None:
    _native()
    if not REAL.is_dir():
        pytest.skip(f"{REAL}: not on this machine")
    files = sorted(REAL.rglob("*.jsonl"))
    assert sum(_same(f.read_bytes()) for f in files) >= len(files) // 2


def test_through_load_source_and_without_the_c(monkeypatch: pytest.MonkeyPatch) -> None:
    _native()
    rollout = ROLLOUTS[0]
    s = load_source(rollout, selective=True)
    assert isinstance(s, CodexSummary)
    assert not isinstance(load_source(rollout), CodexSummary)  # (only a selective reading)
    assert not isinstance(load_source(rollout, selective=True, content_hash=True), CodexSummary)
    with monkeypatch.context() as m:
        m.setattr(summary_mod, "codex_summary", None)
        plain = load_source(rollout, selective=True)
    assert not isinstance(plain, CodexSummary) and _json(plain) == _json(s)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _kinds(lines: list[str]) -> list[int]:
    """The index of the first line of each kind (line type, payload type, role)."""
    seen: set[Any] = set()
    out = []
    for i, line in enumerate(lines):
        obj = json.loads(line)
        p = obj.get("payload") if isinstance(obj.get("payload"), dict) else {}
        kind = (obj.get("type"), p.get("type"), p.get("role"))
        if kind not in seen:
            seen.add(kind)
            out.append(i)
    return out


def _compacting(tmp: Path) -> list[str]:
    """A corpus rollout with a compaction and its summarisation call."""
    for f in _corpus(tmp):
        lines = _lines(f)
        if any('"type":"compacted"' in line for line in lines):
            return lines
    raise AssertionError("no compaction in the corpus")


def test_every_odd_value_in_every_field(tmp_path: Path) -> None:
    """Each field path of the first line of each kind set to each odd value (wrong types, huge and
    negative numbers, lone surrogates, empty strings, ...), one at a time, in a sample's first lines
    and in a rollout with a compaction (cut down to the compaction's neighbourhood)."""
    _native()
    checked = summed = 0
    lines = _compacting(tmp_path)
    at = next(i for i, line in enumerate(lines) if '"type":"compacted"' in line)
    bases = [_lines(SAMPLES / "codex" / "codex-pair-a.jsonl")[:40], lines[:1] + lines[max(1, at - 12):at + 8]]
    for base in bases:
        for index in _kinds(base):
            obj = json.loads(base[index])
            for k, path in enumerate(field_paths(obj)):
                for value in ODD_VALUES if index == 0 else ODD_VALUES[k % 3::3]:  # (the session meta: every one)
                    summed += _same(("\n".join(mutated(base, index, path, value)) + "\n").encode())
                    checked += 1
    assert checked > 500 and summed > checked // 10


@pytest.mark.parametrize("cut", [0.05, 0.21, 0.37, 0.5, 0.73, 0.99])
def test_cut_files(cut: float) -> None:
    _native()
    for data in (f.read_bytes() for f in ROLLOUTS):
        _same(data[: int(len(data) * cut)])


SPACES = ["\u00a0", "\u3000", "\u2009", "\u200b", "\x1f", "\x85", " \n", "\u2028", "\ufeff", "\u180e", "é"]


def _spaced(lines: list[str], rng: random.Random) -> list[str]:
    """The compaction's message and its summarisation call's reply with Unicode characters (spaces
    `str.strip` strips and others it does not) added at their ends."""
    out = list(lines)
    for i, line in enumerate(out):
        obj = json.loads(line)
        p = obj.get("payload")
        if obj.get("type") == "compacted" and rng.random() < 0.7:
            p["message"] = rng.choice(SPACES) + p["message"] + rng.choice(SPACES)
            out[i] = dumps(obj)
        elif (obj.get("type") == "response_item" and p.get("role") == "assistant" and isinstance(p.get("content"), list)
              and p["content"] and rng.random() < 0.3):
            block = p["content"][-1]
            if isinstance(block.get("text"), str):
                block["text"] = block["text"] + rng.choice(SPACES)
                out[i] = json.dumps(obj, ensure_ascii=rng.random() < 0.5, separators=(",", ":"))
    return out


def test_unicode_spaces_around_a_summary(tmp_path: Path) -> None:
    """Whether the summarisation call is dropped turns on `str.strip`: the C strips what it strips."""
    _native()
    lines = _compacting(tmp_path)
    rng = random.Random(5)
    summed = sum(_same(("\n".join(_spaced(lines, rng)) + "\n").encode()) for _ in range(40))
    assert summed == 40


def _edit(lines: list[str], rng: random.Random) -> list[str]:
    """One random edit: a line copied, dropped, moved, cut, glued to another, blanked, its type
    changed, its keys escaped or spaced, its strings escaped, its ordinal dropped."""
    out = list(lines)
    i, j = rng.randrange(len(out)), rng.randrange(len(out))
    op = rng.randrange(10)
    obj = line_object(out[i])
    if op == 0:
        out.insert(j, out[i])
    elif op == 1:
        del out[i]
    elif op == 2:
        out.insert(j, out.pop(i))
    elif op == 3:
        out[i] = out[i][: rng.randrange(len(out[i]) + 1)]
    elif op == 4:
        out[i] = out[i] + out[j]
    elif op == 5:
        out[i] = rng.choice(["", "   ", "{", "[]", "null", '{"type": 5}', "\x00", '"x"', "\ufeff" + out[i]])
    elif op == 6 and obj:
        obj["type"] = rng.choice(["event_msg", "response_item", "compacted", "turn_context", "made-up", "state"])
        out[i] = dumps(obj)
    elif op == 7:
        out[i] = out[i].replace('"type":', '"ty\\u0070e":', 1) if rng.random() < 0.5 else out[i].replace(":", ": ", 3)
    elif op == 8 and obj:
        out[i] = json.dumps(obj, ensure_ascii=True)  # (every non-ASCII character an escape)
    elif obj:
        obj.pop("ordinal", None)
        out[i] = dumps(obj)
    return out


def test_random_edits(tmp_path: Path) -> None:
    _native()
    rng = random.Random(7)
    bases = [_lines(f) for f in ROLLOUTS] + [_compacting(tmp_path)]
    summed = 0
    for _ in range(150):
        lines = rng.choice(bases)
        for _ in range(rng.randrange(1, 3)):
            lines = _edit(lines, rng)
        summed += _same(("\n".join(lines) + "\n").encode())
    assert summed > 30


#: UTF-8 at the edges of what orjson reads: each valid one, and each invalid one (an overlong form, a
#: surrogate, past U+10FFFF, a lone or missing continuation byte, a byte UTF-8 never uses).
VALID_UTF8 = [b"\xc2\x80", b"\xdf\xbf", b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xef\xbf\xbf",
              b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf", "中文".encode()]
INVALID_UTF8 = [b"\xc0\x80", b"\xc1\xbf", b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf0\x8f\xbf\xbf",
                b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\x80", b"\xbf", b"\xe4\xb8", b"\xe4\xb8\x41",
                b"\xf0\x90\x80", b"\xc2", b"\xfe", b"\xff"]


def test_utf8_bytes_in_strings_and_between_values() -> None:
    """The C validates a rollout's UTF-8 in one pass over its bytes before it reads a line (its
    string scanner looks only at their ASCII bytes): each valid character above, put in a string,
    is summed up as the ordinary reading reads it; each invalid one, in a string, after a line or
    at the file's end, sends the file the ordinary way (its line's diagnostic)."""
    _native()
    base = (SAMPLES / "codex" / "codex-pair-a.jsonl").read_bytes()
    lines = base.split(b"\n")
    at = next(i for i, line in enumerate(lines) if b'"text":"' in line)
    summed = 0
    for chunk in VALID_UTF8 + INVALID_UTF8:
        for k in range(17):  # (in a long run of Chinese, at each place in a 48-byte block of it)
            edited = list(lines)
            text = "中".encode() * k + chunk * (1 + k % 3) + "文".encode() * 20
            edited[at] = edited[at].replace(b'"text":"', b'"text":"' + text, 1)
            summed += _same(b"\n".join(edited))
        if chunk in INVALID_UTF8:
            for data in (b"\n".join(lines[:at] + [lines[at] + chunk] + lines[at + 1:]), base + chunk):
                assert summarize(data, "r.jsonl", None) is None
                _same(data)
    assert summed == 17 * len(VALID_UTF8)


#: What a long run of plain bytes inside a string or between lines can meet, at any place in it: the
#: escapes and the quote that end the scanner's plain run, a control character (not JSON: the
#: ordinary way), valid and invalid UTF-8.
_BREAKS = [b'\\"', b"\\\\", b"\\n", b"\\u00e9", b"\x01", "é".encode(), "中文".encode(), b"\xc0\x80", b"\xff"]


def _at_every_place() -> list[bool]:
    """`_same` for each of `_BREAKS` at each place in a 200-byte run of ASCII in a message's text (the
    scans skip such runs 16, 32 or 64 bytes at a time): whether the C summed each up."""
    base = (SAMPLES / "codex" / "codex-pair-a.jsonl").read_bytes()
    lines = base.split(b"\n")
    at = next(i for i, line in enumerate(lines) if b'"text":"' in line)
    out = []
    for chunk in _BREAKS:
        for k in range(100):
            edited = list(lines)
            text = b"a" * k + chunk + b"b" * (200 - k)
            edited[at] = edited[at].replace(b'"text":"', b'"text":"' + text, 1)
            out.append(_same(b"\n".join(edited)))
    return out


def test_plain_runs_with_avx2_and_with_sse2_alone() -> None:
    """The string and UTF-8 scans take long plain runs 32 or 64 bytes at a time with AVX2 where the
    CPU has it (_codex_json.c), else 16 at a time (SSE2): both give the ordinary reading's JSON at
    every place a run can end, and sum up the same rollouts (SESSIONTOOLS_SIMD=sse2: SSE2 alone)."""
    import os
    import subprocess
    import sys

    _native()
    wide = _at_every_place()
    assert 0 < sum(wide) < len(wide)  # (a control character and invalid UTF-8: the ordinary way)
    code = "from tests.read.test_codex_summary import _at_every_place as f; print(''.join('01'[x] for x in f()))"
    env = {**os.environ, "SESSIONTOOLS_SIMD": "sse2"}
    narrow = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    assert narrow.stdout.strip() == "".join("01"[x] for x in wide)
