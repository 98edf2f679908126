"""The 17 crash sites of issue 27, one case each: a well-formed line with a value of an unexpected
type, magnitude or encoding. Each is now a `file:line: reason` diagnostic at the reader (the value
dropped or repaired) and no command ends in an internal error; before the typed boundary every case
here raised in some command (the site the issue found is named in each case's comment)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessiontools.read import parallel
from tests.robust.mutate import BASES, commands, first_line, mutated, run, write


def _pi(role: str) -> Any:
    return lambda r: r.get("type") == "message" and r["message"].get("role") == role


_CODEX_OUTPUT = lambda r: isinstance(r.get("payload"), dict) and r["payload"].get("type") == "function_call_output"  # noqa: E731
_CODEX_COUNT = lambda r: isinstance(r.get("payload"), dict) and isinstance(r["payload"].get("info"), dict)  # noqa: E731
_CLAUDE_ASSISTANT = lambda r: r.get("type") == "assistant"  # noqa: E731
_COMPACTION = lambda r: r.get("type") == "compaction"  # noqa: E731

# id -> (base, which line, field path, value, phrase of the diagnostic inspect prints)
CASES: dict[str, tuple[str, Any, tuple[Any, ...], Any, str]] = {
    "type-list-first-line": ("claude", 0, ("type",), [1], "no 'type'"),  # read/claude_code/load.py:169
    "pi-type-list": ("pi", _pi("user"), ("type",), [1], "type: not a string"),
    "message-string": ("pi", _pi("assistant"), ("message",), "x", "message: not an object"),  # tokens/chars4.py:64
    "user-message-string": ("pi", _pi("user"), ("message",), "x", "message: not an object"),  # transcript/pi/usage.py:36
    "role-list": ("pi", _pi("assistant"), ("message", "role"), [1], "message.role: not a string"),  # policies/pi/cut.py:113
    "role-object": ("pi", _pi("user"), ("message", "role"), {"a": []}, "message.role: not a string"),  # transcript/pi/neutral.py:167
    "first-kept-list": ("pi", _COMPACTION, ("firstKeptEntryId",), [1], "firstKeptEntryId: not a string"),  # replay/shared.py:73
    "model-object": ("pi", _pi("assistant"), ("message", "model"), {"a": []}, "message.model: not a string"),  # transcript/pi/requests.py:28
    "model-float": ("pi", _pi("assistant"), ("message", "model"), 1.5, "message.model: not a string"),  # replay/catalog.py:105
    "content-number": ("pi", _pi("assistant"), ("message", "content"), 5, "message.content: not a string or a list"),  # tokens/features.py:105
    "timestamp-1e20": ("pi", _pi("assistant"), ("message", "timestamp"), 1e20, "message.timestamp: not a time"),  # analysis/estimate/rows.py:301
    "timestamp-2**63": ("pi", _pi("assistant"), ("message", "timestamp"), 2**63, "message.timestamp: not a time"),
    "timestamp--1e308": ("pi", _pi("assistant"), ("message", "timestamp"), -1e308, "message.timestamp: not a time"),
    "model-surrogate": ("pi", _pi("assistant"), ("message", "model"), "lab-\ud800", "lone surrogate"),  # inspect table, estimate-error, export
    "text-surrogate": ("pi", _pi("user"), ("message", "content", 0, "text"), "a\udc00b", "lone surrogate"),
    "codex-output-surrogate": ("codex", _CODEX_OUTPUT, ("payload", "output"), "out \ud800", "lone surrogate"),  # policies/codex.py:94
    "usage-1e308": ("pi", _pi("assistant"), ("message", "usage", "input"), 1e308, "message.usage.input: out of range"),  # replay/simulate.py:295, pi_compact.py:85
    "usage--1e308": ("pi", _pi("assistant"), ("message", "usage", "cacheRead"), -1e308, "message.usage.cacheRead: negative"),  # replay/metrics.py:50
    "usage-1e400": ("pi", _pi("assistant"), ("message", "usage", "output"), "__1e400__", "message.usage.output: not a finite number"),  # replay/transcripts.py:128
    "usage-10**400": ("pi", _pi("assistant"), ("message", "usage", "input"), 10**400, "message.usage.input: not a finite number (an integer of 1,329 bits)"),  # read/values.py:58 (OverflowError)
    "usage-negative": ("pi", _pi("assistant"), ("message", "usage", "input"), -1e9, "message.usage.input: negative"),
    "cost-negative": ("pi", _pi("assistant"), ("message", "usage", "cost", "total"), -5, "message.usage.cost.total: negative"),
    "codex-usage-negative": ("codex", _CODEX_COUNT, ("payload", "info", "last_token_usage", "input_tokens"), -1e9,
                             "last_token_usage.input_tokens: negative"),
    "claude-usage-negative": ("claude", _CLAUDE_ASSISTANT, ("message", "usage", "input_tokens"), -1e9,
                              "message.usage.input_tokens: negative"),
    "claude-text-number": ("claude", _CLAUDE_ASSISTANT, ("message", "content", 0, "text"), -1e308, "not a string"),
}


@pytest.fixture
def uncontained(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file's unexpected exception propagates (instead of becoming that file's error, exit 3)."""
    monkeypatch.setattr(parallel, "CONTAIN_ERRORS", False)


def _odd_file(tmp_path: Path, case: str) -> Path:
    base, which, path, value, _ = CASES[case]
    lines = BASES[base].read_text(encoding="utf-8").splitlines()
    index = which if isinstance(which, int) else first_line(lines, which)
    return write(tmp_path / f"{case}.jsonl", mutated(lines, index, path, value))


@pytest.mark.parametrize("case", sorted(CASES))
def test_odd_value_is_a_diagnostic_in_every_command(case: str, tmp_path: Path, uncontained: None) -> None:
    """The reader names the line and the field; every command then runs to a documented exit code."""
    f = _odd_file(tmp_path, case)
    code, err = run(["inspect", str(f), "--format", "json"])
    assert code == 0, err
    assert f"{f}:" in err and CASES[case][4] in err, err
    for args in commands(f, tmp_path)[1:]:
        code, err = run(args)
        assert code in (0, 1, 3), f"{args} -> {code}: {err}"
        assert "internal error" not in err


def test_negative_and_huge_usage_are_not_summed(tmp_path: Path, uncontained: None) -> None:
    """-1e9 input tokens is dropped, not summed: the prompt tokens inspect reports equal the base's
    minus that request's input (no '-999,075,041 prompt tokens'), and replay's cost stays finite."""
    base = BASES["pi"]
    lines = base.read_text(encoding="utf-8").splitlines()
    i = first_line(lines, _pi("assistant"))
    dropped_input = json.loads(lines[i])["message"]["usage"]["input"]
    odd = write(tmp_path / "neg.jsonl", mutated(lines, i, ("message", "usage", "input"), -1e9))
    huge = write(tmp_path / "huge.jsonl", mutated(lines, i, ("message", "usage", "input"), 1e308))

    def prompt_tokens(f: Path) -> int:
        code, _ = run(["inspect", str(f), "--format", "json", "-o", str(tmp_path / "i.json")])
        assert code == 0
        doc = json.loads((tmp_path / "i.json").read_text())
        s = doc["sessions"][0]["usage"]
        return int(s["input"] + s["cache_read"] + s["cache_write"])

    want = prompt_tokens(base) - dropped_input
    assert prompt_tokens(odd) == want
    assert prompt_tokens(huge) == want
    code, err = run(["replay", str(huge), "--format", "json", "--jobs", "1", "--context-window", "8000", "--reserve", "1000",
                     "-o", str(tmp_path / "r.json")])
    assert code == 0, err
    text = (tmp_path / "r.json").read_text()
    assert "Infinity" not in text and "NaN" not in text


def test_strict_counts_a_dropped_value(tmp_path: Path, uncontained: None) -> None:
    """A dropped value is a repair: --strict exits 3, as for a skipped or recovered line."""
    f = _odd_file(tmp_path, "usage-negative")
    assert run(["inspect", str(f), "--format", "json"])[0] == 0
    assert run(["inspect", str(f), "--format", "json", "--strict"])[0] == 3
