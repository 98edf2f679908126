"""Check the replay invariants (`sessiontools.replay.invariants`) over folders of session files.

    python -m lab.replay_invariants FOLDER... [--policy NAME] [--windows 64000,128000] [--jobs N]
        [--timeout S] [--examples K] [--every N] [--jsonl OUT]

Each file is replayed as `sessiontools replay FILE` would at its defaults (or under `--policy` and
`--windows`); every run record, each with its own timeline, is checked with `violations` and the runs of one path with
`consistent_user_compactions`. Prints the files read, replayed and refused (with why, by kind), the
runs checked and the violations by rule, with the first K examples (file name and rule only).
`--every N` checks every N-th file of the sorted list (a deterministic sample, for the slower passes);
`--jsonl OUT` writes one line per file (path, outcome, runs, violations) for a later table. An
exception that is not a `SessionToolsError` is counted as "internal error: <type>" (a bug, exit 70 in
the CLI), not raised. Reads the session files, never writes them: real sessions stay where they are.
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
    """A refusal's kind: its type and its message without the file's name and with numbers as N."""
    msg = str(e).replace(path, "").replace(Path(path).name, "").lstrip(": ")
    if "catalogue" in msg:
        return "not in the catalogue"
    return f"{type(e).__name__}: {re.sub(r'[0-9][0-9,.]*', 'N', msg)[:70]}"


def check_file(args: tuple[str, str | None, list[int] | None, int]) -> tuple[str, str, int, list[str], dict[str, int]]:
    """(file, outcome, runs checked, violations, `_tally`): outcome "ok", "no run (...)", "refused: <kind>",
    "internal error: <type>: <message>" or "timeout"."""
    path, policy, windows, timeout = args
    from sessiontools.errors import SessionToolsError
    from sessiontools.read.sources import load_source
    from sessiontools.read.values import cleaned_call
    from sessiontools.replay.invariants import consistent_user_compactions, violations
    from sessiontools.replay.session import replay_source, run_record, timeline_of

    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        src = load_source(Path(path))
        prs = cleaned_call(replay_source, src, windows=windows, reserves=[16384], keeps=[20000], policy=policy,
                           leaf=None, all_leaves=False, summary_tokens=None, models=[])
        recs = [{**run_record(pr, run), "timeline": timeline_of(pr, run)} for pr in prs for run in pr.runs]
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
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--examples", type=int, default=10)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--jsonl", type=Path)
    a = ap.parse_args(argv)
    files = sorted({str(f) for d in a.folders for f in (d.rglob("*.jsonl") if d.is_dir() else [d])})[::a.every]
    log = a.jsonl.open("w") if a.jsonl else None
    windows = [int(w) for w in a.windows.split(",")] if a.windows else None
    outcomes: collections.Counter[str] = collections.Counter()
    rules: collections.Counter[str] = collections.Counter()
    examples: list[str] = []
    runs = 0
    held: collections.Counter[str] = collections.Counter()
    with ProcessPoolExecutor(a.jobs) as pool:
        for path, outcome, n, problems, tally in pool.map(check_file, [(f, a.policy, windows, a.timeout) for f in files],
                                                   chunksize=4):
            outcomes[":".join(outcome.split(":", 2)[:2]) if outcome.startswith("internal") else outcome] += 1
            if log is not None:  # as each file is done (a long pass stopped half way keeps what it checked)
                log.write(json.dumps({"path": path, "outcome": outcome, "runs": n, "violations": problems,
                                     "requests": tally.get("requests", 0)}) + "\n")
                log.flush()
            runs += n
            held.update(tally)
            for p in problems:
                rules[p.split(":", 1)[0]] += 1
                if len(examples) < a.examples:
                    examples.append(f"{Path(path).name}: {p}")
    if log is not None:
        log.close()
    print(f"files {len(files)}, policy {a.policy or 'default'}, windows {a.windows or 'default'}")
    for k, v in sorted(outcomes.items()):
        print(f"  {k}: {v}")
    print(f"runs checked {runs}, violations {sum(rules.values())}")
    print("  they hold: " + ", ".join(f"{k} {v:,}" for k, v in held.items()))
    for k, v in rules.most_common():
        print(f"  {k}: {v}")
    for e in examples:
        print(f"  e.g. {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
