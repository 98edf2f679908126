"""`sessiontools resummarize` of Codex rollouts against the lab server on 127.0.0.1 (issue 29).

The proof, as for Pi: at the recorded settings (window and `model_auto_compact_token_limit` of the
recording), the lab's seeded summariser answering our Responses requests regenerates, chained, every
summary the real Codex CLI recorded in the bundled samples of a ported release (0.171.0, 0.145.0:
`PORTED_RELEASES`, chosen from the manifest's recorded cli version), byte for byte, and the rollout
written is the input's bytes. Codex's rule for the history after a compaction (user messages within
20,000 tokens, the initial context before the last one, the summary) gives every recorded
replacement history. Another setting writes a rollout the other commands read, with the compactions
the replay decided; a second run sends nothing. (That the requests are the ones the real CLI sends:
tests/e2e/test_codex_compact_requests.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from lab.server import LabServer, ServerConfig
from lab.workload import build_workload
from sessiontools.cli import main
from sessiontools.policies import codex_compact as cc
from sessiontools.read.codex.load import load_rollout, rollout_objects
from sessiontools.transcript.load import transcript_of
from tests.conftest import SAMPLES

MANIFEST = json.loads((SAMPLES / "codex" / "manifest.json").read_text(encoding="utf-8"))
WITH_COMPACTIONS = {n: m for n, m in MANIFEST.items() if m["facts"]["compactions"]}
#: The samples of a release whose compaction is ported (by the manifest's recorded cli version): the
#: proofs below run on exactly these; every other sample with compactions must be refused.
PROVEN = {n: m for n, m in WITH_COMPACTIONS.items() if set(m["facts"]["cli_versions"]) <= cc.PORTED_RELEASES}
REFUSED = {n: m for n, m in WITH_COMPACTIONS.items() if n not in PROVEN}


def lab(name: str) -> LabServer:
    spec = MANIFEST[name]["spec"]
    return LabServer(ServerConfig(workload=build_workload(spec["seed"], spec["prompts"], spec["profile"]),
                                  window=10**9))


def resum(args: list[str], capsys, tmp_path: Path) -> tuple[int, dict | None, str]:  # type: ignore[no-untyped-def]
    code = main(["resummarize", *args, "--cache-dir", str(tmp_path / "cache"), "--format", "json"])
    out, err = capsys.readouterr()
    return code, (orjson.loads(out) if out.strip() else None), err


def _settings(name: str, limit: int | None = None) -> list[str]:
    spec = MANIFEST[name]["spec"]
    out = ["--context-window", str(spec["context_window"])] if spec["context_window"] else []
    lim = limit or spec["auto_compact_limit"]
    return out + (["--auto-compact-limit", str(lim)] if lim else [])


def test_samples_have_compactions() -> None:
    assert len(PROVEN) >= 2 and sum(len(m["facts"]["compactions"]) for m in PROVEN.values()) >= 8
    # every ported release has a recorded sample that proves it
    assert {v for m in PROVEN.values() for v in m["facts"]["cli_versions"]} == cc.PORTED_RELEASES


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_other_releases_are_refused_with_the_reason(name: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A rollout of a release whose compaction is not proven is skipped with its version named (exit
    3: no readable input), nothing sent, nothing written, the input untouched."""
    src = SAMPLES / "codex" / f"{name}.jsonl"
    before = src.read_bytes()
    version = MANIFEST[name]["facts"]["cli_versions"][0]
    with lab(name) as srv:
        code, _report, err = resum([str(src), "--endpoint", srv.base_url, "--model", "lab/lab-model",
                                    *_settings(name), "-o", str(tmp_path / "out")], capsys, tmp_path)
        assert not srv.model.log
    assert code == 3, err
    assert f"written by Codex {version}: only the local compaction of Codex" in err and src.name in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.jsonl"))
    assert src.read_bytes() == before


@pytest.mark.parametrize("name", sorted(PROVEN))
def test_recorded_settings_regenerate_the_recorded_rollout(name: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Every recorded local compaction regenerated, chained, byte for byte: the rollout written at
    the recorded settings is the recorded file; the input is untouched."""
    src = SAMPLES / "codex" / f"{name}.jsonl"
    before = src.read_bytes()
    with lab(name) as srv:
        code, report, err = resum([str(src), "--endpoint", srv.base_url, "--model", "lab/lab-model", *_settings(name),
                                   "-o", str(tmp_path / "out")], capsys, tmp_path)
        sent = [r for r in srv.model.log if r.kind == "compaction"]
    assert code == 0, err
    assert src.read_bytes() == before, "the input was modified"
    (out,) = report["outputs"]
    recorded = [o["payload"]["message"] for o in rollout_objects(src) if o and o["type"] == "compacted"]
    assert out["error"] is None and len(out["compactions"]) == len(recorded) == len(sent)
    assert all(c["regenerated"] and c["at_recorded_place"] for c in out["compactions"])
    assert all(c["requests"][0]["kind"] == "compact" and not c["requests"][0]["cache_hit"] for c in out["compactions"])
    written = Path(out["output"])
    regenerated = [o["payload"]["message"] for o in rollout_objects(written) if o and o["type"] == "compacted"]
    assert regenerated == recorded
    assert written.read_bytes() == before


@pytest.mark.parametrize("name", sorted(PROVEN))
def test_codex_rule_gives_the_recorded_replacement_histories(name: str) -> None:
    """`replacement_history` over the history Codex held gives each recorded one (roles and texts;
    the context copies and the summary get new ids, as in Codex)."""
    objs = rollout_objects(SAMPLES / "codex" / f"{name}.jsonl")
    history: list[dict] = []
    checked = 0
    for obj in objs:
        if obj is None:
            continue
        if obj["type"] == "response_item":
            history.append(obj["payload"])
        elif obj["type"] == "compacted":
            held = history[:-1]  # the last item is the compaction's own answer
            assert history[-1]["role"] == "assistant"
            recorded = obj["payload"]["replacement_history"]
            ours = cc.replacement_history(held, obj["payload"]["message"])
            assert [(x.get("role"), cc.item_text(x)) for x in ours] == [(x.get("role"), cc.item_text(x)) for x in recorded]
            assert [x.get("id") for x in ours if cc.is_user_message(x)] == [
                x.get("id") for x in recorded if cc.is_user_message(x)]
            history = list(recorded)
            checked += 1
    assert checked == len(MANIFEST[name]["facts"]["compactions"])


def test_user_messages_are_bounded_by_tokens() -> None:
    """Newest first within the budget; the one that does not fit is cut, the older ones dropped."""
    hist = [cc.message("user", f"m{k} " + "x" * 400) for k in range(5)]
    out = cc.replacement_history(hist, cc.summary_text("S"), max_tokens=250)
    texts = [cc.item_text(x) for x in out]
    assert texts[-1] == cc.summary_text("S") and texts[-2].startswith("m4 ") and texts[-3].startswith("m3 ")
    assert "tokens truncated" in texts[-4] and len(texts) == 4
    assert cc.approx_token_count("é" * 3) == 2  # UTF-8 bytes / 4, rounded up


def test_another_setting_writes_a_rollout_every_command_reads(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A grid of two limits: one file each; the lower limit's rollout has the replay's compactions (new
    places included, built by Codex's rule) and inspect, replay and diff-summaries read it; a second
    run sends nothing."""
    name = "codex-pair-a"
    src = SAMPLES / "codex" / f"{name}.jsonl"
    args = [str(src), "--endpoint", "", "--model", "lab/lab-model", "--context-window", "64000",
            "--auto-compact-limit", "15000,17000", "-o", str(tmp_path / "out")]
    with lab(name) as srv:
        args[2] = srv.base_url
        code, report, err = resum(args, capsys, tmp_path)
        assert code == 0, err
        first = sum(1 for r in srv.model.log if r.kind == "compaction")
        code, again, err = resum(args, capsys, tmp_path)
        assert code == 0, err
        assert sum(1 for r in srv.model.log if r.kind == "compaction") == first, "the second run sent requests"
    assert "0 request(s) sent" in err
    low, high = report["outputs"]
    assert (low["settings"]["auto_compact_limit"], high["settings"]["auto_compact_limit"]) == (15000, 17000)
    assert len(low["compactions"]) > len(high["compactions"]) == 5
    assert any(not c["at_recorded_place"] for c in low["compactions"])
    assert all(c["cache_hit"] for o in again["outputs"] for comp in o["compactions"] for c in comp["requests"])
    written = Path(low["output"])
    t = transcript_of(load_rollout(written))
    assert load_rollout(written).diagnostics == []
    assert len(t.paths[0].compactions) == len(low["compactions"])
    summaries = [c.summary for c in load_rollout(written).records if type(c).__name__ == "Compacted"]
    assert all(s and s.startswith("## Goal") for s in summaries)
    for cmd in (["inspect", str(written)], ["replay", str(written), "--context-window", "64000"],
                ["diff-summaries", str(written)]):
        assert main(cmd) == 0, cmd
        capsys.readouterr()
