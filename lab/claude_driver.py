"""Record a transcript with the real Claude Code CLI (print mode) against the lab server.

``record_claude(ClaudeRecording(...), out_path)``:

1. builds the seeded workload and writes the workspace into ``<workroot>/<name>/workspace``
   (default workroot ``$TMPDIR/sessiontools-lab-claude``; a fixed path, so the ``cwd`` and the
   project folder name Claude Code derives from it are the same on every run);
2. starts ``lab.server.LabServer`` with an ``lab.anthropic_api.AnthropicModel`` (the server's
   ``window`` is the model's real limit: larger requests get ``prompt is too long``);
3. runs, in the workspace, ``claude -p --bare --tools Bash,Edit,Read --allowedTools Bash,Edit,Read
   [--continue] "<prompt>"`` once per prompt, with only ``PATH``, ``HOME`` and
   ``CLAUDE_CONFIG_DIR`` (both in the work dir), ``TMPDIR``, ``LC_ALL=C``, ``TZ=UTC``,
   ``ANTHROPIC_BASE_URL=http://127.0.0.1:PORT``, ``ANTHROPIC_API_KEY=lab``,
   ``DISABLE_AUTOUPDATER=1``, ``DISABLE_TELEMETRY=1``, ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``
   and, for threshold recordings, ``CLAUDE_CODE_AUTO_COMPACT_WINDOW=W`` and
   ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=P``; a manual compaction is ``claude -p --continue "/compact"``
   after prompt ``manual_after``;
4. copies the single ``.jsonl`` from ``$CLAUDE_CONFIG_DIR/projects/<cwd slug>/`` to ``out_path``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from lab.anthropic_api import AnthropicConfig, AnthropicLog, AnthropicModel
from lab.claude_env import ClaudeEnv, ensure_claude
from lab.server import LabServer, ServerConfig
from lab.tokenizer import PseudoTokenizer
from lab.workload import build_workload

DEFAULT_WORKROOT = Path(tempfile.gettempdir()) / "sessiontools-lab-claude"
TOOLS = "Bash,Edit,Read"


@dataclass(frozen=True)
class ClaudeRecording:
    name: str
    seed: int
    prompts: int
    profile: str = "mixed"
    server_window: int = 200000  # requests above this get HTTP 400 "prompt is too long"
    auto_window: int | None = None  # CLAUDE_CODE_AUTO_COMPACT_WINDOW (None: reactive only)
    pct: int | None = None  # CLAUDE_AUTOCOMPACT_PCT_OVERRIDE
    manual_after: tuple[int, ...] = ()  # run "/compact" after these prompt indexes
    ratio: float = 3.2
    shows: str = ""
    version: str = ""  # the Claude Code version to run ("": the pinned one, lab.claude_env.VERSION)
    model: str | None = None  # --model (None: the CLI's default model)
    bare: bool = True  # --bare where the release has it (False: its full system prompt and settings)


@dataclass
class ClaudeRun:
    label: str
    returncode: int
    seconds: float
    stdout: str
    stderr: str


@dataclass
class ClaudeResult:
    recording: ClaudeRecording
    path: Path
    seconds: float = 0.0
    runs: list[ClaudeRun] = field(default_factory=list)
    requests: list[AnthropicLog] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)


def project_slug(cwd: Path) -> str:
    """Claude Code's project folder name for a working directory (non-alphanumerics -> '-')."""
    return "".join(ch if ch.isalnum() else "-" for ch in str(cwd))


def claude_environment(work: Path, port: int, rec: ClaudeRecording) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(work / "home"),
        "CLAUDE_CONFIG_DIR": str(work / "config"),
        "TMPDIR": str(work / "tmp"),
        "LC_ALL": "C",
        "LANG": "C",
        "TZ": "UTC",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "lab",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "NO_COLOR": "1",
    }
    if rec.auto_window is not None:
        env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(rec.auto_window)
    if rec.pct is not None:
        env["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] = str(rec.pct)
    return env


_FLAGS: dict[str, tuple[str, ...]] = {}


def cli_flags(claude: ClaudeEnv, env: dict[str, str]) -> tuple[str, ...]:
    """The isolating flags this version has: `--bare` and `--tools` are newer than 2.0 (older
    releases run with their full system prompt; `--allowedTools` exists in every 2.x)."""
    if claude.version not in _FLAGS:
        proc = subprocess.run([*claude.command, "--help"], env=env, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        text = proc.stdout + proc.stderr
        flags = (("--bare",) if "--bare" in text else ()) + ((f"--tools={TOOLS}",) if "--tools " in text else ())
        _FLAGS[claude.version] = (*flags, f"--allowedTools={TOOLS}")
    return _FLAGS[claude.version]


def _run(claude: ClaudeEnv, args: list[str], cwd: Path, env: dict[str, str], label: str,
         timeout: float, model: str | None = None, bare: bool = True) -> ClaudeRun:
    flags = [f for f in cli_flags(claude, env) if bare or f != "--bare"]
    cmd = [*claude.command, "-p", *flags, *(("--model", model) if model else ()), *args]
    t = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = -9, str(exc.stdout or ""), f"timeout after {timeout}s"
    return ClaudeRun(label, rc, time.monotonic() - t, out.strip()[-500:], err.strip()[-1000:])


def record_claude(rec: ClaudeRecording, out_path: Path, *, workroot: Path | None = None, log=print,
                  timeout: float = 300, keep_work: bool = False, dump: bool = False) -> ClaudeResult:
    """Record ``rec`` with the real Claude Code CLI and copy the transcript to ``out_path``."""
    claude = ensure_claude(rec.version) if rec.version else ensure_claude()
    work = (workroot or DEFAULT_WORKROOT) / rec.name
    shutil.rmtree(work, ignore_errors=True)
    workspace = work / "workspace"
    for d in (workspace, work / "home", work / "config", work / "tmp"):
        d.mkdir(parents=True)
    workload = build_workload(rec.seed, rec.prompts, rec.profile)
    workload.write_workspace(workspace)
    model = AnthropicModel(AnthropicConfig(
        workload=workload, workspace=str(workspace), window=rec.server_window,
        tokenizer=PseudoTokenizer(rec.ratio), normalize=[(str(workspace), "/workspace"), (str(work), "/work")],
        dump_dir=(work / "requests") if dump else None))
    dummy = ServerConfig(workload=workload)
    result = ClaudeResult(rec, out_path)
    t0 = time.monotonic()
    with LabServer(dummy, anthropic=model) as server:
        env = claude_environment(work, server.httpd.server_address[1], rec)
        for i in range(rec.prompts):
            args = (["--continue"] if i > 0 else []) + [workload.prompts[i].prompt]
            run = _run(claude, args, workspace, env, f"prompt {i}", timeout, rec.model, rec.bare)
            result.runs.append(run)
            if run.returncode != 0:
                log(f"  [{rec.name}] prompt {i}: claude exited {run.returncode}: {run.stderr[-300:]} {run.stdout[-200:]}")
            if i in rec.manual_after:
                run = _run(claude, ["--continue", "/compact"], workspace, env, f"/compact after {i}", timeout, rec.model, rec.bare)
                result.runs.append(run)
                if run.returncode != 0:
                    log(f"  [{rec.name}] /compact: claude exited {run.returncode}: {run.stderr[-300:]}")
        result.requests = list(model.log)
        result.mismatches = list(model.mismatches)
    project = work / "config" / "projects" / project_slug(workspace)
    # Older releases (2.0.x) also leave an empty `<id>.jsonl` per `--continue` run and `agent-*.jsonl`
    # warm-up sidechains beside the one transcript.
    files = sorted(p for p in project.glob("*.jsonl") if p.stat().st_size and not p.name.startswith("agent-")) \
        if project.is_dir() else []
    if len(files) != 1:
        found = sorted(str(p.relative_to(work)) for p in (work / "config").rglob("*.jsonl"))
        raise RuntimeError(f"expected one transcript in {project}, found {found}")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(files[0], out_path)
    result.seconds = time.monotonic() - t0
    if not keep_work:
        shutil.rmtree(work, ignore_errors=True)
    return result
