"""A line whose `type` is an object (valid JSON, odd value) is bad input, never an internal error."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontools.cli import main


@pytest.mark.parametrize("command", ["inspect", "estimate-error", "diff-summaries"])
def test_object_type_is_not_a_session(command: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "odd-type.jsonl"
    f.write_text('{"type":{"nested":true},"sessionId":[],"message":null}\n')
    assert main([command, str(f)]) == 3
    err = capsys.readouterr().err
    assert "not a Pi session" in err and "internal error" not in err
