"""Record ``sample_sessions/codex/`` with the real Codex CLI (0.171.0) against the lab server.

``make samples-codex`` = ``python -m lab.generate_codex --out sample_sessions/codex``. Each sample is
one ``CodexRecording`` (seed, prompts, ``model_context_window``, ``model_auto_compact_token_limit``,
the lab server's real window). After recording, every rollout is analysed with plain ``json``
(``lab.codex_manifest``) and checked against what it is meant to show; ``MANIFEST.md`` and
``manifest.json`` are written from those facts. ``--check`` only re-analyses the files in ``--out``;
``--only NAME[,NAME]`` records some samples; ``--keep-work`` keeps the work dirs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from lab.codex_driver import CodexRecording, record
from lab.codex_env import CODEX_VERSION
from lab.codex_manifest import RolloutFacts, analyze

SAMPLES: tuple[CodexRecording, ...] = (
    CodexRecording("codex-pair-a", seed=71, prompts=14, context_window=64000, auto_compact_limit=17000,
                   shows="pair with codex-pair-b: same seed and workload, model_auto_compact_token_limit 17000"),
    CodexRecording("codex-pair-b", seed=71, prompts=14, context_window=64000, auto_compact_limit=19500,
                   shows="pair with codex-pair-a: same seed and workload, model_auto_compact_token_limit 19500"),
    CodexRecording("codex-overflow", seed=72, prompts=6, profile="heavy", context_window=200000,
                   server_window=18000,
                   shows="the provider's real window (18000) is below Codex's limit (90% of 200000): "
                   "context_length_exceeded fails the turn, and later turns too"),
)
PAIRS = (("codex-pair-a", "codex-pair-b"),)


def expectations(rec: CodexRecording, f: RolloutFacts) -> list[str]:
    problems = []
    if f.bad_lines:
        problems.append(f"{f.bad_lines} unparseable lines")
    if "pair" in rec.name and len(f.compactions) < 3:
        problems.append(f"only {len(f.compactions)} compactions (want >= 3)")
    if "pair" in rec.name and f.overflows:
        problems.append("pair recording hit context_length_exceeded")
    if "overflow" in rec.name and f.overflows < 1:
        problems.append("no context_length_exceeded recorded")
    if f.user_prompts != rec.prompts:
        problems.append(f"{f.user_prompts} user prompts in the rollout, {rec.prompts} sent")
    return problems


def write_manifest(out: Path, meta: dict[str, dict]) -> None:
    rows = [
        "# Codex sample rollouts",
        "",
        f"Written by the real Codex CLI {CODEX_VERSION} (npm `@openai/codex`) against the lab server "
        "(`lab/responses_api.py`), with `python -m lab.generate_codex --out sample_sessions/codex`. "
        "Facts below are computed with plain `json` by `lab/codex_manifest.py` (its docstring defines them).",
        "",
        "| file | prompts | window (config) | limit | server window | model_context_window (token_count) "
        "| agent requests | compactions | overflows | shows |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, m in meta.items():
        s, f = m["spec"], m["facts"]
        rows.append(f"| `{name}.jsonl` | {s['prompts']} | {s['context_window']} | {s['auto_compact_limit']} | "
                    f"{s['server_window'] or s['context_window']} | {f['model_context_window']} | "
                    f"{f['agent_requests']} | {len(f['compactions'])} | {f['overflows']} | {s['shows']} |")
    rows += ["", "## Compactions", "",
             "tokens before = `total_tokens` of the last agent response before the compaction call; estimate = "
             "bytes/4 of the items after the newest model-generated item; fired = tokens before + estimate.", "",
             "| file | line | when | tokens before | + estimate | = | limit | summary call in/out | kept items |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, m in meta.items():
        limit = m["effective_limit"]
        for c in m["facts"]["compactions"]:
            tb = c["tokens_before"] or 0
            rows.append(f"| `{name}` | {c['line']} | {c['when']} | {c['tokens_before']} | {c['estimate_after']} | "
                        f"{tb + c['estimate_after']} | {limit} | {c['call_input']}/{c['call_output']} | "
                        f"{c['replacement_items']} |")
    (out / "MANIFEST.md").write_text("\n".join(rows) + "\n")
    (out / "manifest.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")


def effective_limit(rec: CodexRecording) -> int:
    """min(model_auto_compact_token_limit, 90% of model_context_window), as codex-rs computes it."""
    ninety = rec.context_window * 9 // 10
    return min(rec.auto_compact_limit, ninety) if rec.auto_compact_limit else ninety


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("sample_sessions/codex"))
    ap.add_argument("--only", default="")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--keep-work", action="store_true")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    only = {s for s in args.only.split(",") if s}
    old = {}
    if (args.out / "manifest.json").exists():
        old = json.loads((args.out / "manifest.json").read_text())
    meta: dict[str, dict] = {}
    failed = False
    for rec in SAMPLES:
        path = args.out / f"{rec.name}.jsonl"
        if not args.check and (not only or rec.name in only):
            t0 = time.monotonic()
            res = record(rec, path, keep_work=args.keep_work, log=lambda m: print(m, file=sys.stderr))
            print(f"{rec.name}: {len(res.requests)} server requests, {time.monotonic() - t0:.1f} s", file=sys.stderr)
        if not path.exists():
            if rec.name in old:
                meta[rec.name] = old[rec.name]
            continue
        facts = analyze(path)
        problems = expectations(rec, facts)
        for p in problems:
            print(f"{rec.name}: {p}", file=sys.stderr)
        failed |= bool(problems)
        meta[rec.name] = {"spec": asdict(rec), "effective_limit": effective_limit(rec), "facts": facts.as_dict(),
                          "problems": problems}
    for a, b in PAIRS:
        if a in meta and b in meta and meta[a]["facts"]["user_prompts"] != meta[b]["facts"]["user_prompts"]:
            print(f"pair {a}/{b}: different prompt counts", file=sys.stderr)
            failed = True
    write_manifest(args.out, meta)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
