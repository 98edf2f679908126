"""A synthetic sessions folder for the "a folder answered in one screen" tests (issue 26).

`build_folder(root)` writes a few hundred sessions of every agent under `root`, laid out the way
the agents lay out their own directories, so names, groups and totals behave as on a user's disk:

- Pi sessions built with `sessiontools.testing.SessionBuilder`: several providers/models, five
  projects (`cwd`), spread over a few weeks; some grow past a 200k window's thresholds (so the
  grid has early/late/overflow work to show), some compact with Pi's six-section summaries
  (so diff-summaries has chains), many never compact (the "no summaries" case);
- Codex rollouts and Claude Code transcripts: the repository's own sample sessions (written by
  the real CLIs against the lab server), each copy given its own session id, day and project.

Nothing real is used. Every session is deterministic (same bytes for the same arguments).
"""

from __future__ import annotations

import random
import re
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sessiontools.testing import SessionBuilder
from tests.conftest import SAMPLES

#: (provider, model) of the Pi sessions: catalogue models, and one only a models.json would know.
PI_MODELS = (
    ("anthropic", "claude-sonnet-4-5"),
    ("openai", "gpt-5"),
    ("google", "gemini-2.5-pro"),
    ("minimax", "MiniMax-M2.5"),
)
PROJECTS = ("/home/dev/alpha", "/home/dev/beta-service", "/home/dev/gamma/web", "/srv/delta", "/home/dev/epsilon")
_T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)  # a Monday

_SUMMARY = """## Goal
- Ship feature {n} of the {project} service

## Constraints & Preferences
- Keep the public API stable
- Tests must pass with `pytest -q`

## Progress
### Done
- [x] Read `src/mod{a}.py` and `src/mod{b}.py`
{done}
### In Progress
- [ ] Refactor `handler_{n}` in `src/mod{a}.py`

### Blocked
- (none)

## Key Decisions
- **Cache**: keep the LRU of size {size}

## Next Steps
1. Run the tests
2. Update `docs/feature{n}.md`

## Critical Context
- Error seen: "KeyError: 'session_{n}'"

<read-files>
src/mod{a}.py
src/mod{b}.py
</read-files>

<modified-files>
src/mod{a}.py
</modified-files>"""


def _summary(i: int, k: int, project: str) -> str:
    done = "\n".join(f"- [x] Step {j} of feature {i}" for j in range(k % 4))
    return _SUMMARY.format(n=i, project=project.rsplit("/", 1)[-1], a=k, b=k + 1, done=done, size=64 * (k + 1))


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def pi_session(i: int) -> tuple[str, bytes]:
    """The i-th Pi session: (its path below the sessions folder, its bytes)."""
    rng = random.Random(i)
    provider, model = PI_MODELS[i % len(PI_MODELS)]
    project = PROJECTS[i % len(PROJECTS)]
    b = SessionBuilder(f"{i:08x}-0000-4000-8000-{i:012x}", cwd=project, provider=provider, model=model)
    kind = i % 6  # 0, 1: big (grows past 200k thresholds); 2: compacts; 3-5: small
    growth = {0: 14_000, 1: 11_000, 2: 6_000}.get(kind, rng.randint(800, 2_500))
    prompt = rng.randint(3_000, 9_000)
    turns = rng.randint(6, 12) if kind > 1 else rng.randint(12, 17)
    compactions = 0
    for t in range(turns):
        b.user(f"Task {t}: look at src/mod{t}.py and fix the failing test " + "word " * rng.randint(5, 40))
        b.assistant("reading", tool_calls=[("read", {"path": f"src/mod{t}.py"})],
                    usage=b.usage(prompt, 120, cache_read=max(0, prompt - 2_000)))
        b.tool_result("read", f"def handler_{t}():\n    return {t}\n" * rng.randint(3, 60))
        prompt += growth // 2
        b.assistant(f"Fixed handler_{t}.", usage=b.usage(prompt, 200, cache_read=max(0, prompt - 3_000)))
        prompt += growth - growth // 2
        if kind == 2 and t % 3 == 2:
            first_kept = b.user("continue")
            b.compaction(_summary(i, compactions, project), first_kept, prompt)
            compactions += 1
            prompt = rng.randint(4_000, 8_000)
    records = b.records()
    start = _T0 + timedelta(days=(i * 7) % 40, minutes=i)
    shift = start - datetime(2025, 1, 1, tzinfo=UTC)
    for r in records:
        if "timestamp" in r and isinstance(r["timestamp"], str):
            r["timestamp"] = _iso(datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00")) + shift)
        msg = r.get("message")
        if isinstance(msg, dict) and isinstance(msg.get("timestamp"), int):
            msg["timestamp"] += int(shift.total_seconds() * 1000)
    import orjson

    data = b"".join(orjson.dumps(r) + b"\n" for r in records)
    folder = "--" + project.strip("/").replace("/", "-") + "--"
    name = f"{start.strftime('%Y-%m-%dT%H-%M-%S-000Z')}_{b.header['id']}.jsonl"
    return f"pi/{folder}/{name}", data


_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _copy_sample(data: bytes, i: int, day: datetime, project: str, old_cwd: bytes) -> bytes:
    """A sample session as another session: its own ids (uuids), day and workspace."""
    ids: dict[bytes, bytes] = {}

    def new_id(m: re.Match[bytes]) -> bytes:
        u = m.group(0)
        if u not in ids:
            ids[u] = f"{i:08x}-{len(ids):04x}-4000-8000-{zlib.crc32(u):012x}".encode()
        return ids[u]

    out = _UUID.sub(new_id, data)
    out = out.replace(b"2026-11-30T", day.strftime("%Y-%m-%dT").encode())
    return out.replace(old_cwd, project.encode())


def agent_copies(agent: str, count: int) -> list[tuple[str, bytes]]:
    """`count` Codex rollouts or Claude Code transcripts made from the samples."""
    sources = sorted((SAMPLES / ("codex" if agent == "codex" else "claude-code")).glob("*.jsonl"))
    out = []
    for i in range(count):
        src = sources[i % len(sources)]
        data = src.read_bytes()
        m = re.search(rb'"cwd":"([^"]+)"', data)
        old_cwd = m.group(1) if m else b"/nowhere"
        project = PROJECTS[(i + 2) % len(PROJECTS)]
        day = _T0 + timedelta(days=(i * 5) % 40)
        body = _copy_sample(data, 1000 + i if agent == "codex" else 2000 + i, day, project, old_cwd)
        if agent == "codex":
            path = f"codex/{day:%Y/%m/%d}/rollout-{day:%Y-%m-%dT%H-%M-%S}-{i:04d}-{src.stem}.jsonl"
        else:
            path = f"claude/{project.strip('/').replace('/', '-')}/{i:04d}-{src.stem}.jsonl"
        out.append((path, body))
    return out


def build_folder(root: Path, *, pi: int = 240, codex: int = 24, claude: int = 24) -> list[Path]:
    """Write the folder under `root`; the session files, sorted."""
    files = [pi_session(i) for i in range(pi)] + agent_copies("codex", codex) + agent_copies("claude", claude)
    out = []
    for rel, data in files:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        out.append(p)
    return sorted(out)
