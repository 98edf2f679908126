"""Claude Code figures per CLI version, over a folder of real transcripts (a copy of `~/.claude/projects`).

    python -m lab.claude_versions DIR [--no-ccusage] [--files] [--json OUT.json]

For every Claude Code session file below DIR (`*.jsonl`, not a subagent file: `<session>/subagents/`
files are read with their session, and `agent-*.jsonl` sidechain files of the 1.x releases are left
out, as ccusage's session view groups them under their parent), grouped by the CLI version the file
records last:

- **read**: files the reader loaded as Claude Code transcripts (bad lines are diagnostics); **with
  messages**: those with a conversation (the others hold metadata lines only: summaries, snapshots);
- **auto / manual**: the recorded compactions on the path replay walks (trigger `auto` -> threshold
  (not one the path starts with: copied from the session it resumed, before the recording)
  or overflow, `manual`);
- **reproduced / extra**: `replay` at default settings (the file's own version's rule, the window the
  CLI assumed for the model, the default policy) — `recorded_match.matched` and `.extra`;
- **manual applied**: the user compactions the replay applied (`metrics.user_compactions`);
- **usage = ccusage**: files whose input / output / cache read / cache write totals (`inspect`) equal
  ccusage 20.0.24's (`lab.ccusage_env`, `--offline`, on that session alone: its file and subagent
  files hard-linked into a fresh `CLAUDE_CONFIG_DIR/projects/`); of the files with usage;
- **cost within 2%**: files with |ours / ccusage - 1| <= 0.02, of those priced by both; **priced by
  ccusage only**: files ccusage prices and the catalogue does not (their models).

Nothing is written below DIR; the temporary config dirs live under the system temp dir. `--files`
adds one row per file with a recorded compaction (recorded trigger:tokens before; ours). The output
is Markdown on stdout; `--json` writes the per-file records too. Nothing real is committed: point it
at a folder under /tmp.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from sessiontools.analysis.inspect import inspect_source
from sessiontools.policies.version import parse_version
from sessiontools.read.claude_code import looks_like_claude_code
from sessiontools.read.sources import expand_sources, load_source
from sessiontools.replay.session import run_record
from sessiontools.replay.transcripts import replay_transcript
from sessiontools.transcript.load import transcript_of
from sessiontools.transcript.model import Trigger

COST_TOLERANCE = 0.02
CLASSES = ("input", "output", "cache_read", "cache_write")


def session_files(root: Path) -> list[Path]:
    """The Claude Code session files below `root` (not subagent or 1.x `agent-*` sidechain files)."""
    out = []
    for f in map(Path, expand_sources([root])):
        if f.parent.name == "subagents" or f.name.startswith("agent-"):
            continue
        try:
            with open(f, "rb") as fh:
                head = fh.read(1 << 16)
        except OSError:
            continue
        if looks_like_claude_code(head):
            out.append(f)
    return out


def _link(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)  # ccusage skips symlinks
    except OSError:
        shutil.copyfile(src, dest)


def ccusage_totals(file: Path, env: Any) -> dict[str, Any] | None:
    """ccusage's totals for one session (its file and subagent files alone), or None when it lists none."""
    from lab.ccusage_env import run_ccusage

    with tempfile.TemporaryDirectory(prefix="claude-versions-") as tmp:
        home = Path(tmp)
        proj = home / "projects" / "-p"
        _link(file, proj / file.name)
        subs = file.with_suffix("") / "subagents"
        if subs.is_dir():
            for s in sorted(subs.glob("*.jsonl")):
                _link(s, proj / file.stem / "subagents" / s.name)
        doc = run_ccusage("claude", home, env=env)
    sessions = doc.get("sessions") or []
    if not sessions:
        return None
    tot = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "cost": 0.0}
    for s in sessions:
        tot["input"] += s["inputTokens"]
        tot["output"] += s["outputTokens"]
        tot["cache_read"] += s["cacheReadTokens"]
        tot["cache_write"] += s["cacheCreationTokens"]
        tot["cost"] += s.get("totalCost") or 0.0
    return tot


def file_record(file: Path, env: Any | None) -> dict[str, Any]:
    """What one file gives: version, read, recorded compactions, replay at defaults, usage, cost, peer."""
    rec: dict[str, Any] = {"file": str(file), "version": None, "read": False}
    try:
        src = load_source(file)
        t = transcript_of(src)
    except Exception as exc:  # noqa: BLE001 - a lab survey: report the file and go on
        rec["error"] = f"{type(exc).__name__}: {exc}"
        return rec
    v = t.settings.get("version")
    rec["version"] = v if isinstance(v, str) else None
    rec["read"] = True  # loaded (bad lines are diagnostics); a file of metadata lines only has no conversation
    rec["conversation"] = t.main is not None and bool(t.main.messages)
    if not rec["conversation"]:
        return rec
    main = t.main
    rec["recorded"] = [[c.trigger.value, c.tokens_before] for c in main.compactions]
    # a compaction the path starts with (copied from the session it resumed) happened before the
    # recording: replay has nothing to match there (`recorded_match`), so it is not counted either
    rec["auto"] = sum(c.trigger in (Trigger.THRESHOLD, Trigger.OVERFLOW) and c.index > 0 for c in main.compactions)
    rec["manual"] = sum(c.trigger == Trigger.MANUAL for c in main.compactions)
    if main.requests:
        (run,) = [run_record(tr, r) for tr in replay_transcript(t, windows=None, reserves=[0], keeps=[0],
                                                                  policy=None)[:1] for r in tr.runs[:1]]
        rec["policy"] = run["settings"]["policy"]
        rec["threshold"] = run["settings"]["threshold"]
        rec["match"] = run["recorded_match"]
        rec["user_applied"] = run["metrics"]["user_compactions"]
        rec["ours"] = [[c["reason"], c["tokens_before"]] for c in run["compactions"]]
    ins = inspect_source(src)
    rec["usage"] = {k: ins["usage"][k] for k in CLASSES}
    rec["cost"], rec["cost_source"] = ins.get("cost"), ins.get("cost_source")
    if env is not None:
        rec["peer"] = ccusage_totals(file, env)
    return rec


def _has_usage(r: dict[str, Any]) -> bool:
    return any((r.get("usage") or {}).get(k) for k in CLASSES)


def version_rows(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per CLI version (ascending; unknown last) and a total row."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in recs:
        groups[r.get("version") or "?"].append(r)

    def key(v: str) -> tuple[int, tuple[int, ...]]:
        p = parse_version(v)
        return (0, p) if p is not None else (1, ())

    rows = [_row(v, groups[v]) for v in sorted(groups, key=key)]
    rows.append(_row("all", recs))
    return rows


def _row(version: str, recs: list[dict[str, Any]]) -> dict[str, Any]:
    read = [r for r in recs if r.get("conversation")]
    usage = [r for r in read if _has_usage(r)]
    peered = [r for r in usage if r.get("peer") is not None]
    equal = [r for r in peered if all(r["usage"][k] == r["peer"][k] for k in CLASSES)]
    priced = [r for r in peered if r["peer"]["cost"] > 0 and r.get("cost")]  # priced by both
    peer_only = [r for r in peered if r["peer"]["cost"] > 0 and not r.get("cost")]
    close = [r for r in priced if abs(r["cost"] / r["peer"]["cost"] - 1) <= COST_TOLERANCE]
    m = [r["match"] for r in read if r.get("match")]
    return {"version": version, "files": len(recs), "read": sum(bool(r.get("read")) for r in recs),
            "conversations": len(read),
            "auto": sum(r.get("auto", 0) for r in read), "manual": sum(r.get("manual", 0) for r in read),
            "reproduced": sum(x["matched"] for x in m), "extra": sum(x["extra"] for x in m),
            "manual_applied": sum(min(r.get("user_applied", 0), r.get("manual", 0)) for r in read),
            "with_usage": len(usage), "peered": len(peered), "usage_equal": len(equal),
            "priced": len(priced), "cost_within_2pct": len(close), "priced_by_ccusage_only": len(peer_only)}


def markdown(rows: list[dict[str, Any]], peer: bool) -> str:
    head = ["version", "files read", "with messages", "auto", "manual", "reproduced", "extra", "manual applied"]
    if peer:
        head += ["usage = ccusage", "cost within 2%", "priced by ccusage only"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["version"], f"{r['read']}/{r['files']}", r["conversations"], r["auto"], r["manual"],
                 f"{r['reproduced']}/{r['auto']}", r["extra"], f"{r['manual_applied']}/{r['manual']}"]
        if peer:
            cells += [f"{r['usage_equal']}/{r['peered']}", f"{r['cost_within_2pct']}/{r['priced']}",
                      r["priced_by_ccusage_only"]]
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(out)


def files_markdown(recs: list[dict[str, Any]], root: Path) -> str:
    out = ["| file | version | policy | recorded (trigger:tokens before) | ours | matched/extra |", "|---|---|---|---|---|---|"]
    for r in recs:
        if not r.get("recorded"):
            continue
        rel = os.path.relpath(r["file"], root)
        m = r.get("match") or {}
        out.append(f"| {rel} | {r['version']} | {r.get('policy')} | "
                   + ", ".join(f"{a}:{b}" for a, b in r["recorded"]) + " | "
                   + ", ".join(f"{a}:{b}" for a, b in r.get("ours", [])) + f" | {m.get('matched')}/{m.get('extra')} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.claude_versions", description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--no-ccusage", action="store_true", help="skip the comparison with ccusage")
    ap.add_argument("--files", action="store_true", help="one row per file with a recorded compaction")
    ap.add_argument("--json", type=Path, help="write every file's record here")
    a = ap.parse_args(argv)
    if not a.dir.is_dir():
        print(f"error: {a.dir}: not a directory", file=sys.stderr)
        return 2
    env = None
    if not a.no_ccusage:
        from lab.ccusage_env import CcusageUnavailable, ensure_ccusage

        try:
            env = ensure_ccusage()
        except CcusageUnavailable as exc:
            print(f"error: {exc} (--no-ccusage to go without)", file=sys.stderr)
            return 3
    files = session_files(a.dir)
    recs = []
    for n, f in enumerate(files, 1):
        recs.append(file_record(f, env))
        if n % 50 == 0:
            print(f"{n}/{len(files)} files", file=sys.stderr)
    print(markdown(version_rows(recs), env is not None))
    if a.files:
        print()
        print(files_markdown(recs, a.dir))
    if a.json:
        tmp = a.json.with_name(a.json.name + ".tmp")
        tmp.write_text(json.dumps({"schema_version": 1, "files": recs}, indent=1) + "\n")
        os.replace(tmp, a.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
