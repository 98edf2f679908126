"""House rule: no agent names above transcript/ in cli/, report/ and analysis/ (issue 24). A policy,
a transcript adapter or one registry line (`policies.registry`, `transcript.load`, `names`) says what differs by agent; a new `if agent == ...` fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "sessiontools"
NAMES = re.compile(r'"pi"|"codex"|"claude_code"|"claude-code"|Agent\.(PI|CODEX|CLAUDE_CODE)\b')

#: (file, the line's text) -> why the name is not an agent test
ALLOWED: dict[tuple[str, str], str] = {}


def _hits() -> list[tuple[str, int, str]]:
    out = []
    for folder in ("cli", "report", "analysis"):
        for f in sorted((ROOT / folder).rglob("*.py")):
            for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                if NAMES.search(line):
                    out.append((str(f.relative_to(ROOT)), n, line.strip()))
    return out


def test_no_agent_name_above_transcript() -> None:
    bad = [f"sessiontools/{f}:{n}: {line}" for f, n, line in _hits() if (f, line) not in ALLOWED]
    assert not bad, "agent names in cli/report/analysis (use the policy, the adapter or a registry):\n" + "\n".join(bad)


def test_the_allow_list_is_current() -> None:
    """Every allowed line still exists: the list cannot grow stale and hide a new name on a changed line."""
    seen = {(f, line) for f, _, line in _hits()}
    assert set(ALLOWED) <= seen, set(ALLOWED) - seen
    assert not ALLOWED  # the estimator's output name `pi` is `names.OWN_ESTIMATOR` since s8


def test_the_pattern_finds_an_agent_test() -> None:
    assert NAMES.search('if t.agent == "codex":') and NAMES.search("agent is Agent.PI")
    assert not NAMES.search("Agent.PIE") and not NAMES.search('"pie"')
