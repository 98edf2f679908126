"""Measure Codex's compaction rule of a release: record the probes with the real CLI, replay them.

``python -m lab.codex_rules_probe 0.94.0 0.100.0 --out /tmp/probes [--probes C,D,K,P]``

For each version (installed by ``lab.codex_env.ensure_codex``; ~300 MB each into the shared cache) and
each probe (``PROBES``), one recording with ``lab.codex_driver.record`` against the lab server, then a
replay of it at its recorded settings under ``sessiontools.policies.codex_rules`` (the row of the
version the rollout records) and under every combination of the rule's columns. One line per
recording: the compactions recorded, those the table's row reproduces and its extra ones, and the
column combinations that reproduce every compaction with none extra (``t`` count adds the newer
items' estimate, ``c`` explicit limit capped at 90%, ``p`` pre-turn check, ``j`` tool outputs as
their JSON item, ``i`` the pre-turn check counts the turn's new items, ``r`` a resumed turn's re-recorded
initial context is written before the pre-turn check, ``x`` the count adds the encrypted reasoning before
the newest user turn: tried both ways only on a recording that holds encrypted reasoning). This is how the rows of
``codex_rules.RULES`` were found (the docstring there lists the results).

``--replay-only`` replays the recordings already in ``--out``. Recordings stay under ``--out``; they
are lab output (the lab model's workload), never real user data.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
import time
from pathlib import Path

#: name -> (prompts, model_context_window, explicit limit, model, hidden tokens per request)
PROBES: dict[str, tuple[int, int, int | None, str, int]] = {
    "C": (40, 30000, 28500, "lab-model", 0),  # explicit limit above 90% of the window: capped or not
    "D": (40, 30000, None, "lab-model", 0),  # no limit: 90% of the configured window, or none
    "K": (14, 0, None, "gpt-5.1-codex", 232_800),  # a known model's own default (244800)
    "P": (24, 64000, 20000, "lab-model", 0),  # mid-turn compactions after large tool outputs
    "R": (16, 64000, 20000, "lab-model", 0),  # P's settings, each response opening with encrypted reasoning
    # before 0.63: gpt-5-codex's own limit (codex-rs openai_model_info.rs: 220,000, 250,000, 350,000, then
    # 90% of 272,000): the lab adds 215,000 hidden tokens to every request, the workload the rest
    "G": (30, 0, None, "gpt-5-codex", 215_000),
    # one prompt each (`exec resume` does not run before 0.63): over 220,000, 244,800 and 250,000 at most
    "G1": (1, 0, None, "gpt-5-codex", 216_000),
    "G2": (1, 0, None, "gpt-5-codex", 240_000),
    "G3": (1, 0, None, "gpt-5-codex", 246_000),
    "G4": (1, 0, None, "gpt-5-codex", 346_000),  # over 350,000
}
#: probe -> characters of the encrypted reasoning item the lab server opens every agent response with
#: (R: does the count add the estimate of the reasoning before the newest user turn? `x` below)
REASONING_CHARS: dict[str, int] = {"R": 4000}


def record_probe(version: str, probe: str, out: Path) -> Path:
    from lab.codex_driver import CodexRecording, record

    prompts, window, limit, model, hidden = PROBES[probe]
    rec = CodexRecording(f"probe-{probe}-{version}", seed=71, prompts=prompts, context_window=window,
                         auto_compact_limit=limit, version=version, model=model, overhead=hidden,
                         server_window=1_000_000 if hidden else None,
                         reasoning_chars=REASONING_CHARS.get(probe, 0))
    path = out / f"{probe}-{version}.jsonl"
    record(rec, path, workroot=out / "work", log=lambda m: print(m[:300], file=sys.stderr), timeout=300)
    return path


def replay(path: Path, limit: int | None) -> tuple[int, int, int, list[str]]:
    """(recorded, reproduced by the table's row, extra, the exact column combinations)."""
    from sessiontools.policies.base import CheckPoint, PolicySettings
    from sessiontools.policies.codex import codex_policy
    from sessiontools.replay.walk import simulate_path
    from sessiontools.transcript.load import load_transcript

    t = load_transcript(path)
    p = t.main
    assert p is not None
    version = t.settings.get("cli_version")
    model = p.requests[-1].model if p.requests else None
    window = codex_policy(version, model).recorded_window(t.settings)  # the writing release's fraction
    assert window is not None
    settings = PolicySettings(window, extra=(("auto_compact_limit", limit),) if limit is not None else ())
    run = simulate_path(p, codex_policy(version, model), settings)
    exact = []
    reasoning = (1, 0) if any(m.role == "assistant" and "encrypted_content" in str(m.raw)
                              for m in p.messages[:50]) else (int(codex_policy(version, model).rule.counts_past_reasoning),)
    for t_, c, pre, j, i, r_, x in itertools.product((1, 0), (1, 0), (1, 0), (1, 0), (1, 0), (1, 0), reasoning):
        pol = codex_policy(version, model)
        pol.rule = dataclasses.replace(pol.rule, count_trailing=bool(t_), explicit_capped=bool(c),
                                       pre_turn_check=bool(pre), json_tool_outputs=bool(j),
                                       context_before_pre_turn_check=bool(r_), counts_past_reasoning=bool(x))
        pol.check_points = frozenset({CheckPoint.BEFORE_SAMPLING, CheckPoint.BETWEEN_TURNS} if pre
                                     else {CheckPoint.BETWEEN_TURNS})
        pol.pre_turn_excludes_input = not i
        r = simulate_path(p, pol, settings)
        if r.recorded_match.matched == len(p.compactions) and r.recorded_match.extra == 0:
            exact.append(f"t{t_}c{c}p{pre}j{j}i{i}r{r_}x{x}")
    return len(p.compactions), run.recorded_match.matched, run.recorded_match.extra, exact


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("versions", nargs="+")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--probes", default="C,D,K,P")
    ap.add_argument("--replay-only", action="store_true")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for version in args.versions:
        for probe in [p for p in args.probes.split(",") if p]:
            path = args.out / f"{probe}-{version}.jsonl"
            if not args.replay_only:
                t0 = time.monotonic()
                path = record_probe(version, probe, args.out)
                print(f"{path.name}: recorded in {time.monotonic() - t0:.0f} s", file=sys.stderr)
            if not path.exists():
                continue
            n, matched, extra, exact = replay(path, PROBES[probe][2])
            print(f"{version} {probe}: {n} compactions, table row {matched}/{n} +{extra}, "
                  f"exact: {', '.join(exact) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
