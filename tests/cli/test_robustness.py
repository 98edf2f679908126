"""Every command on odd but readable sessions (hypothesis: missing content, null messages, unknown
roles and types, orphans, duplicate ids, cycles, glued and malformed lines) ends with a documented
exit code and never a traceback."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from sessiontools.cli import main
from tests.parity.strategies import session_lines

COMMANDS = [
    ["inspect", "--format", "json", "--all-leaves"],
    ["cut", "--format", "json", "--at", "#0"],
    ["replay", "--context-window", "3000", "--reserve", "500", "--keep-recent", "300,3000", "--format", "json",
     "--all-leaves", "--jobs", "1"],
    ["replay", "--context-window", "3000", "--policy", "pi-1", "--format", "json", "--jobs", "1"],
    ["estimate-error", "--format", "json", "--no-cache", "--jobs", "1"],
    ["diff-summaries", "--format", "json", "--all-leaves"],
]


@settings(max_examples=int(__import__("os").environ.get("ROBUSTNESS_EXAMPLES", "40")), deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(session_lines())
def test_commands_survive_odd_sessions(lines: list[str]) -> None:
    """No command crashes: exit 0 (or 1, 2, 3 as documented), and nothing unexpected is raised."""
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "s.jsonl"
        f.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
        for cmd in COMMANDS:
            args = [cmd[0], str(f), *cmd[1:]]
            try:
                code = main(args)
            except SystemExit as exc:  # pragma: no cover - main() returns codes, never exits
                pytest.fail(f"{args} exited {exc.code}")
            assert code in (0, 1, 2, 3), f"{args} -> {code}"
