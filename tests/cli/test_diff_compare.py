"""`diff-summaries --compare A B` on a seeded workload whose extra loss is known exactly, and on
two `resummarize` settings of a recorded sample (directories paired by session id)."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from sessiontools.cli import main
from sessiontools.names import COMPARE_METRICS
from sessiontools.testing import SessionBuilder

ROUNDS = 5


def _ids(rng: random.Random, k: int) -> list[str]:
    # hex hashes with a letter and a digit (the identifier rule), distinct per round
    return [f"c0ffee{k}{j}{rng.randrange(16 ** 4):04x}" for j in range(4)]


def seeded_pair(seed: int, tmp: Path) -> tuple[Path, Path, dict[str, float]]:
    """Two sessions over one seeded workload. A's summaries state every identifier of their span and
    carry every Done item; B's omit the identifiers at odd positions and drop the oldest Done item
    at each update. Returns the files and the expected values of B (A's are all 1.0)."""
    rng = random.Random(seed)
    sides = {"a": SessionBuilder("sess-seeded"), "b": SessionBuilder("sess-seeded")}
    done = {"a": [], "b": []}
    id_total = id_kept = 0
    old_done = carried = 0
    for k in range(ROUNDS):
        ids = _ids(rng, k)
        f = f"src/mod_{k}.py"
        new = [f"Read `{f}`", f"Fixed `parse_{k}()` in `{f}`"]
        for side, b in sides.items():
            b.user(f"Task {k}: fix the parser in {f}. The failing runs are {', '.join(ids)}.")
            b.assistant("reading", tool_calls=[("read", {"path": f})])
            b.tool_result("read", "def parse(): pass")
            b.assistant("fixed")
            nxt = b.user("next")
            b.assistant("noted")
            prev = done[side]
            if side == "b" and k:
                old_done += len(prev)
                carried += len(prev) - 1
                prev = prev[1:]
            done[side] = prev + new
            stated = ids if side == "a" else ids[::2]
            summary = "\n".join([
                "## Goal", f"- Fix the parser (task {k})", "", "## Constraints & Preferences", "- (none)", "",
                "## Progress", "### Done", *[f"- [x] {d}" for d in done[side]], "", "### In Progress", "- [ ] (none)",
                "", "### Blocked", "- (none)", "", "## Key Decisions", "- **Small fixes**: one module at a time", "",
                "## Next Steps", "1. Continue", "", "## Critical Context",
                *[f"- failing run `{i}`" for i in stated],
            ]) + f"\n\n<read-files>\n{f}\n</read-files>"
            b.compaction(summary, nxt, 1000 + k)
        id_total += len(ids)
        id_kept += len(ids[::2])
    paths = []
    for side, b in sides.items():
        p = tmp / side / "s.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b.jsonl())
        paths.append(p)
    return paths[0], paths[1], {"retention.identifiers": round(id_kept / id_total, 4),
                                "section.done": round(carried / old_done, 4)}


def compare(args: list[str], capsys) -> tuple[int, dict, str]:  # type: ignore[no-untyped-def]
    code = main(["diff-summaries", "--compare", *args, "--format", "json"])
    out, err = capsys.readouterr()
    return code, orjson.loads(out) if out.strip() else {}, err


@pytest.mark.parametrize("seed", [1, 7])
def test_seeded_extra_loss_is_measured_exactly(seed: int, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    a, b, expected = seeded_pair(seed, tmp_path)
    code, body, err = compare([str(a), str(b)], capsys)
    assert code == 0, err
    m = body["compare"]["metrics"]
    assert set(m) == set(COMPARE_METRICS)
    for metric, want in expected.items():
        assert m[f"a.{metric}"] == 1.0
        assert m[f"b.{metric}"] == want
        assert m[f"compare.{metric}"] == want
        assert m[f"delta.{metric}"] == round(want - 1.0, 4)
    # what B keeps as A does
    assert m["compare.retention.files"] == 1.0 and m["a.section.goal"] == m["b.section.goal"] == 0.0
    assert m["compare.section.goal"] is None  # B / A of a zero: none, never a division by zero
    assert m["delta.lost_facts"] == ROUNDS * 2  # two identifiers of four per span, every span
    # the gate: "B keeps >= 95% of the identifiers A kept" trips; ">= 45%" holds
    code, body, err = compare([str(a), str(b), "--fail-if", "compare.retention.identifiers<0.95"], capsys)
    assert code == 1 and "gate compare.retention.identifiers<0.95 tripped" in err
    assert body["gates"][0]["tripped"] is True
    code, _, err = compare([str(a), str(b), "--fail-if", "compare.retention.identifiers<0.45"], capsys)
    assert code == 0, err
    # directories pair by session id
    code, body, err = compare([str(a.parent), str(b.parent)], capsys)
    assert code == 0 and body["compare"]["metrics"] == m and len(body["compare"]["pairs"]) == 1


def test_compare_usage(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    a, b, _ = seeded_pair(3, tmp_path)
    assert main(["diff-summaries", "--compare", str(a)]) == 2
    assert main(["diff-summaries", "--compare", str(a), str(b.parent)]) == 2
    assert main(["diff-summaries", "--compare", str(a), str(b), "--fail-if", "retention.files<1"]) == 2
    err = capsys.readouterr().err
    assert "unknown metric" in err
    # two files of one session on one side: ambiguous
    (b.parent / "copy.jsonl").write_bytes(b.read_bytes())
    assert main(["diff-summaries", "--compare", str(a.parent), str(b.parent)]) == 2
    assert "same session" in capsys.readouterr().err
