"""Record a session with the real Pi CLI against the lab model server.

``record(Recording(...), out_path)``:

1. builds the seeded workload (fixture files + per-prompt script) and writes the workspace into
   ``<workroot>/<name>/workspace`` (default workroot: ``$TMPDIR/sessiontools-lab``, a fixed path so
   that the ``cwd`` Pi stores in the session header is the same on every run);
2. starts ``lab.server.LabServer`` on 127.0.0.1 (port 0) with the recording's window and
   pseudo-tokenizer;
3. writes ``models.json`` (custom ``openai-completions`` provider ``lab``, model ``lab-model`` with
   ``contextWindow = window``) and ``settings.json`` (default provider/model, compaction
   ``enabled``/``reserveTokens``/``keepRecentTokens``) into a fresh ``PI_CODING_AGENT_DIR``;
4. runs ``node cli.js -p [-c] --session-dir <dir> <prompt>`` once per prompt (``-c`` from the
   second prompt on) with ``PI_OFFLINE=1``, ``HOME`` in the work dir, ``LC_ALL=C`` and ``TZ=UTC``;
5. optionally branches the file in place with ``lab/branch.mjs`` (Pi's SDK: ``navigateTree`` with
   ``summarize``, then more prompts);
   With ``sdk=True`` every prompt is instead one agent run in ``lab/sdk_run.mjs`` (Pi's SDK, the way
   a harness embeds Pi), which persists overflow retries; ``pseudo`` appends harness-written
   assistant messages (zero usage, e.g. model ``delivery-mirror``) after the given prompts with
   Pi's ``SessionManager.appendMessage``;
6. copies the one ``.jsonl`` Pi wrote to ``out_path``, stops the server and removes the work
   directory (kept with ``keep_work=True`` or when a step fails, for debugging).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from lab.pi_env import PiEnv, ensure_pi
from lab.rough import HiddenOverhead, RoughTokenizer
from lab.server import LabServer, RequestLog, ServerConfig
from lab.tokenizer import PseudoTokenizer
from lab.workload import build_workload

LAB_DIR = Path(__file__).resolve().parent
DEFAULT_WORKROOT = Path(tempfile.gettempdir()) / "sessiontools-lab"
PI_FLAGS = ["--no-extensions", "--no-skills", "--no-prompt-templates", "--no-context-files"]


@dataclass(frozen=True)
class Branch:
    """Navigate back to the user message of prompt ``at`` (with a branch summary), then run prompts."""

    at: int
    prompts: int
    summarize: bool = True


@dataclass(frozen=True)
class Pseudo:
    """A harness-written assistant message appended after prompt ``after`` (never a model request)."""

    after: int
    model: str  # e.g. "delivery-mirror", "gateway-injected"
    text: str  # "{final}" is replaced by that prompt's final answer (a mirrored delivery repeats it)
    provider: str = "openclaw"
    api: str = "openai-responses"


@dataclass(frozen=True)
class Recording:
    name: str
    pi: str  # "0" or "1"
    seed: int
    prompts: int
    profile: str = "mixed"
    window: int = 24000
    reserve: int = 4000
    keep: int = 6000
    ratio: float = 3.2  # chars per token (non-CJK)
    cjk: float = 1.0  # tokens per CJK character
    enabled: bool = True  # compaction.enabled
    branches: tuple[Branch, ...] = ()
    shows: str = ""
    tokenizer: str = "ratio"  # "ratio" (PseudoTokenizer(ratio, cjk)) or "rough" (lab.rough.RoughTokenizer)
    overhead: tuple[int, int] = (0, 0)  # hidden provider tokens per request, range (lab.rough.HiddenOverhead)
    overhead_bucket: int = 4  # the overhead changes every this many agent requests
    sdk: bool = False  # run every prompt through Pi's SDK (lab/sdk_run.mjs) instead of print mode
    pseudo: tuple[Pseudo, ...] = ()

    def make_tokenizer(self) -> PseudoTokenizer | RoughTokenizer:
        if self.tokenizer == "rough":
            return RoughTokenizer()
        if self.tokenizer != "ratio":
            raise ValueError(f"unknown lab tokenizer {self.tokenizer!r} (ratio or rough)")
        return PseudoTokenizer(self.ratio, self.cjk)

    def make_overhead(self) -> HiddenOverhead:
        return HiddenOverhead(self.overhead[0], self.overhead[1], self.overhead_bucket, self.seed)

    @property
    def total_prompts(self) -> int:
        return self.prompts + sum(b.prompts for b in self.branches)


@dataclass
class RunResult:
    prompt: int
    returncode: int
    seconds: float
    stderr: str


@dataclass
class RecordResult:
    recording: Recording
    path: Path
    seconds: float
    runs: list[RunResult] = field(default_factory=list)
    requests: list[RequestLog] = field(default_factory=list)
    branch_output: str = ""


def models_json(base_url: str, window: int) -> dict:
    return {
        "providers": {
            "lab": {
                "baseUrl": base_url,
                "api": "openai-completions",
                "apiKey": "lab-local-key",
                "compat": {
                    "supportsDeveloperRole": False,
                    "supportsReasoningEffort": False,
                    "supportsStore": False,
                    "supportsUsageInStreaming": True,
                    "maxTokensField": "max_tokens",
                },
                "models": [
                    {
                        "id": "lab-model",
                        "name": "Lab Model",
                        "reasoning": False,
                        "input": ["text"],
                        "contextWindow": window,
                        "maxTokens": 4096,
                        "cost": {"input": 1.0, "output": 4.0, "cacheRead": 0.1, "cacheWrite": 0},
                    }
                ],
            }
        }
    }


def settings_json(rec: Recording) -> dict:
    return {
        "defaultProvider": "lab",
        "defaultModel": "lab-model",
        "defaultThinkingLevel": "off",
        "quietStartup": True,
        "compaction": {"enabled": rec.enabled, "reserveTokens": rec.reserve, "keepRecentTokens": rec.keep},
    }


def pi_environment(work: Path, agent_dir: Path, env: PiEnv) -> dict[str, str]:
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": f"{env.node.parent}{os.pathsep}/usr/local/bin{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(home),
        "TMPDIR": str(work / "tmp"),
        "LC_ALL": "C",
        "LANG": "C",
        "TZ": "UTC",
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "PI_OFFLINE": "1",
        "PI_TELEMETRY": "0",
        "NO_COLOR": "1",
    }


def record(rec: Recording, out_path: Path, *, workroot: Path | None = None, log=print,
           timeout: float = 300, keep_work: bool = False) -> RecordResult:
    """Record ``rec`` with the real Pi CLI and copy the session file to ``out_path``.

    The work directory is deleted afterwards unless ``keep_work`` (or the recording failed).
    """
    env = ensure_pi(rec.pi)
    work = (workroot or DEFAULT_WORKROOT) / rec.name
    shutil.rmtree(work, ignore_errors=True)
    workspace, agent_dir, sessions = work / "workspace", work / "agent", work / "sessions"
    for d in (workspace, agent_dir, sessions, work / "tmp"):
        d.mkdir(parents=True)
    workload = build_workload(rec.seed, rec.total_prompts, rec.profile)
    workload.write_workspace(workspace)
    config = ServerConfig(
        workload=workload,
        window=rec.window,
        tokenizer=rec.make_tokenizer(),
        overhead=rec.make_overhead(),
        normalize=[(str(workspace), "/workspace"), (str(env.package_dir), "/pi")],
    )
    t0 = time.monotonic()
    result = RecordResult(rec, out_path, 0.0)
    with LabServer(config) as server:
        (agent_dir / "models.json").write_text(json.dumps(models_json(server.base_url, rec.window), indent=2))
        (agent_dir / "settings.json").write_text(json.dumps(settings_json(rec), indent=2))
        run_env = pi_environment(work, agent_dir, env)
        if rec.sdk:
            result.branch_output = _run_sdk(rec, workload, env, None, sessions, workspace, agent_dir, run_env,
                                            work, timeout, range(rec.prompts))
        for i in range(0 if rec.sdk else rec.prompts):
            cmd = [str(env.node), str(env.cli), "-p", "--session-dir", str(sessions), *PI_FLAGS]
            if i > 0:
                cmd.append("-c")
            cmd.append(workload.prompts[i].prompt)
            t1 = time.monotonic()
            proc = subprocess.run(cmd, cwd=workspace, env=run_env, capture_output=True, text=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL)
            result.runs.append(RunResult(i, proc.returncode, time.monotonic() - t1, proc.stderr.strip()[-500:]))
            if proc.returncode != 0:
                log(f"  [{rec.name}] prompt {i}: pi exited {proc.returncode}: {proc.stderr.strip()[-200:]}")
            if any(p.after == i for p in rec.pseudo):
                result.branch_output += _run_sdk(rec, workload, env, _session_file(sessions), sessions, workspace,
                                                 agent_dir, run_env, work, timeout, [], pseudo_after=i)
        session_file = _session_file(sessions)
        if rec.branches:
            result.branch_output = _run_branches(rec, workload, env, session_file, workspace, agent_dir, run_env,
                                                 work, timeout)
        result.requests = list(server.model.log)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(session_file, out_path)
    result.seconds = time.monotonic() - t0
    if not keep_work:
        shutil.rmtree(work, ignore_errors=True)
    return result


def _session_file(sessions: Path) -> Path:
    files = sorted(sessions.rglob("*.jsonl"))
    if len(files) != 1:
        raise RuntimeError(f"expected exactly one session file in {sessions}, found {len(files)}")
    return files[0]


def _run_branches(rec: Recording, workload, env: PiEnv, session_file: Path, workspace: Path, agent_dir: Path,
                  run_env: dict[str, str], work: Path, timeout: float) -> str:
    actions: list[dict] = []
    nxt = rec.prompts
    for b in rec.branches:
        actions.append({"navigate": workload.prompts[b.at].prompt, "summarize": b.summarize})
        for _ in range(b.prompts):
            actions.append({"prompt": workload.prompts[nxt].prompt})
            nxt += 1
    spec = {
        "packageDir": str(env.package_dir),
        "sessionFile": str(session_file),
        "cwd": str(workspace),
        "agentDir": str(agent_dir),
        "actions": actions,
    }
    spec_path = work / "branch-spec.json"
    spec_path.write_text(json.dumps(spec, indent=2, ensure_ascii=False))
    proc = subprocess.run([str(env.node), str(LAB_DIR / "branch.mjs"), str(spec_path)], cwd=workspace,
                          env=run_env, capture_output=True, text=True, timeout=timeout * max(1, len(actions)),
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise RuntimeError(f"branch.mjs failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return proc.stdout


def _run_sdk(rec: Recording, workload, env: PiEnv, session_file: Path | None, sessions: Path, workspace: Path,
             agent_dir: Path, run_env: dict[str, str], work: Path, timeout: float, prompts,
             pseudo_after: int | None = None) -> str:
    """Run prompts and pseudo-replies through lab/sdk_run.mjs (Pi's SDK) in one Node process."""
    actions: list[dict] = []

    def pseudo(after: int) -> None:
        for p in rec.pseudo:
            if p.after == after:
                text = p.text.replace("{final}", workload.prompts[p.after].final)
                actions.append({"pseudo": {"provider": p.provider, "model": p.model, "api": p.api, "text": text}})

    if pseudo_after is not None:
        pseudo(pseudo_after)
    for i in prompts:
        actions.append({"prompt": workload.prompts[i].prompt})
        pseudo(i)
    spec = {"packageDir": str(env.package_dir), "sessionFile": str(session_file) if session_file else None,
            "sessionDir": str(sessions), "cwd": str(workspace), "agentDir": str(agent_dir), "actions": actions}
    spec_path = work / "sdk-spec.json"
    spec_path.write_text(json.dumps(spec, indent=2, ensure_ascii=False))
    proc = subprocess.run([str(env.node), str(LAB_DIR / "sdk_run.mjs"), str(spec_path)], cwd=workspace,
                          env=run_env, capture_output=True, text=True, timeout=timeout * max(1, len(actions)),
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise RuntimeError(f"sdk_run.mjs failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return proc.stdout
