"""Replay: the truth model reproduces recorded usage, compactions fire where Pi's rule says,
early/late/overflow are classified by the definitions, and a grid shares one fit."""

from __future__ import annotations

import math

import orjson
import pytest

from sessiontools.cli import main
from sessiontools.policies.pi import CompactionSettings, estimate_context_tokens, prepare_compaction
from sessiontools.replay import ReplaySettings, replay_source
from sessiontools.replay.metrics import run_metrics
from sessiontools.testing import SessionBuilder
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.pi import SessionTree, build_context
from sessiontools.transcript.pi.workload import build_workload
from tests.replay.walked import pi_truth, walk_run

OVERHEAD, RATIO = 3000, 1.5


def scripted(runs: int = 12, calls: int = 3, size: int = 4000, *, model: str = "claude-sonnet-4-5") -> SessionBuilder:
    """A linear session whose recorded prompt tokens are exactly OVERHEAD + RATIO * chars/4 of the context."""
    b = SessionBuilder(model=model)
    ctx_tokens = 0

    def add(entry_id: str) -> None:
        nonlocal ctx_tokens
        msg = b.entries[-1]["message"]
        ctx_tokens += estimate_tokens(msg, "0")

    for r in range(runs):
        add(b.user(f"run {r}: " + "please do the task " * 20))
        for c in range(calls + 1):
            prompt = OVERHEAD + math.ceil(RATIO * ctx_tokens)
            last = c == calls
            b.assistant("done" if last else f"step {c}", tool_calls=() if last else [("read", {"path": f"f{r}_{c}.py"})],
                        usage=b.usage(prompt, 50, cache_read=prompt // 2))
            add(b.leaf)
            if not last:
                b.tool_result("read", "x" * size)
                add(b.leaf)
    return b


def test_truth_model_reproduces_recorded_usage() -> None:
    """With the recorded contexts the fitted model gives back the recorded prompt tokens."""
    s = scripted().session()
    wl = build_workload(SessionTree(s).path().entries, "0")
    tm = pi_truth(s)
    assert tm.overhead == pytest.approx(OVERHEAD, rel=0.02)
    assert tm.ratio == pytest.approx(RATIO, rel=0.02)
    run = walk_run(s, ReplaySettings(10**9, 16384, 20000, "pi-0"))  # never compacts
    assert not run.compactions
    recorded = [r.recorded_prompt for r in wl.requests]
    assert [round(p.truth) for p in run.requests] == recorded
    assert all(p.truth_source == "recorded" for p in run.requests)


@pytest.mark.parametrize("policy", ["pi-0", "pi-1"])
def test_compaction_fires_when_pis_view_crosses_the_threshold(policy: str) -> None:
    """pi-0 compacts at the first run end whose usage exceeds T; pi-1 may compact earlier, between turns."""
    s = scripted().session()
    path = SessionTree(s).path().entries
    wl = build_workload(path, "0" if policy == "pi-0" else "1")
    window, reserve = 60000, 16384
    run = walk_run(s, ReplaySettings(window, reserve, 8000, policy))
    assert run.compactions, "the session grows past the threshold"
    first = run.compactions[0]
    threshold = window - reserve
    if policy == "pi-0":
        # The first run end whose recorded total (prompt + output) exceeds T.
        ends = [r for r in wl.requests if r.last_in_run]
        expected = next(r for r in ends if r.recorded_prompt + r.output > threshold)
        assert first.parent_entry_id == path[expected.base_index].id
        # tokens_before is Pi's own prepareCompaction on that prefix.
        prep = prepare_compaction(path[: expected.base_index + 1], CompactionSettings(True, reserve, 8000), "0")
        assert first.tokens_before == prep.tokens_before and first.first_kept_entry_id == prep.first_kept_entry_id
    assert first.count_at_trigger > threshold
    m = run_metrics(run)
    assert m.compactions == len(run.compactions) and m.peak_truth_tokens <= window


def test_late_and_overflow_when_pi_underestimates() -> None:
    """If the provider counts far more than Pi's view (ratio 1.5 but a huge reserve gap), overflows are counted."""
    s = scripted(runs=14, calls=4, size=6000).session()
    # pi-0 checks only at run ends: a small window is crossed inside runs.
    run = walk_run(s, ReplaySettings(30000, 2000, 4000, "pi-0"))
    m = run_metrics(run)
    assert m.overflows > 0 and m.overflow_compactions > 0
    assert m.mid_run_crossings > 0
    # The same workload under pi-1 (between-turn checks) overflows no more often.
    run1 = walk_run(s, ReplaySettings(30000, 2000, 4000, "pi-1"))
    assert run_metrics(run1).overflows <= m.overflows


def test_early_compaction_is_classified() -> None:
    """A compaction Pi decides while the truth is at or below T is early (here Pi overestimates)."""
    b = scripted(runs=10)
    # Make the recorded totals include a huge output so Pi's view (totalTokens) runs far ahead of the truth.
    for e in b.entries:
        msg = e.get("message", {})
        if msg.get("role") == "assistant":
            msg["usage"]["output"] = 20000
            msg["usage"]["totalTokens"] += 20000
    s = b.session()
    run = walk_run(s, ReplaySettings(60000, 16384, 8000, "pi-0"))
    assert run.early > 0 and any(c.early for c in run.compactions)


def test_recorded_compaction_is_matched_and_reused() -> None:
    """A compaction recorded where Pi's rule puts it is matched (parent, first kept, tokensBefore)."""
    b = scripted(runs=6)
    path = SessionTree(b.session()).path().entries
    window, reserve, keep = 40000, 16384, 6000
    run = walk_run(b.session(), ReplaySettings(window, reserve, keep, "pi-0"))
    first = run.compactions[0]
    # Record that compaction for real (as Pi would have appended it) and continue the session after it.
    parent = next(i for i, e in enumerate(path) if e.id == first.parent_entry_id)
    prefix_ids = [e.id for e in path[: parent + 1]]
    b2 = SessionBuilder()
    b2.entries = [dict(e) for e in b.entries if e["id"] in prefix_ids]
    b2.leaf = prefix_ids[-1]
    b2._n = len(b2.entries)
    prep = prepare_compaction(path[: parent + 1], CompactionSettings(True, reserve, keep), "0")
    b2.compaction("summary " * 300, prep.first_kept_entry_id, prep.tokens_before)
    s2 = b2.session()
    run2 = walk_run(s2, ReplaySettings(window, reserve, keep, "pi-0"))
    assert run2.recorded_match.to_dict() == {"recorded": 1, "matched": 1, "missed": 0, "extra": len(run2.compactions) - 1}
    assert run2.compactions[0].summary_source == "recorded"


def test_grid_shares_the_fit_and_orders_settings() -> None:
    """replay_source runs window x reserve x keep in order over one path and truth model."""
    s = scripted().session()
    prs = replay_source(s, windows=[50000, 80000], reserves=[8000, 16384], keeps=[5000, 20000], policy="pi-0")
    (pr,) = prs
    assert [(r.settings.context_window, r.settings.reserve_tokens, r.settings.keep_recent_tokens) for r in pr.runs] == [
        (w, r, k) for w in (50000, 80000) for r in (8000, 16384) for k in (5000, 20000)
    ]
    # A bigger reserve never compacts later than a smaller one at the same window and keep.
    by = {(r.settings.context_window, r.settings.reserve_tokens, r.settings.keep_recent_tokens): r for r in pr.runs}
    first = {k: (v.compactions[0].parent_base_index if v.compactions else 10**9) for k, v in by.items()}
    assert first[(50000, 16384, 5000)] <= first[(50000, 8000, 5000)]


def test_pi_view_matches_pi_estimate_on_recorded_contexts() -> None:
    """Where the simulated context is the recorded one, Pi's view at a run end is Pi's own usage total."""
    s = scripted().session()
    path = SessionTree(s).path().entries
    run = walk_run(s, ReplaySettings(10**9, 16384, 20000, "pi-0"))
    for p in run.requests:
        if p.policy_count is not None:
            ctx = build_context(path[: p.base_index + 1], "0")
            assert p.policy_count == estimate_context_tokens(ctx.messages, "0").tokens


def test_cli_json_csv_parquet_plot_and_gates(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The CLI writes the JSON contract, one CSV/Parquet row per setting (and per compaction with
    --compactions-output), plots, and trips gates naming the run in words."""
    f = tmp_path / "s.jsonl"
    f.write_bytes(scripted().jsonl())
    assert main(["replay", str(f), "--context-window", "60000", "--format", "json"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    assert data["schema_version"] == 2 and data["command"] == "replay"
    run = data["runs"][0]
    assert set(run) >= {"session", "settings", "compactions", "metrics", "recorded_match"}
    # The keys of every run's settings, whichever walk made it: Pi's threshold W - reserve included.
    assert set(run["settings"]) == {"context_window", "reserve_tokens", "keep_recent_tokens", "policy",
                                    "auto_compact_limit", "threshold"}
    assert run["settings"]["threshold"] == 60000 - run["settings"]["reserve_tokens"]
    assert set(run["metrics"]) >= {"compactions", "early", "late", "mid_run_crossings", "overflows", "thrash",
                                   "early_rate", "late_rate", "peak_truth_tokens", "billed_input_tokens",
                                   "summarization_input_tokens", "summarization_output_tokens", "cost"}
    assert run["metrics"]["cost"] is not None  # claude-sonnet-4-5 prices from the catalogue
    n = run["metrics"]["compactions"]
    csv = tmp_path / "c.csv"
    per = tmp_path / "per.csv"
    assert main(["replay", str(f), "--context-window", "60000", "--reserve", "8000,16384", "--format", "csv",
                 "-o", str(csv), "--compactions-output", str(per)]) == 0
    import polars as pl

    runs = pl.read_csv(csv)
    assert runs.height == 2 and runs["reserve_tokens"].to_list() == [8000, 16384]
    assert "compactions" in runs.columns and "cost" in runs.columns
    assert pl.read_csv(per).height == sum(runs["compactions"].to_list())
    pq = tmp_path / "c.parquet"
    assert main(["replay", str(f), "--context-window", "60000", "--format", "parquet", "-o", str(pq)]) == 0
    assert pl.read_parquet(pq).height == 1 and pl.read_parquet(pq)["compactions"][0] == n
    png, svg = tmp_path / "t.png", tmp_path / "h.svg"
    assert main(["replay", str(f), "--context-window", "60000", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["replay", str(f), "--context-window", "60000", "--reserve", "8000,16384", "--plot", str(svg)]) == 0
    assert b"<svg" in svg.read_bytes()[:400]
    capsys.readouterr()
    assert main(["replay", str(f), "--context-window", "60000", "--fail-if", "compactions>0"]) == 1
    err = capsys.readouterr().err
    assert "gate compactions>0 tripped" in err
    assert "window 60000, reserve 16384, keep 20000" in err and "{" not in err
    assert main(["replay", str(f), "--context-window", "60000", "--fail-if", "compactions>99"]) == 0
    assert main(["replay", str(f), "--fail-if", "nonsense>1"]) == 2


def test_unknown_model_needs_a_window(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A model missing from the catalogue is an input error naming --context-window."""
    f = tmp_path / "s.jsonl"
    f.write_bytes(scripted(runs=2, model="my-local-model").jsonl())
    assert main(["replay", str(f)]) == 3
    assert "--context-window" in capsys.readouterr().err
    assert main(["replay", str(f), "--context-window", "32000", "--format", "json"]) == 0
