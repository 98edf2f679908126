"""`replay_vs_pi_js`, `grid25_vs_one` and `replay_grid25_vs_pi_js`: our replay against the same
simulation over Pi's own functions in Node (bench/pi_replay.mjs), both warm, interleaved, best of
several runs on each side, and the compaction positions of both sides compared (for the grid: of
every one of its 25 settings).

The grid is what users run. Our replay shares the reading, the truth fit and the workload across the
settings of a grid; Pi's own code has no grid, so the Node side runs each setting as Pi would, one
whole run (reading, parsing, simulation) per setting. Node's reading + JSON.parse share of that is
printed beside the ratio (`replay_grid25_node_parse_share`), so a reader sees how much of Node's
grid is work we share and it repeats.

The Python side is what users run (`replay_session`: read the file, fit the truth model, simulate).
The Node side parses the file and runs the same walk with Pi's functions; it is given the fitted
truth model (per-entry tokens, overhead, ratio, summary size), which it does not compute itself:
that work is only on the Python side, so the ratio errs against us.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESERVE, KEEP = 16384, 20000
GRID_RESERVES = (4096, 8192, 16384, 24576, 32768)
GRID_KEEPS = (5000, 10000, 20000, 30000, 40000)
ROUNDS = 6


def _python_run(session_file: Path, window: int) -> tuple[float, Any]:
    from sessiontools.read import load_session
    from sessiontools.replay import replay_session

    t = time.perf_counter()
    (pr,) = replay_session(load_session(session_file), windows=[window], reserves=[RESERVE], keeps=[KEEP],
                           policy="pi-0")
    return time.perf_counter() - t, pr


def _parse_only(session_file: Path) -> float:
    """The floor under any Python replay: read the file and orjson.loads every line, nothing else."""
    import orjson

    t = time.perf_counter()
    with open(session_file, "rb") as fh:
        for line in fh:
            if line.strip():
                orjson.loads(line)
    return time.perf_counter() - t


def _grid_run(session_file: Path, window: int) -> tuple[float, dict[tuple[int, int], list[list[Any]]]]:
    """Elapsed seconds of one 25-setting replay, and each setting's compaction positions."""
    from sessiontools.read import load_session
    from sessiontools.replay import replay_session

    t = time.perf_counter()
    prs = replay_session(load_session(session_file), windows=[window], reserves=list(GRID_RESERVES),
                         keeps=list(GRID_KEEPS), policy="pi-0")
    elapsed = time.perf_counter() - t
    positions = {(run.settings.reserve_tokens, run.settings.keep_recent_tokens): _run_positions(run)
                 for pr in prs for run in pr.runs}
    del prs  # freed after the clock stops, as `_python_run`'s result is (by its caller)
    return elapsed, positions


def _run_positions(run: Any) -> list[list[Any]]:
    return [[c.parent_entry_id, c.first_kept_entry_id, c.tokens_before] for c in run.compactions]


def _positions(pr: Any) -> list[list[Any]]:
    return _run_positions(pr.runs[0])


def _truth_json(pr: Any) -> dict[str, Any]:
    truth, wl = pr.truth, pr.workload
    return {
        "entry_tokens": [truth.entry_tokens(e) for e in wl.base],
        "overhead": truth.overhead,
        # Node's text sizes are ratio * ceil(chars / 4), as `TruthModel.text_tokens` with its counter's
        # units per chars/4 token (`chars4_scale`, 1 under chars/4; `--truth-tokenizer auto` may pick o200k).
        "ratio": truth.ratio * truth.chars4_scale,
        "summary_tokens": truth.summary_tokens,
        "summary_chars_per_token": truth.summary_chars_per_token,
    }


def choose_window(session_file: Path) -> int:
    """200k when the session crosses it several times, else a window it crosses (>= 2 compactions)."""
    window = 200_000
    for _ in range(6):
        _, pr = _python_run(session_file, window)
        if len(pr.runs[0].compactions) >= 2:
            return window
        window = int(window * 0.6) // 1000 * 1000
    return window


def replay_ratios(session_file: Path) -> dict[str, Any]:
    """{replay_vs_pi_js, grid25_vs_one, replay_same_compactions, ...}; raises when the sides disagree."""
    from lab.pi_env import ensure_pi

    window = choose_window(session_file)
    _, pr = _python_run(session_file, window)  # warm-up, and the truth the Node side is given
    env = ensure_pi("0")
    with tempfile.TemporaryDirectory() as d:
        truth_file = Path(d) / "truth.json"
        truth_file.write_text(json.dumps(_truth_json(pr)))
        node = subprocess.Popen(
            [str(env.node), str(ROOT / "bench" / "pi_replay.mjs"), str(env.package_dir), str(session_file),
             str(truth_file), str(window), str(RESERVE), str(KEEP)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        assert node.stdin is not None and node.stdout is not None

        def js_run(command: str = "run") -> dict[str, Any]:
            node.stdin.write(command + "\n")  # type: ignore[union-attr]
            node.stdin.flush()  # type: ignore[union-attr]
            line = node.stdout.readline()  # type: ignore[union-attr]
            if not line:
                raise RuntimeError("bench/pi_replay.mjs stopped (see its stderr above)")
            return json.loads(line)

        grid_command = "grid " + ",".join(map(str, GRID_RESERVES)) + ";" + ",".join(map(str, GRID_KEEPS))
        try:
            js_run()  # warm-up
            js_run(grid_command)
            t_one = t_grid = t_js = t_parse = t_js_parse = t_js_grid = float("inf")
            js_answer = js_grid = None
            grid_positions: dict[tuple[int, int], list[list[Any]]] = {}
            js_grid_parse_share = 0.0
            for _ in range(ROUNDS):  # interleaved: this shared machine's speed wanders
                t, pr = _python_run(session_file, window)
                t_one = min(t_one, t)
                js_answer = js_run()
                t_js = min(t_js, js_answer["ms"] / 1000)
                t_js_parse = min(t_js_parse, js_answer["parse_ms"] / 1000)
                # As many samples as the one-setting run: a best of fewer samples is biased upwards.
                t, grid_positions = _grid_run(session_file, window)
                t_grid = min(t_grid, t)
                js_grid = js_run(grid_command)
                if js_grid["ms"] / 1000 < t_js_grid:
                    t_js_grid = js_grid["ms"] / 1000
                    js_grid_parse_share = js_grid["parse_ms"] / js_grid["ms"]
                t_parse = min(t_parse, _parse_only(session_file))
        finally:
            node.stdin.close()
            node.wait(timeout=60)
    ours, theirs = _positions(pr), js_answer["compactions"]  # type: ignore[index]
    js_positions = {(r["reserve"], r["keep"]): r["compactions"] for r in js_grid["runs"]}  # type: ignore[index]
    grid_same = grid_positions == js_positions and len(js_positions) == len(GRID_RESERVES) * len(GRID_KEEPS)
    same = ours == theirs and grid_same
    print(f"replay {session_file.name}: window {window}, compactions ours {len(ours)} vs Pi's functions "
          f"{len(theirs)}, positions and tokensBefore {'agree' if same else 'DIFFER'}; one {t_one * 1000:.0f} ms, "
          f"grid 5x5 {t_grid * 1000:.0f} ms, Node {t_js * 1000:.0f} ms; reading + orjson alone {t_parse * 1000:.1f} ms "
          f"(Node's reading + JSON.parse {t_js_parse * 1000:.1f} ms); grid 5x5 ours {t_grid * 1000:.0f} ms vs "
          f"Node {t_js_grid * 1000:.0f} ms (parse {js_grid_parse_share:.0%} of it), every setting's compactions "
          f"{'agree' if grid_same else 'DIFFER'}")
    if not same:
        for k, (a, b) in enumerate(zip(ours + [None] * len(theirs), theirs + [None] * len(ours), strict=False)):
            if a != b:
                print(f"  compaction {k}: ours {a} vs Node {b}")
                break
        for key in sorted(set(grid_positions) | set(js_positions)):
            if grid_positions.get(key) != js_positions.get(key):
                print(f"  grid reserve {key[0]} keep {key[1]}: ours {len(grid_positions.get(key) or [])} "
                      f"compaction(s) vs Node {len(js_positions.get(key) or [])}, first difference shown by positions")
                break
    return {
        "replay_vs_pi_js": round(t_one / t_js, 3),
        "grid25_vs_one": round(t_grid / t_one, 3),
        # What users run: a 25-setting grid, ours (shared reading, fit and workload) vs Pi's own code
        # run once per setting; Node's reading + JSON.parse share of its grid beside it.
        "replay_grid25_vs_pi_js": round(t_grid / t_js_grid, 3),
        "replay_grid25_node_parse_share": round(js_grid_parse_share, 3),
        # Reported: Python's floor (reading + orjson.loads of the file, no replay) / Node's whole run.
        "replay_parse_only_vs_pi_js": round(t_parse / t_js, 3),
        "replay_same_compactions": same,
        "replay_compactions": len(ours),
        "replay_window": window,
    }
