"""Regenerate ``sample_sessions/`` with the real Pi CLI against the lab model server.

``make samples`` runs ``python -m lab.generate --out sample_sessions``. Each sample is one
``Recording`` (Pi release, seed, workload profile, number of prompts, model window, compaction
``reserveTokens``/``keepRecentTokens``, pseudo-tokenizer ratio, optional branches). After recording,
every file is analysed with plain ``json`` (``lab.manifest``) and checked against what it is meant
to show (e.g. at least 5 threshold compactions, overflow errors followed by recovery compactions,
identical workload in a pair); ``MANIFEST.md`` and ``manifest.json`` are then written from those
facts.

Options: ``--only NAME[,NAME]`` records just those samples (the manifest keeps the other rows),
``--quick`` records only the tiny sample and its v1 conversion, ``--jobs N`` runs N recordings at
once (default 2), ``--check`` only re-analyses the files already in ``--out``, ``--keep-work`` keeps
the work directories under ``$TMPDIR/sessiontools-lab`` for debugging.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from lab.driver import Branch, Pseudo, Recording, record
from lab.manifest import analyze, workload_signature
from lab.pi_env import PI_PACKAGES, ensure_pi
from lab.to_v1 import convert_file

SAMPLES: tuple[Recording, ...] = (
    Recording("pi0-threshold-5x", "0", seed=11, prompts=30, window=16000, reserve=3000, keep=4000,
              shows="threshold compactions after runs in print mode (0.x checks at agent_end), incl. split turns"),
    Recording("pi1-threshold-5x", "1", seed=12, prompts=30, window=16000, reserve=3000, keep=4000,
              shows="threshold compactions in 1.x, which also compacts mid-turn before the next model call"),
    Recording("pi0-overflow", "0", seed=2, prompts=10, profile="heavy", window=16000, reserve=3000, keep=4000,
              shows="context-overflow errors (HTTP 400) each followed by an overflow-recovery compaction"),
    Recording("pi1-overflow", "1", seed=62, prompts=8, profile="heavy", window=16000, reserve=3000, keep=3000,
              ratio=2.2, shows="1.x overflow recovery: error, context_edit omitting it, compaction, retried turn "
              "(ratio 2.2 makes Pi's chars/4 pre-request estimate too low)"),
    Recording("pi1-branches", "1", seed=21, prompts=8, window=16000, reserve=3000, keep=4000,
              branches=(Branch(at=5, prompts=3), Branch(at=3, prompts=2)),
              shows="three branches in one file made with Pi's SDK navigateTree, each switch with a branch summary"),
    Recording("pi0-chinese", "0", seed=31, prompts=18, profile="chinese", window=24000, reserve=4000, keep=2000,
              shows="Chinese-heavy prompts, files and answers: Pi's chars/4 estimate is far below the usage"),
    Recording("pi0-pair-a", "0", seed=41, prompts=22, window=24000, reserve=4000, keep=6000,
              shows="pair with pi0-pair-b: same seed and workload, different reserve/keep"),
    Recording("pi0-pair-b", "0", seed=41, prompts=22, window=24000, reserve=8000, keep=2500,
              shows="pair with pi0-pair-a: same seed and workload, different reserve/keep"),
    Recording("pi1-pair-a", "1", seed=42, prompts=22, window=24000, reserve=4000, keep=6000,
              shows="pair with pi1-pair-b: same seed and workload, different reserve/keep"),
    Recording("pi1-pair-b", "1", seed=42, prompts=22, window=24000, reserve=8000, keep=2500,
              shows="pair with pi1-pair-a: same seed and workload, different reserve/keep"),
    Recording("pi0-tiny", "0", seed=51, prompts=5, window=10000, reserve=2500, keep=2000,
              shows="short session (5 prompts) that compacts; source of v1-tiny"),
)
# The rough lab (lab/rough.py): content-dependent tokenizer, hidden provider overhead, harness
# pseudo-replies, several overflows in one run, very few requests. Names say what each one shows.
MIRROR = Pseudo(0, "lab-mirror", "{final}")
GATEWAY = "Gateway notice: the session was resumed on another device."


def _pseudo(*afters: int) -> tuple[Pseudo, ...]:
    """A mirrored delivery of the answer after each given prompt; a gateway notice instead when p % 5 == 3."""
    return tuple(Pseudo(a, "lab-gateway", GATEWAY) if a % 5 == 3 else Pseudo(a, "lab-mirror", "{final}")
                 for a in afters)


ROUGH: tuple[Recording, ...] = (
    Recording("pi0-two-overflows", "0", seed=71, prompts=1, profile="marathon", window=24000, reserve=3000,
              keep=4000, tokenizer="rough", overhead=(300, 1500), sdk=True,
              shows="one run (Pi's SDK, so retries are persisted) that overflows, recovers, replies, then "
              "overflows and recovers again: 0.73.1 clears its recovery flag after any successful reply"),
    Recording("pi1-two-overflows", "1", seed=81, prompts=1, profile="marathon", window=24000, reserve=1000,
              keep=3000, tokenizer="rough", overhead=(300, 3000), overhead_bucket=2, sdk=True,
              shows="1.6.0 run with two overflow recoveries (its chars/4 pre-request estimate misses Chinese "
              "tool results and the hidden overhead), a successful reply between them"),
    Recording("pi0-pseudo-mirror", "0", seed=91, prompts=12, window=12000, reserve=2500, keep=3000,
              tokenizer="rough", overhead=(200, 1200), pseudo=_pseudo(1, 3, 4, 6, 8, 10),
              shows="print mode with harness pseudo-replies between prompts (zero usage, provider openclaw, "
              "models lab-mirror / lab-gateway (stand-ins for harness ids such as OpenClaw's; zero usage makes them pseudo-replies), appended with SessionManager.appendMessage)"),
    Recording("pi1-rough-pseudo", "1", seed=92, prompts=12, window=12000, reserve=2500, keep=3000,
              tokenizer="rough", overhead=(200, 1200), pseudo=_pseudo(0, 2, 3, 5, 7, 9),
              shows="1.x print mode, rough tokenizer and hidden overhead, pseudo-replies between prompts"),
    Recording("pi0-rough-chinese", "0", seed=93, prompts=12, profile="chinese", window=24000, reserve=4000, keep=2000,
              tokenizer="rough", overhead=(300, 1500),
              pseudo=(Pseudo(2, "lab-mirror", "{final}"), Pseudo(6, "lab-gateway", "网关提示：会话已在另一台设备上恢复。")),
              shows="Chinese-heavy session under the rough tokenizer (CJK 1.4x o200k) with hidden overhead and "
              "pseudo-replies"),
    Recording("pi1-few-pseudo", "1", seed=94, prompts=2, profile="chat", window=128000, reserve=16384, keep=20000,
              tokenizer="rough", overhead=(300, 1500), sdk=True,
              pseudo=(MIRROR, Pseudo(0, "lab-gateway", GATEWAY),
                      Pseudo(1, "lab-mirror", "{final}")),
              shows="only two model requests (no tools) and three pseudo-replies, Pi's default settings"),
    Recording("pi0-few-pseudo", "0", seed=95, prompts=1, profile="chat", window=128000, reserve=16384, keep=20000,
              tokenizer="rough", overhead=(300, 1500), sdk=True, pseudo=(MIRROR,),
              shows="one model request and one pseudo-reply (a mirrored delivery of the same answer)"),
)
ALL = SAMPLES + ROUGH
PAIRS = (("pi0-pair-a", "pi0-pair-b"), ("pi1-pair-a", "pi1-pair-b"))
V1 = ("v1-tiny", "pi0-tiny")  # (name, converted from)
QUICK = ("pi0-tiny",)


def _expectations(name: str, f) -> list[str]:
    """Problems with a recorded file, given what it is meant to show (empty list = fine)."""
    problems = []
    if f.skipped:
        problems.append(f"{f.skipped} unparseable lines")
    if "threshold-5x" in name and f.threshold_compactions < 5:
        problems.append(f"only {f.threshold_compactions} threshold compactions (want >= 5)")
    if name.endswith("-overflow") and (f.overflow_errors < 1 or f.overflow_compactions < 1):
        problems.append(f"{f.overflow_errors} overflow errors / {f.overflow_compactions} overflow compactions")
    if name.endswith("branches") and (f.leaves < 3 or f.branch_summaries < 1):
        problems.append(f"{f.leaves} leaves / {f.branch_summaries} branch summaries (want >= 3 / >= 1)")
    if "pair" in name and f.overflow_errors:
        problems.append("pair recording hit context overflow")
    if name == "pi0-tiny" and f.compactions < 1:
        problems.append("no compaction")
    if name == "pi0-chinese" and (f.cjk_share < 0.3 or f.compactions < 1):
        problems.append(f"CJK share {f.cjk_share}, {f.compactions} compactions")
    return problems + _rough_expectations(name, f)


def _rough_expectations(name: str, f) -> list[str]:
    problems = []
    if name.endswith("two-overflows"):
        two = [i for i, n in enumerate(f.overflows_per_run) if n >= 2]
        if not two or not f.recovered_between_overflows:
            problems.append(f"overflows per run {f.overflows_per_run}, separated by a reply: "
                            f"{f.recovered_between_overflows} (want a run with >= 2, each recovered)")
        if f.overflows_per_run != f.overflow_recoveries_per_run:
            problems.append(f"recoveries per run {f.overflow_recoveries_per_run} != overflows {f.overflows_per_run}")
    if "pseudo" in name and f.pseudo_replies < 1:
        problems.append("no pseudo-replies")
    if "-few-" in name and not 1 <= f.model_replies <= 2:
        problems.append(f"{f.model_replies} model replies (want 1-2)")
    if name in ("pi0-pseudo-mirror", "pi1-rough-pseudo", "pi0-rough-chinese") and f.compactions < 1:
        problems.append("no compaction")
    if name == "pi0-rough-chinese" and f.cjk_share < 0.3:
        problems.append(f"CJK share {f.cjk_share}")
    return problems


def _verify_v1(v1: Path, src: Path) -> None:
    """Load the v1 file with Pi's own SessionManager (migration v1 -> v3) and compare the context."""
    env = ensure_pi("0")
    script = r"""
import { pathToFileURL } from "node:url";
const [pkg, v1, v3] = process.argv.slice(1);
const { SessionManager } = await import(pathToFileURL(pkg + "/dist/index.js").href);
const a = SessionManager.open(v1).buildSessionContext().messages;
const b = SessionManager.open(v3).buildSessionContext().messages;
const key = (ms) => JSON.stringify(ms.map((m) => [m.role, m.summary ?? JSON.stringify(m.content ?? "")]));
if (key(a) !== key(b)) { console.error(`context differs: ${a.length} vs ${b.length} messages`); process.exit(1); }
console.log(a.length);
"""
    with tempfile.TemporaryDirectory() as tmp:  # SessionManager.open may rewrite a migrated file
        a, b = Path(tmp) / "v1.jsonl", Path(tmp) / "v3.jsonl"
        shutil.copyfile(v1, a)
        shutil.copyfile(src, b)
        proc = subprocess.run([str(env.node), "--input-type=module", "-e", script, str(env.package_dir), str(a), str(b)],
                              capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"v1 conversion check failed: {proc.stderr.strip()[-500:]}")


def spec_meta() -> dict[str, dict]:
    """Settings of every sample (from SAMPLES, the source of truth), keyed by file name stem."""
    meta: dict[str, dict] = {}
    for rec in ALL:
        package, version = PI_PACKAGES[rec.pi]
        d = asdict(rec)
        d.pop("name")
        if rec.tokenizer != "ratio":  # the ratio fields do not describe a content-dependent tokenizer
            d.pop("ratio")
            d.pop("cjk")
        meta[rec.name] = {**d, "pi_package": package, "pi_version": version}
    meta[V1[0]] = {**meta[V1[1]], "shows": f"legacy v1 format: {V1[1]}.jsonl converted by lab/to_v1.py"}
    return meta


def write_manifest(out: Path, meta: dict[str, dict]) -> str:
    """Write MANIFEST.md and manifest.json for every described file that exists in ``out``."""
    rows = []
    facts_all = {}
    for name in sorted(meta):
        path = out / f"{name}.jsonl"
        if not path.exists():
            continue
        f = analyze(path)
        facts_all[name] = {**meta[name], "facts": f.as_dict()}
        m = meta[name]
        shows = [f"{f.compactions} compactions ({f.threshold_compactions} threshold, {f.overflow_compactions} overflow"
                 + (f", {f.split_turn_compactions} split-turn" if f.split_turn_compactions else "") + ")"]
        if f.overflow_errors:
            shows.append(f"{f.overflow_errors} overflow errors")
        if f.branch_summaries or f.leaves > 1:
            shows.append(f"{f.leaves} leaves, {f.branch_summaries} branch summaries")
        shows.append(f"{f.prompts} prompts, {f.tool_calls} tool calls")
        if f.cjk_share >= 0.1:
            shows.append(f"CJK share {f.cjk_share:.0%}")
        shows.append(f"output tokens / chars/4 = {f.output_vs_chars4}")
        shows += _rough_shows(m, f)
        rows.append(
            f"| `{name}.jsonl` | {m['pi_package']}@{m['pi_version']} | {m['window']} | {m['reserve']} | {m['keep']} "
            f"| {m['seed']} | {m.get('ratio', m['tokenizer'])} | {m['profile']} | {f.bytes / 1024:.0f} KiB "
            f"| {m['shows']}; " + "; ".join(shows) + " |"
        )
    total = sum((out / f"{n}.jsonl").stat().st_size for n in facts_all)
    text = MANIFEST_HEAD + "\n".join(rows) + "\n\n" + f"Total size: {total / 1024:.0f} KiB.\n" + MANIFEST_TAIL
    (out / "MANIFEST.md").write_text(text, encoding="utf-8")
    (out / "manifest.json").write_text(json.dumps(facts_all, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return text


def _rough_shows(m: dict, f) -> list[str]:
    out = []
    if m.get("overhead", [0, 0]) != [0, 0]:
        lo, hi = m["overhead"]
        out.append(f"hidden overhead {lo}-{hi} tokens per request (changes every {m['overhead_bucket']} requests)")
    if f.pseudo_replies:
        out.append(f"{f.model_replies} model replies, {f.pseudo_replies} pseudo-replies "
                   + "(" + ", ".join(f"{k} x{v}" for k, v in f.pseudo_models.items()) + ")")
    if f.max_overflows_in_run >= 2:
        out.append(f"overflows per run {f.overflows_per_run}, recoveries per run {f.overflow_recoveries_per_run}")
    if m.get("sdk"):
        out.append("recorded through Pi's SDK (lab/sdk_run.mjs)")
    return out


MANIFEST_HEAD = """# Sample sessions

Written by the real Pi CLI (print mode `-p`, `-c` to continue; branches through Pi's SDK) against
the scripted lab model server in `lab/`. Regenerate with `make samples` (`python -m lab.generate
--out sample_sessions`); see `lab/README.md`. This table and `manifest.json` are generated from the
files by `lab/generate.py` (`lab/manifest.py`), not written by hand.

Columns: window = model `contextWindow` in models.json (and the server's limit), reserve/keep =
`compaction.reserveTokens`/`keepRecentTokens` in settings.json, seed = workload seed, ratio =
pseudo-tokenizer characters per token for non-CJK text (CJK: 1 token per character), or `rough` for
the content-dependent tokenizer of `lab/rough.py` (o200k with per-class weights, see lab/README.md).

| file | Pi | window | reserve | keep | seed | ratio | profile | size | what it shows |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
"""

MANIFEST_TAIL = """
What varies between two runs of `make samples` (everything else is byte-for-byte identical):

* the session id and file header timestamp, every entry `id` (random 8-hex ids; `parentId` and
  `firstKeptEntryId`/`fromId` follow them), every `timestamp` (ISO entry time and the millisecond
  `message.timestamp`), and in 1.x files the `durationMs` of assistant messages;
* the absolute path of the Pi install, which 1.x writes into the system-prompt message it stores
  (`sections.docs`) and into each compaction's `systemMessage`; the workspace path (`cwd`) is fixed
  at `$TMPDIR/sessiontools-lab/<name>/workspace`.

Usage numbers, tool calls, tool results and summaries do not vary: the server normalises the
workspace path, Pi's install path and the date in the system prompt before counting tokens.
`v1-tiny.jsonl` is `pi0-tiny.jsonl` converted by `lab/to_v1.py` (current Pi no longer writes v1);
Pi's own `SessionManager` loads it back to the same context.
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("sample_sessions"))
    ap.add_argument("--only", action="append", default=[], help="sample name(s), comma-separated")
    ap.add_argument("--quick", action="store_true", help="only the tiny sample and its v1 conversion")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--check", action="store_true", help="only re-analyse files already in --out")
    ap.add_argument("--workroot", type=Path, default=None, help="work directory (default $TMPDIR/sessiontools-lab)")
    ap.add_argument("--keep-work", action="store_true", help="keep each recording's workspace/agent dir/sessions")
    args = ap.parse_args(argv)

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    wanted = {n for item in args.only for n in item.split(",") if n}
    if args.quick:
        wanted |= set(QUICK)
    names = {s.name for s in ALL} | {V1[0]}
    unknown = wanted - names
    if unknown:
        ap.error(f"unknown sample(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(names))}")
    if V1[0] in wanted:
        wanted.add(V1[1])
    todo = [s for s in ALL if not wanted or s.name in wanted]

    meta = spec_meta()
    t0 = time.monotonic()
    failures: list[str] = []
    if not args.check:
        for major in {s.pi for s in todo}:
            ensure_pi(major)

        def run(rec: Recording):
            t = time.monotonic()
            print(f"recording {rec.name} (pi {rec.pi}, {rec.total_prompts} prompts) ...", flush=True)
            res = record(rec, out / f"{rec.name}.jsonl", workroot=args.workroot, keep_work=args.keep_work)
            print(f"  {rec.name}: {time.monotonic() - t:.0f}s", flush=True)
            return res

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(run, todo))
        for res in results:
            failed_runs = [r for r in res.runs if r.returncode != 0]
            if failed_runs:
                print(f"  note: {res.recording.name}: {len(failed_runs)} pi runs exited non-zero", flush=True)
        if any(s.name == V1[1] for s in todo):
            src = out / f"{V1[1]}.jsonl"
            dst = out / f"{V1[0]}.jsonl"
            convert_file(src, dst)
            _verify_v1(dst, src)

    for name in sorted(meta):
        path = out / f"{name}.jsonl"
        if path.exists() and name != V1[0]:
            for p in _expectations(name, analyze(path)):
                failures.append(f"{name}: {p}")
    for a, b in PAIRS:
        pa, pb = out / f"{a}.jsonl", out / f"{b}.jsonl"
        if pa.exists() and pb.exists() and workload_signature(pa) != workload_signature(pb):
            failures.append(f"{a} / {b}: workloads differ")
    text = write_manifest(out, meta)
    print(text)
    print(f"done in {time.monotonic() - t0:.0f}s")
    if failures:
        print("\nFAILED EXPECTATIONS:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
