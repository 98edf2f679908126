"""Which message counter makes replay's truth model predict best? The tables of docs/estimate-error.md
("Replay's truth model with the model's tokenizer", "Choosing the counter per session"), measured on
session files of any agent.

    .venv/bin/python -m lab.truth_counters DIR_OR_FILES... [--json out.json]

Measured as replay uses the model (`replay.truth_model`): for each session's default path (through
the transcript adapter `replay.neutral` with its own agent's policy's message counter, Pi's
estimateTokens for a Pi file), each request's recorded
prompt A_k is predicted by O + r * X_k, with O and r fitted on the session's earlier requests only
(`replay.counter_choice.in_session_errors`), X the counter's size of the request's recorded context.

Counters: `chars4` (each agent's own chars/4; Pi: estimateTokens), `o200k`, `own` (the model's own
tokenizer wherever the registry has one, DeepSeek's included, `tokens.registry.encoding_for`),
`model` (the model's own where it beats o200k, else o200k: `replay --truth-tokenizer model`), and
the per-session choice `replay --truth-tokenizer auto` makes (`replay.counter_choice.choose_counter`):
`auto` scores each session with the counter it picks from all its requests (what replay then uses:
the pick has seen the requests it is scored on), `auto-online` scores request k with the counter
the same rule picks from the predictions before k only (strictly out of sample; chars/4 until the
session has MIN_CHOICE_REQUESTS requests). MAPE over the predictions, overall, by agent, by
tokenizer family and by model with at least 50 predictions; `picks` counts the sessions by the
counter `auto` picked. Nothing of the files is printed but model names and numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

COUNTERS = ("chars4", "o200k", "own", "model", "auto", "auto-online")
FIXED = COUNTERS[:4]


def _files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.rglob("*.jsonl")) if p.is_dir() else [p])
    return out


def _tokenizer(counter: str, provider: Any, model: Any) -> str | None:
    """The tokenizer name of a fixed counter for this model (None: chars/4)."""
    from sessiontools.tokens.registry import available_encoding_for, truth_encoding_for

    if counter == "own":
        return available_encoding_for(provider, model)
    return truth_encoding_for(counter, provider, model)


def _transcript_inputs(session: Any) -> tuple[Any, Any, Callable[[str | None], Any]]:
    from sessiontools.policies.registry import own_policy
    from sessiontools.replay.neutral import path_fit_input
    from sessiontools.transcript.load import transcript_of

    t = transcript_of(session)
    path = t.paths[0]
    own = own_policy(t, path)
    req = next((r for r in reversed(path.requests) if r.model), None)

    def inputs(name: str | None) -> Any:
        return path_fit_input(path, own.truth_counter(name), own.recorded_summary_priced)

    return (req.provider if req else None), (req.model if req else None), inputs


def online_choice(errors: dict[str, list[float]], first: str, second: str) -> list[float]:
    """Each prediction's error under the counter `choose_counter`'s rule picks from the predictions
    before it only (`first` until MIN_CHOICE_REQUESTS requests, i.e. MIN_CHOICE_REQUESTS - 1
    predictions, are known; then `second` when it is better beyond noise, `choice_z`)."""
    from sessiontools.replay.counter_choice import CHOICE_Z, MIN_CHOICE_REQUESTS, choice_z

    out = []
    n = 0
    total = squares = 0.0
    for ea, eb in zip(errors[first], errors[second], strict=True):
        use_second = n >= MIN_CHOICE_REQUESTS - 1 and choice_z(n, total, squares) >= CHOICE_Z
        out.append(eb if use_second else ea)
        d = ea - eb
        n, total, squares = n + 1, total + d, squares + d * d
    return out


def session_errors(session: Any) -> tuple[str, str, str, dict[str, list[float]]] | None:
    """(model key, family, auto's pick, counter -> each prediction's |error| / A) of a session's
    default path; None when it records no model."""
    from sessiontools.replay.counter_choice import choose_counter, in_session_errors
    from sessiontools.replay.truth_model import CHARS4

    provider, model, inputs = _transcript_inputs(session)
    if model is None:
        return None
    names = {c: _tokenizer(c, provider, model) or CHARS4 for c in FIXED}
    got = {n: inputs(None if n == CHARS4 else n) for n in set(names.values())}
    errors = {c: in_session_errors(got[n]) for c, n in names.items()}
    pick, _, _ = choose_counter([CHARS4, names["model"]], got.__getitem__)
    errors["auto"] = errors["chars4" if pick == CHARS4 else "model"]
    errors["auto-online"] = online_choice(errors, "chars4", "model")
    return f"{provider}/{model}", names["model"], ("chars4" if pick == CHARS4 else pick), errors


def measure(files: list[Path]) -> dict[str, Any]:
    from sessiontools.read.sources import load_source

    errs: dict[str, dict[str, list[float]]] = {c: {} for c in COUNTERS}  # counter -> group -> |e|/A
    picks: dict[str, int] = {}
    per_session: list[tuple[str, dict[str, list[float]]]] = []
    sessions = 0
    for f in files:
        try:
            s = load_source(f)
            got = session_errors(s)
        except Exception as exc:  # a file the readers refuse is not part of the measure
            print(f"skipped {f.name}: {type(exc).__name__}: {exc}"[:200], file=sys.stderr)
            continue
        if got is None:
            continue
        key, family, pick, errors = got
        sessions += 1
        picks[pick] = picks.get(pick, 0) + 1
        per_session.append((key, {c: [round(e, 6) for e in errors[c]] for c in FIXED}))
        for c in COUNTERS:
            for g in ("all", f"agent {s.agent.value}", f"family {family}", f"model {key}"):
                errs[c].setdefault(g, []).extend(errors[c])
    table = {}
    for g, base in errs["chars4"].items():
        n = len(base)
        if n == 0 or (g.startswith("model") and n < 50):
            continue
        table[g] = {"predictions": n, **{c: sum(errs[c][g]) / n for c in COUNTERS}}
    return {"sessions": sessions, "picks": picks, "groups": table, "per_session": per_session}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    doc = measure(_files(a.paths))
    if a.json:
        a.json.write_text(json.dumps(doc, indent=1))
    print(f"{doc['sessions']} sessions; auto picks " + ", ".join(f"{k} {v}" for k, v in sorted(doc["picks"].items())))
    print("| group | predictions | " + " | ".join(COUNTERS) + " |")
    for g, row in sorted(doc["groups"].items(), key=lambda kv: (kv[0] != "all", kv[0])):
        print(f"| {g} | {row['predictions']:,} | " + " | ".join(f"{row[c]:.2%}" for c in COUNTERS) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
