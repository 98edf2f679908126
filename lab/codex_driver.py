"""Record a rollout with the real Codex CLI (0.171.0) against the lab server, offline.

``record(CodexRecording(...), out_path)``:

1. work dir ``$TMPDIR/sessiontools-lab/<name>/`` (deleted first; a fixed path so the ``cwd`` Codex
   stores is the same on every run): ``workspace/`` (the seeded fixture files), ``home/`` (``HOME``),
   ``home/.codex/`` (``CODEX_HOME``) with ``config.toml``, ``tmp/``;
2. starts ``lab.server.LabServer`` (its ``/v1/responses`` route is ``lab.responses_api``) with the
   recording's server window;
3. ``config.toml``: ``model = "lab-model"``, ``model_provider = "lab"``, ``approval_policy = "never"``,
   ``sandbox_mode = "danger-full-access"``, ``model_context_window``, ``model_auto_compact_token_limit``
   (when set) and ``[model_providers.lab]`` with ``base_url = "http://127.0.0.1:PORT/v1"``,
   ``wire_api = "responses"``, ``env_key = "LAB_API_KEY"``;
4. runs ``codex exec --skip-git-repo-check -c analytics.enabled=false -c features.plugins=false
   "<prompt 1>"``, then ``codex exec ... resume --last "<prompt N>"`` for each later prompt, in
   ``workspace/`` with only ``PATH`` (system dirs), ``HOME``, ``CODEX_HOME``, ``TMPDIR``, ``LC_ALL=C``,
   ``TZ=UTC``, ``LAB_API_KEY`` and ``NO_COLOR`` in the environment;
5. copies the rollout file (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``; resume appends to
   the same file) to ``out_path``, stops the server and removes the work dir (unless ``keep_work``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from lab.codex_env import CodexEnv, ensure_codex
from lab.rough import HiddenOverhead
from lab.server import LabServer, RequestLog, ServerConfig
from lab.tokenizer import PseudoTokenizer
from lab.workload import build_workload

DEFAULT_WORKROOT = Path(tempfile.gettempdir()) / "sessiontools-lab"
CODEX_FLAGS = ["--skip-git-repo-check", "-c", "analytics.enabled=false", "-c", "features.plugins=false"]


@dataclass(frozen=True)
class CodexRecording:
    name: str
    seed: int
    prompts: int
    profile: str = "mixed"
    context_window: int = 64000  # config.toml model_context_window
    auto_compact_limit: int | None = None  # config.toml model_auto_compact_token_limit
    server_window: int | None = None  # the lab provider's real window (default: context_window)
    ratio: float = 3.2
    cjk: float = 1.0
    shows: str = ""
    version: str = ""  # the Codex version to run ("": the pinned one, lab.codex_env.CODEX_VERSION)
    model: str = "lab-model"  # config.toml model (a model codex-rs knows gets its own window and limit)
    overhead: int = 0  # hidden input tokens the lab server adds to every agent request
    reasoning_chars: int = 0  # an encrypted reasoning item of this size opens every agent response

    @property
    def window(self) -> int:
        return self.server_window or self.context_window


@dataclass
class CodexRun:
    prompt: int
    returncode: int
    seconds: float
    stderr: str


@dataclass
class CodexResult:
    recording: CodexRecording
    path: Path
    seconds: float = 0.0
    runs: list[CodexRun] = field(default_factory=list)
    requests: list[RequestLog] = field(default_factory=list)


def config_toml(rec: CodexRecording, base_url: str) -> str:
    lines = [
        f'model = "{rec.model}"',
        'model_provider = "lab"',
        'approval_policy = "never"',
        'sandbox_mode = "danger-full-access"',
    ]
    if rec.context_window:  # 0: none set, codex-rs's window for the model applies
        lines.append(f"model_context_window = {rec.context_window}")
    if rec.auto_compact_limit is not None:
        lines.append(f"model_auto_compact_token_limit = {rec.auto_compact_limit}")
    lines += [
        "",
        "[model_providers.lab]",
        'name = "lab"',
        f'base_url = "{base_url}"',
        'wire_api = "responses"',
        'env_key = "LAB_API_KEY"',
        "",
    ]
    return "\n".join(lines)


def codex_environment(work: Path, codex_home: Path) -> dict[str, str]:
    return {
        "PATH": f"/usr/local/bin{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(work / "home"),
        "CODEX_HOME": str(codex_home),
        "TMPDIR": str(work / "tmp"),
        "LC_ALL": "C",
        "LANG": "C",
        "TZ": "UTC",
        "LAB_API_KEY": "lab-local-key",
        "NO_COLOR": "1",
    }


def prompt_command(env: CodexEnv, prompt: str, first: bool) -> list[str]:
    cmd = [str(env.binary), "exec", *CODEX_FLAGS]
    if not first:
        cmd += ["resume", "--last"]
    return [*cmd, prompt]


def record(rec: CodexRecording, out_path: Path, *, workroot: Path | None = None, log=print,
           timeout: float = 300, keep_work: bool = False) -> CodexResult:
    """Record ``rec`` with the real Codex CLI and copy its rollout to ``out_path``."""
    env = ensure_codex(rec.version) if rec.version else ensure_codex()
    work = (workroot or DEFAULT_WORKROOT) / rec.name
    shutil.rmtree(work, ignore_errors=True)
    workspace, codex_home = work / "workspace", work / "home" / ".codex"
    for d in (workspace, codex_home, work / "tmp"):
        d.mkdir(parents=True)
    workload = build_workload(rec.seed, rec.prompts, rec.profile)
    workload.write_workspace(workspace)
    config = ServerConfig(
        workload=workload, window=rec.window, tokenizer=PseudoTokenizer(rec.ratio, rec.cjk),
        overhead=HiddenOverhead(rec.overhead, rec.overhead),
        normalize=[(str(workspace), "/workspace"), (str(codex_home), "/codex-home"), (str(work), "/work")],
        reasoning_chars=rec.reasoning_chars,
    )
    result = CodexResult(rec, out_path)
    t0 = time.monotonic()
    with LabServer(config) as server:
        (codex_home / "config.toml").write_text(config_toml(rec, server.base_url))
        run_env = codex_environment(work, codex_home)
        for i in range(rec.prompts):
            t1 = time.monotonic()
            proc = subprocess.run(prompt_command(env, workload.prompts[i].prompt, i == 0), cwd=workspace,
                                  env=run_env, capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
            result.runs.append(CodexRun(i, proc.returncode, time.monotonic() - t1, proc.stderr.strip()[-800:]))
            if proc.returncode != 0:
                log(f"  [{rec.name}] prompt {i}: codex exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
        result.requests = list(server.model.log)
    files = sorted((codex_home / "sessions").rglob("rollout-*.jsonl"))
    if len(files) != 1:
        raise RuntimeError(f"expected one rollout in {codex_home / 'sessions'}, found {len(files)} (kept {work})")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(files[0], out_path)
    result.seconds = time.monotonic() - t0
    if not keep_work:
        shutil.rmtree(work, ignore_errors=True)
    return result
