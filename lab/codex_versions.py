"""Figures per Codex CLI version over a folder of rollouts: the table the issue 25 note asks for.

``python -m lab.codex_versions DIR [--manifest sample_sessions/codex/manifest.json] [--ccusage]``

For every rollout under DIR (``rollout-*.jsonl`` or any ``*.jsonl`` Codex file), grouped by the
``session_meta.cli_version`` it records:

* **files**, **compactions** recorded (``TranscriptPath.compactions``; automatic = trigger ``threshold``
  and not the user's by the release's check points, ``CodexPolicy.user_compactions``);
* **manual applied**: the others (the user's ``/compact``), applied where recorded by the replay;
* **reproduced** / **extra**: ``replay --policy codex`` at the recorded settings with the rule of the
  file's version (``policies.codex_rules``): the configured window (reported / 0.95) and the explicit
  ``model_auto_compact_token_limit`` when ``--manifest`` gives it for the file (the rollout does not
  record it; real rollouts: Codex's default), counted by ``ReplayRun.recorded_match``;
* with ``--ccusage`` (``lab.ccusage_env``, ccusage 20.0.24 from npm): **usage =** files whose four
  token classes equal ``ccusage codex session``'s for that file alone, and **priced 2%** files whose cost
  is within 2% of ccusage's, of the files either prices (``--as-model M``: of a copy renamed to model M,
  provider ``openai``, for lab files whose ``lab-model`` has no price).

Markdown on stdout (``--json`` for the numbers). Nothing is written; the files are only read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sessiontools.errors import InputError
from sessiontools.replay.records import CompactionReason
from sessiontools.replay.transcripts import replay_transcript
from sessiontools.transcript.load import load_transcript
from sessiontools.transcript.model import Trigger


@dataclass
class VersionRow:
    version: str
    files: int = 0
    compactions: int = 0
    automatic: int = 0
    manual_applied: int = 0
    reproduced: int = 0
    extra: int = 0
    usage_compared: int = 0
    usage_equal: int = 0
    priced: int = 0
    priced_within_2pct: int = 0
    not_replayed: int = 0
    names: list[str] = field(default_factory=list)


def _limit(manifest: dict[str, Any], path: Path) -> int | None:
    spec = (manifest.get(path.stem) or {}).get("spec") or {}
    lim = spec.get("auto_compact_limit")
    return int(lim) if lim else None


def _as_model(raw: bytes, model: str) -> bytes:
    """The rollout with every turn's model renamed and the provider `openai` (lab files record `lab`)."""
    out = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        o = json.loads(line)
        pay = o.get("payload") if isinstance(o, dict) else None
        if isinstance(pay, dict) and o.get("type") == "turn_context" and pay.get("model"):
            pay["model"] = model
        if isinstance(pay, dict) and o.get("type") == "session_meta":
            pay["model_provider"] = "openai"
        out.append(json.dumps(o, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")
    return b"".join(out)


def _ccusage_one(env: Any, path: Path, model: str | None) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(ours, ccusage's) for the file alone (renamed to `model` when given), or None."""
    from lab.ccusage_env import run_ccusage
    from sessiontools.analysis.inspect import inspect_source
    from sessiontools.read.sources import load_source

    with tempfile.TemporaryDirectory() as home:
        day = Path(home) / "sessions" / "2026" / "01" / "01"
        day.mkdir(parents=True)
        dest = day / f"rollout-2026-01-01T00-00-00-{path.stem}.jsonl"
        if model:
            dest.write_bytes(_as_model(path.read_bytes(), model))
        else:
            try:
                os.link(path, dest)
            except OSError:  # another file system: a copy in the temporary home
                dest.write_bytes(path.read_bytes())
        doc = run_ccusage("codex", Path(home), env=env)
        ours = inspect_source(load_source(dest))
    sessions = doc.get("sessions") or []
    return (ours, sessions[0]) if len(sessions) == 1 else None


def measure(folder: Path, manifest: dict[str, Any], ccusage: Any = None, model: str | None = None) -> list[VersionRow]:
    rows: dict[str, VersionRow] = {}
    files = sorted(p for p in folder.rglob("*.jsonl") if p.is_file())
    for path in files:
        try:
            t = load_transcript(path)
        except Exception as exc:  # noqa: BLE001 - a lab script: say which file and go on
            print(f"{path}: not read: {exc}", file=sys.stderr)
            continue
        if t.agent.value != "codex" or t.main is None:
            continue
        version = str(t.settings.get("cli_version") or "unknown")
        row = rows.setdefault(version, VersionRow(version))
        row.files += 1
        row.names.append(path.name)
        comps = t.main.compactions
        row.compactions += len(comps)
        automatic = sum(1 for c in comps if c.trigger == Trigger.THRESHOLD)
        lim = _limit(manifest, path)
        try:
            trs = replay_transcript(t, windows=None, reserves=[0], keeps=[0], policy=None,
                                    limits=[lim] if lim is not None else None)
        except InputError as exc:  # no window to replay at (no request, no model): counted, not replayed
            print(f"{path}: not replayed: {exc}", file=sys.stderr)
            row.not_replayed += 1
            trs = []
        for tr in trs:
            for run in tr.runs:
                row.reproduced += run.recorded_match.matched
                row.extra += run.recorded_match.extra
                automatic = run.recorded_match.recorded  # the user's by the rule's check points excluded
                row.manual_applied += sum(1 for c in run.compactions if c.reason == CompactionReason.USER)
        row.automatic += automatic
        if ccusage is not None:
            both = _ccusage_one(ccusage, path, model)
            if both is not None:
                ours, peer = both
                row.usage_compared += 1
                mine = ours["usage"]
                theirs = {"input": peer["inputTokens"], "output": peer["outputTokens"],
                          "cache_read": peer["cacheReadTokens"], "cache_write": peer["cacheCreationTokens"]}
                row.usage_equal += mine == theirs
                cost, peer_cost = ours.get("cost"), float(peer.get("costUSD") or 0.0)
                if cost or peer_cost:
                    row.priced += 1
                    row.priced_within_2pct += bool(cost and peer_cost and abs(cost - peer_cost) <= 0.02 * peer_cost)
    return sorted(rows.values(), key=lambda r: _vkey(r.version))


def _vkey(v: str) -> tuple[int, ...]:
    from sessiontools.policies.version import parse_version

    return parse_version(v) or (10**6,)


def markdown(rows: list[VersionRow], with_ccusage: bool) -> str:
    head = "| CLI version | files | compactions (automatic) | reproduced | extra | manual applied |"
    sep = "| --- | --- | --- | --- | --- | --- |"
    if with_ccusage:
        head += " usage = ccusage | priced within 2% |"
        sep += " --- | --- |"
    out = [head, sep]
    for r in rows:
        line = (f"| {r.version} | {r.files} | {r.compactions} ({r.automatic}) | {r.reproduced} | {r.extra} | "
                f"{r.manual_applied}/{r.compactions - r.automatic} |")
        if with_ccusage:
            line += f" {r.usage_equal}/{r.usage_compared} | {r.priced_within_2pct}/{r.priced} |"
        out.append(line)
    fields = ("files", "compactions", "automatic", "manual_applied", "reproduced", "extra", "usage_compared",
              "usage_equal", "priced", "priced_within_2pct")
    tot = VersionRow("all", **{f: sum(getattr(r, f) for r in rows) for f in fields})
    line = (f"| **all** | {tot.files} | {tot.compactions} ({tot.automatic}) | {tot.reproduced} | {tot.extra} | "
            f"{tot.manual_applied}/{tot.compactions - tot.automatic} |")
    if with_ccusage:
        line += f" {tot.usage_equal}/{tot.usage_compared} | {tot.priced_within_2pct}/{tot.priced} |"
    out.append(line)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--manifest", type=Path, help="a lab manifest.json giving each sample's explicit limit")
    ap.add_argument("--ccusage", action="store_true", help="compare usage and cost with ccusage 20.0.24")
    ap.add_argument("--as-model", help="with --ccusage: compare a copy of each file renamed to this model "
                    "(provider openai), for lab files whose own model has no price")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    manifest = json.loads(args.manifest.read_text()) if args.manifest else {}
    env = None
    if args.ccusage:
        from lab.ccusage_env import CcusageUnavailable, ensure_ccusage

        try:
            env = ensure_ccusage()
        except CcusageUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    rows = measure(args.folder, manifest, env, args.as_model)
    if args.json:
        print(json.dumps([{k: v for k, v in r.__dict__.items() if k != "names"} for r in rows], indent=2))
    else:
        print(markdown(rows, env is not None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
