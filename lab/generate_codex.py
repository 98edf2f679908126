"""Record ``sample_sessions/codex/`` with the real Codex CLI (0.171.0, and older releases) against the lab server.

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
    # the what-if pair of issue 25 (limits 20000 / 28000), and one recording per release where the rule
    # changed (policies/codex_rules.py): each replayed at its recorded settings must reproduce every
    # compaction under its own version's row
    CodexRecording("codex-pair-20k", seed=71, prompts=24, context_window=64000, auto_compact_limit=20000,
                   shows="pair with codex-pair-28k: same seed and workload, model_auto_compact_token_limit 20000"),
    CodexRecording("codex-pair-28k", seed=71, prompts=24, context_window=64000, auto_compact_limit=28000,
                   shows="pair with codex-pair-20k: same seed and workload, model_auto_compact_token_limit 28000"),
    CodexRecording("codex-0.63-limit", seed=71, prompts=14, context_window=64000, auto_compact_limit=14000,
                   version="0.63.0", shows="0.63: the count is the last response's total alone, checked after "
                   "every response (a final answer too); compacted lines without replacement_history"),
    CodexRecording("codex-0.63-gpt5", seed=71, prompts=14, context_window=0, model="gpt-5.1-codex",
                   overhead=232_800, server_window=1_000_000, version="0.63.0",
                   shows="0.63, a model codex-rs knows, no window or limit set: 90% of its 272000 = 244800 "
                   "(the lab adds 232800 hidden tokens to every request)"),
    CodexRecording("codex-0.77-gpt5", seed=71, prompts=14, context_window=0, model="gpt-5.1-codex",
                   overhead=232_800, server_window=1_000_000, version="0.77.0",
                   shows="0.77: 244800 for gpt-5.1-codex, checked only after a response that needs a follow-up"),
    CodexRecording("codex-0.121-default", seed=71, prompts=40, context_window=30000, version="0.121.0",
                   shows="0.121: no limit set: 90% of the configured 30000; the count adds bytes/4 of the "
                   "newer items (a tool output as its serde_json item); replacement_history recorded"),
    CodexRecording("codex-0.145-capped", seed=71, prompts=40, context_window=30000, auto_compact_limit=28500,
                   version="0.145.0", shows="0.145: an explicit 28500 is capped at 90% of the window (27000)"),
)
PAIRS = (("codex-pair-a", "codex-pair-b"), ("codex-pair-20k", "codex-pair-28k"))
#: Fewer compactions than this in a recording is a failed recording (default 3 for a pair, else 0).
MIN_COMPACTIONS = {"codex-pair-28k": 2, "codex-0.63-limit": 3, "codex-0.63-gpt5": 2, "codex-0.77-gpt5": 2,
                   "codex-0.121-default": 3, "codex-0.145-capped": 3}


def expectations(rec: CodexRecording, f: RolloutFacts) -> list[str]:
    problems = []
    if f.bad_lines:
        problems.append(f"{f.bad_lines} unparseable lines")
    want = MIN_COMPACTIONS.get(rec.name, 3 if "pair" in rec.name else 0)
    if len(f.compactions) < want:
        problems.append(f"only {len(f.compactions)} compactions (want >= {want})")
    if rec.version and rec.version not in f.cli_versions:
        problems.append(f"recorded by {f.cli_versions}, not {rec.version}")
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
        f"Written by the real Codex CLI (npm `@openai/codex`, the version in the table; {CODEX_VERSION} unless "
        "it says otherwise, installed by `lab/codex_env.py`) run offline against the lab server "
        "(`lab/responses_api.py`), with `python -m lab.generate_codex --out sample_sessions/codex` "
        "(`--only NAME` for one). Model `lab-model` unless the table names one (then no window is set, "
        "and the lab adds the hidden tokens shown to every request so a 272k model's limit is reached). "
        "Facts below are computed with plain `json` by `lab/codex_manifest.py` (its docstring defines them).",
        "",
        "| file | CLI | model | prompts | window (config) | limit | hidden | server window | "
        "model_context_window (token_count) | agent requests | compactions | overflows | shows |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, m in meta.items():
        s, f = m["spec"], m["facts"]
        rows.append(f"| `{name}.jsonl` | {', '.join(f['cli_versions'])} | {s.get('model', 'lab-model')} | "
                    f"{s['prompts']} | {s['context_window'] or '-'} | {s['auto_compact_limit']} | "
                    f"{s.get('overhead', 0)} | {s['server_window'] or s['context_window']} | "
                    f"{f['model_context_window']} | {f['agent_requests']} | {len(f['compactions'])} | "
                    f"{f['overflows']} | {s['shows']} |")
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
    """The limit the recording's release applies (`policies.codex_rules`): the explicit one (capped at 90% of
    the window from 0.100 on), else 90% of the window (the model's own, 272000 for gpt-5*, when none is set)."""
    from sessiontools.policies.codex_rules import context_window, rule_for

    window = rec.context_window or context_window(rec.model, rec.version or CODEX_VERSION) or 0
    ninety = window * 9 // 10
    if not rec.auto_compact_limit:
        return ninety
    capped = rule_for(rec.version or CODEX_VERSION).explicit_capped
    return min(rec.auto_compact_limit, ninety) if capped else rec.auto_compact_limit


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
