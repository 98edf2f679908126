"""Probe recordings of the Codex releases whose rule the samples do not show (tests/fixtures/codex_probes:
lab output of `python -m lab.codex_rules_probe V --out DIR --probes C,P,R`, the real CLI of each release run
offline against the lab server, gzipped). Replayed at the recorded settings under the row of the release
each records (`policies.codex_rules`), every compaction is where Codex put it, none extra; the rows next
to it do not fit."""

from __future__ import annotations

import dataclasses
import gzip
from pathlib import Path

import pytest

from sessiontools.policies.base import CheckPoint, PolicySettings
from sessiontools.policies.codex import codex_policy
from sessiontools.replay.walk import simulate_path
from sessiontools.transcript.load import load_transcript

PROBES = Path(__file__).resolve().parents[1] / "fixtures" / "codex_probes"
#: probe -> the explicit `model_auto_compact_token_limit` it was recorded with (`lab.codex_rules_probe.PROBES`)
LIMITS = {"C": 28500, "D": None, "P": 20000, "R": 20000}
#: file -> (compactions recorded, the rule column that decides it, reproduced with that column flipped)
CASES = {
    "C-0.94.0": (5, "context_before_pre_turn_check", 0),
    "C-0.95.0": (6, "context_before_pre_turn_check", 1),  # 0.95 - 0.98: the check is before the context
    "C-0.99.0": (5, "context_before_pre_turn_check", 0),
    "C-0.100.0": (6, "context_before_pre_turn_check", 4),
    "P-0.150.0": (6, "whole_item", 4),
    # R: every response opens with encrypted reasoning; 0.63 leaves it out of the count, 0.64 on add the
    # estimate of the reasoning before the newest user message (a shell apply_patch warning is one)
    "R-0.63.0": (2, "counts_past_reasoning", 0),
    "R-0.64.0": (4, "counts_past_reasoning", 0),
    "R-0.77.0": (4, "counts_past_reasoning", 1),
    # D (no limit, lab-model): 0.65 never compacts a model codex-rs does not know, 0.66 at 90% of the window
    "D-0.65.0": (0, "default_any_model", 0),
    "D-0.66.0": (3, "default_any_model", 0),
    "P-0.75.0": (3, "pre_turn_check", 0),  # 0.75: mid-turn checks only
}


def _replay(name: str, tmp_path: Path, **columns: bool) -> tuple[int, int, int]:
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(gzip.decompress((PROBES / f"{name}.jsonl.gz").read_bytes()))
    t = load_transcript(path)
    p = t.main
    assert p is not None
    version = t.settings.get("cli_version")
    assert version == name.split("-", 1)[1]
    pol = codex_policy(version, p.requests[-1].model)
    pol.rule = dataclasses.replace(pol.rule, **columns)
    if "pre_turn_check" in columns:
        pol.check_points = frozenset({CheckPoint.BETWEEN_TURNS} | ({CheckPoint.BEFORE_SAMPLING}
                                                                    if pol.rule.pre_turn_check else set()))
    limit = LIMITS[name[0]]
    settings = PolicySettings(pol.recorded_window(t.settings),
                              extra=(("auto_compact_limit", limit),) if limit is not None else ())
    run = simulate_path(p, pol, settings)
    return len(p.compactions), run.recorded_match.matched, run.recorded_match.extra


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_release_row_reproduces_its_probe(name: str, tmp_path: Path) -> None:
    recorded, column, flipped = CASES[name]
    assert _replay(name, tmp_path) == (recorded, recorded, 0)
    row = getattr(codex_policy(name.split("-", 1)[1]).rule, column)
    n, matched, extra = _replay(name, tmp_path, **{column: not row})
    assert n == recorded and matched == flipped and (extra > 0 or matched < recorded)


def _replay_under(name: str, tmp_path: Path, row_version: str) -> tuple[int, int, int]:
    """The probe `name` replayed at its recorded window under the row of `row_version`."""
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(gzip.decompress((PROBES / f"{name}.jsonl.gz").read_bytes()))
    t = load_transcript(path)
    p = t.main
    assert p is not None
    pol = codex_policy(row_version, p.requests[-1].model)
    window = pol.recorded_window(t.settings)
    assert window is not None
    run = simulate_path(p, pol, PolicySettings(window))
    return len(p.compactions), run.recorded_match.matched, run.recorded_match.extra


def test_gpt5_codex_had_its_own_limit_before_0_49(tmp_path: Path) -> None:
    """G2 (one prompt, gpt-5-codex, no limit, 240,000 hidden tokens: last totals 244,834 - 245,387):
    0.47 reports the whole 272,000 window and does not compact (its limit was 350,000, codex-rs
    db4aa6f91); 0.49 reports 95% of it and compacts at 90% (244,800, 049a61bcf). Each row fits its
    release and not the other's."""
    assert _replay_under("G2-0.47.0", tmp_path, "0.47.0") == (0, 0, 0)
    assert _replay_under("G2-0.47.0", tmp_path, "0.49.0")[2] > 0
    assert _replay_under("G2-0.49.0", tmp_path, "0.49.0") == (1, 1, 0)
    assert _replay_under("G2-0.49.0", tmp_path, "0.47.0")[1] == 0
    assert codex_policy("0.40.0", "gpt-5-codex").threshold(PolicySettings(272_000)) == 220_000
    assert codex_policy("0.45.0", "gpt-5-codex").threshold(PolicySettings(272_000)) == 350_000
    assert codex_policy("0.45.0", "gpt-5").threshold(PolicySettings(272_000)) == 272_001  # no limit: none
    assert codex_policy("0.45.0").recorded_window({"model_context_window": 272_000, "cli_version": "0.45.0"}) == 272_000
    assert codex_policy().recorded_window({"model_context_window": 258_400, "cli_version": "0.49.0"}) == 272_000
