"""Record ``sample_sessions/claude-code/`` with the real Claude Code CLI against the lab server.

``make samples-claude`` runs ``python -m lab.generate_claude --out sample_sessions/claude-code``.
Each sample is one ``ClaudeRecording``; afterwards every file is analysed with plain ``json``
(``lab.claude_manifest``), checked against what it is meant to show, and ``MANIFEST.md`` /
``manifest.json`` are written from those facts. ``--only NAME[,NAME]`` records some samples,
``--check`` only re-analyses, ``--keep-work`` keeps the work directories (with every request body).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from lab.claude_driver import ClaudeRecording, record_claude
from lab.claude_env import PACKAGE, VERSION, ensure_claude
from lab.claude_manifest import analyze_claude

AUTO_WINDOW = 100000  # CLAUDE_CODE_AUTO_COMPACT_WINDOW (the minimum Claude Code accepts)

SAMPLES: tuple[ClaudeRecording, ...] = (
    ClaudeRecording("claude-threshold-15", seed=3, prompts=4, profile="heavy", auto_window=AUTO_WINDOW, pct=15,
                    shows="threshold pair (a): auto-compact window 100000, 15% -> threshold 12000"),
    ClaudeRecording("claude-threshold-14", seed=3, prompts=4, profile="heavy", auto_window=AUTO_WINDOW, pct=14,
                    shows="threshold pair (b): same workload, 14% -> threshold 11200"),
    ClaudeRecording("claude-reactive", seed=3, prompts=3, profile="heavy", server_window=13000,
                    shows="no auto-compact window: reactive compaction after HTTP 400 'prompt is too long' "
                    "(server limit 13000)"),
    ClaudeRecording("claude-manual", seed=5, prompts=3, manual_after=(1,),
                    shows="a manual /compact in print mode after the second prompt"),
)
PAIR = ("claude-threshold-14", "claude-threshold-15")
#: Older releases, one per series where the rule changed (sessiontools/policies/claude_code_rules.py), on
#: one workload with CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=14 and the model's own 200k window (no
#: CLAUDE_CODE_AUTO_COMPACT_WINDOW before the native releases): T = min(floor(E x 14 / 100), E - 13000)
#: = 23520 where E = 200000 - 32000 (<= 2.1.20), 25200 where E = 200000 - 20000 (>= 2.1.21).
VERSIONED_PCT = 14
VERSIONED = ("2.0.77", "2.1.12", "2.1.20", "2.1.21", "2.1.63", "2.1.112", "2.1.150")
SAMPLES += tuple(
    ClaudeRecording(f"claude-{v}", seed=3, prompts=6, profile="heavy", pct=VERSIONED_PCT, server_window=400000,
                    version=v, model="claude-sonnet-4-5",
                    shows=f"Claude Code {v}'s own threshold: model window 200000, {VERSIONED_PCT}%")
    for v in VERSIONED)


def threshold(rec: ClaudeRecording, max_output: int = 128000) -> int | None:
    """The auto-compact threshold of a recording: an older release's from its rule and the model's
    window; 2.1.332's with the auto-compact window (None: threshold compaction off)."""
    if rec.version:
        from sessiontools.policies.claude_code_rules import context_window, rule_for
        from sessiontools.policies.claude_code_rules import threshold as rule_threshold

        return rule_threshold(rule_for(rec.version), context_window(rec.model), rec.model, rec.pct)
    if rec.auto_window is None:
        return None
    effective = rec.auto_window - min(max_output, 20000)
    if rec.pct is None:
        return effective - 13000
    return min(effective * rec.pct // 100, effective - 13000)


def _expectations(rec: ClaudeRecording, f) -> list[str]:
    problems = []
    trig = [c["trigger"] for c in f.compactions]
    if f.skipped:
        problems.append(f"{f.skipped} unparseable lines")
    if rec.version and trig.count("auto") < 2:
        problems.append(f"{trig.count('auto')} auto compactions (want >= 2)")
    if f.version != (rec.version or VERSION):
        problems.append(f"written by {f.version} (want {rec.version or VERSION})")
    if rec.name.startswith("claude-threshold") and trig.count("auto") < 3:
        problems.append(f"{trig.count('auto')} auto compactions (want >= 3)")
    if rec.name == "claude-reactive" and trig.count("auto") < 2:
        problems.append(f"{trig.count('auto')} reactive compactions (want >= 2)")
    if rec.manual_after and trig.count("manual") != len(rec.manual_after):
        problems.append(f"{trig.count('manual')} manual compactions (want {len(rec.manual_after)})")
    if f.prompts < rec.prompts:
        problems.append(f"{f.prompts} prompts recorded (want {rec.prompts})")
    return problems


def server_facts(res) -> dict:
    """What only the server saw: rejected requests (the 400s are not in the transcript), compact requests."""
    return {"requests": len(res.requests),
            "too_long": [q.prompt_tokens for q in res.requests if q.kind == "too_long"],
            "summarise_prompt_tokens": [q.prompt_tokens for q in res.requests if q.kind == "summarise"],
            "counter_mismatches": len(res.mismatches)}


def write_manifest(out: Path, server: dict[str, dict] | None = None) -> tuple[str, list[str]]:
    old = json.loads((out / "manifest.json").read_text()) if (out / "manifest.json").exists() else {}
    server = {**{k: v["server"] for k, v in old.items() if "server" in v}, **(server or {})}
    rows, facts_all, problems = [], {}, []
    for rec in SAMPLES:
        path = out / f"{rec.name}.jsonl"
        if not path.exists():
            continue
        f = analyze_claude(path)
        problems += [f"{rec.name}: {p}" for p in _expectations(rec, f)]
        meta = {k: v for k, v in asdict(rec).items() if k != "name"}
        facts_all[rec.name] = {**meta, "claude_package": PACKAGE, "claude_version": rec.version or VERSION,
                               "threshold": threshold(rec), "facts": f.as_dict()}
        if rec.name in server:
            facts_all[rec.name]["server"] = server[rec.name]
        comp = "; ".join(f"{c['trigger']} pre {c['preTokens']} post {c['postTokens']}" for c in f.compactions)
        rows.append(f"| `{rec.name}.jsonl` | {rec.version or VERSION} | {rec.auto_window or '-'} | {rec.pct or '-'} | {threshold(rec) or '-'} "
                    f"| {rec.server_window} | {rec.seed} | {rec.profile} | {f.bytes / 1024:.0f} KiB "
                    f"| {rec.shows}; {f.prompts} prompts, {f.responses} responses, {f.tool_calls} tool calls; "
                    f"{len(f.compactions)} compactions: {comp} |")
    total = sum((out / f"{n}.jsonl").stat().st_size for n in facts_all)
    text = MANIFEST_HEAD + "\n".join(rows) + f"\n\nTotal size: {total / 1024:.0f} KiB.\n" + MANIFEST_TAIL
    (out / "MANIFEST.md").write_text(text, encoding="utf-8")
    (out / "manifest.json").write_text(json.dumps(facts_all, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return text, problems


MANIFEST_HEAD = f"""# Claude Code sample transcripts

Written by the real Claude Code CLI ({PACKAGE}@{VERSION}, and for `claude-<version>.jsonl` that
older release, print mode `claude -p`, then `--continue`; `--bare --tools Bash,Edit,Read` where the
release has them, else its full system prompt with `--allowedTools Bash,Edit,Read`) against the
scripted lab server (`lab/anthropic_api.py`).
Regenerate with `make samples-claude`; see lab/README.md, "Claude Code". This table and
`manifest.json` are computed from the files by `lab/claude_manifest.py`.

Columns: auto window = `CLAUDE_CODE_AUTO_COMPACT_WINDOW`, pct = `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`,
threshold = min(floor((window - 20000) x pct / 100), window - 20000 - 13000) (the older releases:
their rule's, sessiontools/policies/claude_code_rules.py, with the model's 200000 window), server limit = the lab
server answers `prompt is too long` above it, seed/profile = lab workload.

| file | Claude Code | auto window | pct | threshold | server limit | seed | profile | size | what it shows |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
"""

MANIFEST_TAIL = """
What varies between runs: the session id, every `uuid`/`parentUuid`/`logicalParentUuid`/
`promptId`/preserved-segment uuid, timestamps and durations, the `device_id` and billing suffix
in `api-request` lines, `cost-state` durations, and how many `last-prompt` / `mode` / `atis-latch`
metadata lines are written (they depend on timing), so the line numbers of later lines shift by a
few. Usage, tool calls, tool results, summaries and compaction metadata do not vary (the server
normalises the workspace path and the date before counting). `server` in manifest.json holds what
only the lab server saw: the rejected requests' sizes (the 400s are not in the transcript) and the
compact requests' sizes.
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("sample_sessions/claude-code"))
    ap.add_argument("--only", action="append", default=[], help="sample name(s), comma-separated")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--check", action="store_true", help="only re-analyse files already in --out")
    ap.add_argument("--workroot", type=Path, default=None)
    ap.add_argument("--keep-work", action="store_true")
    args = ap.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    wanted = {n for item in args.only for n in item.split(",") if n}
    unknown = wanted - {s.name for s in SAMPLES}
    if unknown:
        ap.error(f"unknown sample(s): {', '.join(sorted(unknown))}")
    todo = [s for s in SAMPLES if not wanted or s.name in wanted]
    t0 = time.monotonic()
    if not args.check:
        ensure_claude()

        def run(rec: ClaudeRecording):
            t = time.monotonic()
            print(f"recording {rec.name} ({rec.prompts} prompts) ...", flush=True)
            res = record_claude(rec, out / f"{rec.name}.jsonl", workroot=args.workroot, keep_work=args.keep_work,
                                dump=args.keep_work)
            bad = [r for r in res.runs if r.returncode != 0]
            print(f"  {rec.name}: {time.monotonic() - t:.0f}s, {len(res.requests)} requests"
                  + (f", {len(bad)} runs exited non-zero" if bad else "")
                  + (f", counter mismatches: {res.mismatches[:3]}" if res.mismatches else ""), flush=True)
            return res

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            server = {res.recording.name: server_facts(res) for res in pool.map(run, todo)}
    else:
        server = {}
    text, problems = write_manifest(out, server)
    print(text)
    print(f"done in {time.monotonic() - t0:.0f}s")
    if problems:
        print("\nFAILED EXPECTATIONS:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
