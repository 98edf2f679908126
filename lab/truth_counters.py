"""Which message counter makes replay's truth model predict best? The table of docs/estimate-error.md
("Replay's truth model with the model's tokenizer"), measured on real Pi session files.

    .venv/bin/python -m lab.truth_counters DIR_OR_FILES... [--json out.json]

Measured as replay uses the model (`replay.truth_model`, through the Pi adapter `replay.truth`):
for each session's default path, each request's recorded prompt A_k is predicted by O + r * X_k,
with O and r fitted (`fit_overhead_ratio`) on the session's earlier requests only (a time split),
X the counter's size of the request's recorded context. Counters: `chars4` (Pi's estimateTokens,
the default), `o200k`, `own` (the model's own tokenizer wherever the registry has one, DeepSeek's
included, `tokens.registry.encoding_for`), `model` (the registry's tokenizer of the calibrated feature,
`tokens.registry.calibration_encoding_for`: the model's own where it beats o200k, else o200k: the
counter `replay --truth-tokenizer model` uses). MAPE over the predictions, overall, by tokenizer
family and by model with at least 50 predictions. Nothing of the files is printed but model names
and numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

COUNTERS = ("chars4", "o200k", "own", "model")


def _files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.rglob("*.jsonl")) if p.is_dir() else [p])
    return out


def _counter(name: str, wl: Any) -> Callable[[Any], int]:
    from sessiontools.replay.truth import chars4_counter
    from sessiontools.tokens.registry import message_counter_for
    from sessiontools.tokens.tiktoken_counter import TiktokenCounter

    if name == "chars4":
        return chars4_counter(wl.pi_version)
    if name == "o200k":
        c = TiktokenCounter("o200k_base", num_threads=1)
        return lambda m: c.count_message(m, wl.pi_version)
    return message_counter_for(wl.provider, wl.model, wl.pi_version, calibration=name == "model")


def predictions(wl: Any, counter: str) -> list[tuple[float, float]]:
    """(predicted, recorded) of each request after a session's first, fitted on the earlier ones."""
    from sessiontools.replay.truth import pi_counted, pi_fit_input
    from sessiontools.replay.truth_model import fit_overhead_ratio

    inp = pi_fit_input(wl, pi_counted(wl, _counter(counter, wl), None))
    xs = [float(x) for _, _, _, x in inp.contexts]
    ys = [float(inp.wanted[at]) for at, _, _, _ in inp.contexts]
    out = []
    for k in range(1, len(xs)):
        fit = fit_overhead_ratio(xs[:k], ys[:k])
        if ys[k] > 0:
            out.append((fit.overhead + fit.ratio * xs[k], ys[k]))
    return out


def measure(files: list[Path]) -> dict[str, Any]:
    from sessiontools.read import load_session
    from sessiontools.replay import build_workload
    from sessiontools.tokens.registry import calibration_encoding_for
    from sessiontools.transcript.pi import SessionTree

    errs: dict[str, dict[str, list[float]]] = {c: {} for c in COUNTERS}  # counter -> group -> |e|/A
    sessions = 0
    for f in files:
        try:
            s = load_session(f)
            wl = build_workload(SessionTree(s).path().entries, s.pi_version)
        except Exception as exc:  # a file the readers refuse is not part of the measure
            print(f"skipped {f.name}: {exc}", file=sys.stderr)
            continue
        if wl.model is None:
            continue
        sessions += 1
        groups = ("all", f"family {calibration_encoding_for(wl.provider, wl.model)}", f"model {wl.provider}/{wl.model}")
        for c in COUNTERS:
            for pred, a in predictions(wl, c):
                for g in groups:
                    errs[c].setdefault(g, []).append(abs(pred - a) / a)
    table = {}
    for g in errs["chars4"]:
        n = len(errs["chars4"][g])
        if g.startswith("model") and n < 50:
            continue
        table[g] = {"predictions": n, **{c: sum(errs[c][g]) / n for c in COUNTERS}}
    return {"sessions": sessions, "groups": table}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    doc = measure(_files(a.paths))
    if a.json:
        a.json.write_text(json.dumps(doc, indent=1))
    print(f"{doc['sessions']} sessions")
    print("| group | predictions | " + " | ".join(COUNTERS) + " |")
    for g, row in sorted(doc["groups"].items(), key=lambda kv: (kv[0] != "all", kv[0])):
        print(f"| {g} | {row['predictions']:,} | " + " | ".join(f"{row[c]:.2%}" for c in COUNTERS) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
