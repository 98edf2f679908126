"""Check the replay invariants (`sessiontools.replay.invariants`) over folders of session files.

    python -m lab.replay_invariants FOLDER... [--policy NAME[,NAME...]|all] [--windows 64000,128000]
        [--reserves 3000,6000] [--keeps 2000,6000] [--all-leaves] [--jobs N] [--timeout S] [--examples K]
        [--every N] [--jsonl OUT]

Each file is replayed as `sessiontools replay FILE` would at its defaults (or under each `--policy`:
`default` is the file's own, `all` is the default and every registered policy, so each agent's files
run under their own rule and every other agent's; and over the grid `--windows` x `--reserves` x
`--keeps`); every run record, each with its own timeline, is checked with `violations` and the runs of
one path with `consistent_user_compactions`. Prints the files read, replayed and refused (with why, by kind), the
runs checked and the violations by rule, with the first K examples (file name and rule only).
`--every N` checks every N-th file of the sorted list (a deterministic sample, for the slower passes);
`--jsonl OUT` writes one line per file and policy (path, policy, outcome, runs, violations) for a later
table. An exception that is not a `SessionToolsError` is counted as "internal error: <type>" (a bug, exit
70 in the CLI), not raised. Exit 1 when any run breaks an invariant or any replay hit an internal error. Reads the session files, never writes them: real sessions stay where they are.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import signal
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any


class _Timeout(Exception):
    pass


def _alarm(*_: Any) -> None:
    raise _Timeout


def _tally(recs: list[dict[str, Any]]) -> dict[str, int]:
    """What the checked runs hold (so that 0 violations is not 0 of nothing)."""
    m = [r["metrics"] for r in recs]
    return {"runs with a compaction": sum(1 for x in m if x["compactions"] + x["user_compactions"] > 0),
            "compactions": sum(x["compactions"] + x["user_compactions"] for x in m),
            "runs with an overflow": sum(1 for x in m if x["overflows"] > 0),
            "provider rejections": sum(x.get("provider_rejections", 0) for x in m),
            "late check points": sum(x["late"] for x in m),
            "requests": sum(r["requests_from_recorded_usage"] + r["requests_from_model"]
                            + r.get("requests_from_provider_error", 0) for r in recs)}


def _kind(e: Exception, path: str) -> str:
    """A refusal's kind: its type and its message without the file's name and with numbers as N; one
    kind for every model without a window (`ModelNotInCatalogue`, whichever the model)."""
    from sessiontools.errors import ModelNotInCatalogue

    if isinstance(e, ModelNotInCatalogue):
        return "not in the catalogue"
    msg = str(e).replace(path, "").replace(Path(path).name, "").lstrip(": ")
    return f"{type(e).__name__}: {re.sub(r'[0-9][0-9,.]*', 'N', msg)[:70]}"


def _ints(text: str | None) -> list[int] | None:
    return [int(v) for v in text.split(",")] if text else None


def _policies(text: str | None) -> list[str | None]:
    """`--policy`'s policies (None: the file's own rule); `all` is the default and every registered one."""
    from sessiontools.names import POLICY_ORDER

    if text is None:
        return [None]
    names = [p.value for p in POLICY_ORDER] if text == "all" else text.split(",")
    return [None, *names] if text == "all" else [None if n == "default" else n for n in names]


def check_file(args: tuple[str, str | None, dict[str, Any], int]) -> tuple[str, str, int, list[str], dict[str, int]]:
    """(file, outcome, runs checked, violations, `_tally`): outcome "ok", "no run (...)", "refused: <kind>",
    "internal error: <type>: <message>" or "timeout". `grid`: `windows` (None: the file's own), `reserves`,
    `keeps`, `all_leaves`."""
    path, policy, grid, timeout = args
    from sessiontools.errors import SessionToolsError
    from sessiontools.read.sources import load_source
    from sessiontools.read.values import cleaned_call
    from sessiontools.replay.invariants import consistent_user_compactions, violations
    from sessiontools.replay.run_document import record_of
    from sessiontools.replay.session import replay_source

    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        src = load_source(Path(path))
        prs = cleaned_call(replay_source, src, windows=grid["windows"], reserves=grid["reserves"], keeps=grid["keeps"],
                           policy=policy, leaf=None, all_leaves=grid["all_leaves"], summary_tokens=None, models=[])
        recs = [record_of(pr, run, timeline=True).to_dict(timeline=True) for pr in prs for run in pr.runs]
    except _Timeout:
        return path, "timeout", 0, [], {}
    except SessionToolsError as e:
        return path, f"refused: {_kind(e, path)}", 0, [], {}
    except Exception as e:  # a bug: counted and named, the other files still checked
        return path, f"internal error: {type(e).__name__}: {str(e)[:120]}", 0, [], {}
    finally:
        signal.alarm(0)
    out = [v for r in recs for v in violations(r)] + consistent_user_compactions(recs)
    return path, "ok" if recs else "no run (no message in the file)", len(recs), out, _tally(recs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--policy")
    ap.add_argument("--windows")
    ap.add_argument("--reserves", default="16384")
    ap.add_argument("--keeps", default="20000")
    ap.add_argument("--all-leaves", action="store_true")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--examples", type=int, default=10)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--jsonl", type=Path)
    a = ap.parse_args(argv)
    files = sorted({str(f) for d in a.folders for f in (d.rglob("*.jsonl") if d.is_dir() else [d])})[::a.every]
    log = a.jsonl.open("w") if a.jsonl else None
    grid = {"windows": _ints(a.windows), "reserves": _ints(a.reserves), "keeps": _ints(a.keeps),
            "all_leaves": a.all_leaves}
    tasks = [(f, p, grid, a.timeout) for f in files for p in _policies(a.policy)]
    outcomes: collections.Counter[str] = collections.Counter()
    rules: collections.Counter[str] = collections.Counter()
    examples: list[str] = []
    runs = 0
    held: collections.Counter[str] = collections.Counter()
    with ProcessPoolExecutor(a.jobs) as pool:
        for (_, policy, _, _), (path, outcome, n, problems, tally) in zip(tasks, pool.map(check_file, tasks, chunksize=4),
                                                                          strict=True):
            outcomes[":".join(outcome.split(":", 2)[:2]) if outcome.startswith("internal") else outcome] += 1
            if log is not None:  # as each file is done (a long pass stopped half way keeps what it checked)
                log.write(json.dumps({"path": path, "policy": policy or "default", "outcome": outcome, "runs": n,
                                      "violations": problems, "requests": tally.get("requests", 0)}) + "\n")
                log.flush()
            runs += n
            held.update(tally)
            for p in problems:
                rules[p.split(":", 1)[0]] += 1
                if len(examples) < a.examples:
                    examples.append(f"{Path(path).name} ({policy or 'default'}): {p}")
    if log is not None:
        log.close()
    print(f"files {len(files)}, policy {a.policy or 'default'} ({len(tasks)} replays), windows {a.windows or 'default'}, "
          f"reserves {a.reserves}, keeps {a.keeps}{', every leaf' if a.all_leaves else ''}")
    for k, v in sorted(outcomes.items()):
        print(f"  {k}: {v}")
    print(f"runs checked {runs}, violations {sum(rules.values())}")
    print("  they hold: " + ", ".join(f"{k} {v:,}" for k, v in held.items()))
    for k, v in rules.most_common():
        print(f"  {k}: {v}")
    for e in examples:
        print(f"  e.g. {e}")
    return 1 if rules or any(k.startswith("internal") for k in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
