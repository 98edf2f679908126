"""Ctrl-C (issue 27): with --jobs 2 the CLI exits 130 with one line ("interrupted"), no traceback
from the parent, the workers or the forkserver, the workers stopped, and no output file (not even a
partial one, not a temporary)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import SAMPLES


@pytest.fixture(scope="module")
def slow_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("slow")
    for i in range(16):
        shutil.copy(SAMPLES / "codex" / "codex-pair-a.jsonl", d / f"c{i:02d}.jsonl")
        shutil.copy(SAMPLES / "pi1-branches.jsonl", d / f"p{i:02d}.jsonl")
    return d


def _sigint_as_from_a_terminal() -> None:
    """The child's Ctrl-C is Python's KeyboardInterrupt even when this test runs where SIGINT is
    ignored (a background job of a non-interactive shell: its children inherit SIG_IGN, and Python
    then never raises KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(slow_input: Path, tmp_path: Path, args: list[str], extra: list[str], delay: float) -> None:
    """Run `sessiontools ARGS SLOW_INPUT EXTRA`, send Ctrl-C to its process group after `delay`
    seconds, and check: exit 130, stderr exactly "interrupted", nothing on stdout, no output file,
    no process of the group left."""
    p = subprocess.Popen([sys.executable, "-m", "sessiontools", args[0], str(slow_input), *args[1:], *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=_sigint_as_from_a_terminal, env={k: v for k, v in os.environ.items() if k != "SESSIONTOOLS_DEBUG"})
    time.sleep(delay)
    if p.poll() is not None:
        pytest.skip("the command finished before the interrupt: the machine is faster than this input")
    os.killpg(p.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
    t0 = time.monotonic()
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        pytest.fail("did not exit within 30 s of SIGINT")
    # The output was complete (written atomically) before the interrupt came: nothing to check.
    if err.startswith("wrote ") and time.monotonic() - t0 < 1:
        pytest.skip("the command had written its output and was exiting when the interrupt came")
    assert p.returncode == 130, err
    assert err == "interrupted\n", err
    assert out == ""
    assert time.monotonic() - t0 < 30
    assert list(tmp_path.iterdir()) == []  # no output, no partial file, no temporary
    # The forkserver and the resource tracker exit when they see the parent's pipe close: give them
    # a moment on a loaded machine, but not a long one.
    deadline = time.monotonic() + 5
    while True:
        leftover = subprocess.run(["pgrep", "-g", str(p.pid)], capture_output=True, text=True)
        if not leftover.stdout.strip() or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert leftover.stdout.strip() == "", "worker processes left running"


#: When the Ctrl-C comes (seconds after the start): while the LocalCluster starts its scheduler
#: and workers, while they work, and (on a fast machine) as they finish. Each moment printed a
#: different traceback before (distributed's exit hook closing a cluster that was still starting:
#: AssertionError; a worker spawned as the parent exited: FileNotFoundError in SemLock._rebuild).
@pytest.mark.parametrize("delay", [1.0, 2.5, 4.0])
def test_sigint_with_dask(slow_input: Path, tmp_path: Path, delay: float) -> None:
    pytest.importorskip("distributed")
    _interrupt(slow_input, tmp_path, ["inspect", "-o", str(tmp_path / "i.txt")], ["--executor", "dask", "--jobs", "2"],
               delay)


@pytest.mark.parametrize("command", [
    ["estimate-error", "--no-cache", "--format", "json", "-o", "{out}/e.json"],
    ["inspect", "-o", "{out}/i.txt"],
    ["report", "-o", "{out}/r.html", "--context-window", "30000", "--reserve", "2000"],
])
def test_sigint_with_two_jobs(slow_input: Path, tmp_path: Path, command: list[str]) -> None:
    args = [a.replace("{out}", str(tmp_path)) for a in command]
    _interrupt(slow_input, tmp_path, args, ["--jobs", "2"], 2.5)  # (past start-up: the workers are at work)


def test_the_forkserver_hook_silences_only_a_spawn_after_shutdown() -> None:
    """A worker spawned as the interrupted parent exits fails before any task: the semaphores it
    unpickles are removed (FileNotFoundError in multiprocessing/synchronize.py's `SemLock._rebuild`) or
    the parent was gone before it sent the child its data (EOFError in multiprocessing/spawn.py's
    `_main`). The forkserver's hook says nothing for those two cases and passes every other error
    (another exception there, the same exception anywhere else) to the previous hook."""
    import sys

    from sessiontools.read.workers import _quiet_spawn_after_shutdown

    seen: list[type[BaseException]] = []
    hook = _quiet_spawn_after_shutdown(lambda kind, exc, tb: seen.append(kind))

    def raised(filename: str, exc: BaseException) -> tuple:
        code = compile("def rebuild(exc):\n    raise exc\n", filename, "exec")
        space: dict = {}
        exec(code, space)
        try:
            space["rebuild"](exc)
        except BaseException:
            return sys.exc_info()
        raise AssertionError("not raised")

    mp = os.path.join("lib", "multiprocessing")
    hook(*raised(os.path.join(mp, "synchronize.py"), FileNotFoundError(2, "gone")))
    hook(*raised(os.path.join(mp, "spawn.py"), EOFError("Ran out of input")))
    assert seen == []
    hook(*raised(os.path.join(mp, "synchronize.py"), ValueError("other")))
    hook(*raised(os.path.join(mp, "spawn.py"), FileNotFoundError(2, "not the semaphores")))
    hook(*raised(os.path.join(mp, "synchronize.py"), EOFError("not reading the child's data")))
    hook(*raised(os.path.join("sessiontools", "read", "parallel.py"), FileNotFoundError(2, "a real one")))
    hook(*raised(os.path.join("sessiontools", "read", "parallel.py"), EOFError("a real one")))
    assert seen == [ValueError, FileNotFoundError, EOFError, FileNotFoundError, EOFError]


class _Stub:
    """A LocalCluster or Client that does nothing (`interrupt`: its start is interrupted)."""

    interrupt = False

    def __init__(self, *args: object, **kwargs: object) -> None:
        if type(self).interrupt:
            raise KeyboardInterrupt

    def __enter__(self) -> _Stub:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.mark.parametrize("interrupted", [False, True])
def test_a_local_cluster_interrupted_while_it_starts_keeps_its_start_method(
        monkeypatch: pytest.MonkeyPatch, interrupted: bool) -> None:
    """The mechanism behind the dask test's old residual: a LocalCluster interrupted while it starts
    goes on starting nannies in its event loop's thread, and each nanny reads
    `distributed.worker.multiprocessing-method` when it starts its worker. The setting must still be
    our forkserver then (distributed's default, spawn, made children that printed CPython's
    SemLock/EOFError tracebacks after "interrupted"), and the cluster's processes stopped. A cluster
    closed the polite way restores the caller's settings."""
    pytest.importorskip("distributed")
    import dask.config
    import distributed

    from sessiontools.read import executors

    key = "distributed.worker.multiprocessing-method"
    before = dask.config.get(key)
    assert before != "forkserver"  # (distributed's default, spawn: else this test proves nothing)
    stopped: list[bool] = []
    stub = type("Stub", (_Stub,), {"interrupt": interrupted})
    monkeypatch.setattr(distributed, "LocalCluster", stub)
    monkeypatch.setattr(executors, "import_client", lambda: _Stub)
    monkeypatch.setattr(executors, "_start_forkserver", lambda preload: None)
    monkeypatch.setattr(executors, "stop_local_cluster", lambda: stopped.append(True))
    try:
        if interrupted:
            with pytest.raises(KeyboardInterrupt), executors.dask_client(executors.DaskCluster(workers=2)):
                pass
            assert dask.config.get(key) == "forkserver"
            assert stopped == [True]
        else:
            with executors.dask_client(executors.DaskCluster(workers=2)):
                assert dask.config.get(key) == "forkserver"
            assert dask.config.get(key) == before
            assert stopped == []
    finally:
        dask.config.set({key: before})


def _console_script() -> Path:
    script = Path(sys.executable).with_name("sessiontools")
    if not script.exists():
        pytest.skip("the sessiontools console script is not installed next to this interpreter")
    assert "sessiontools.entry" in script.read_text(encoding="utf-8", errors="replace"), (
        f"{script} predates the entry module: reinstall (pip install -e .)")
    return script


#: Seconds after the entry module is loaded: in the CLI's imports (typer, rich, the commands'
#: modules: a second or more under load) and, on a fast machine, as the command starts.
_STARTUP_POINTS = [0.0, 0.02, 0.05, 0.1, 0.2, 0.3]


@pytest.mark.parametrize(("how", "after"), [("console-script", a) for a in _STARTUP_POINTS]
                         + [("python -m", a) for a in (0.0, 0.1)])  # (the module form imports the CLI in the same place)
def test_sigint_during_start_up_imports(tmp_path: Path, how: str, after: float) -> None:
    """A Ctrl-C while the CLI is still being imported: exit 130, the one line, no traceback; for the
    installed console script (which imports the CLI before any handler of the CLI's own) and for
    `python -m sessiontools`. The moment is counted from when the entry module has been loaded
    (PYTHONPROFILEIMPORTTIME's line for it): before that the interpreter itself is starting (its
    `site` import), which no package's code can reach (see `sessiontools.entry`)."""
    import threading

    argv = [str(_console_script())] if how == "console-script" else [sys.executable, "-m", "sessiontools"]
    env = {k: v for k, v in os.environ.items() if k != "SESSIONTOOLS_DEBUG"}
    env["PYTHONPROFILEIMPORTTIME"] = "1"
    p = subprocess.Popen([*argv, "inspect", str(SAMPLES / "pi1-branches.jsonl"), "-o", str(tmp_path / "i.txt")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=_sigint_as_from_a_terminal, env=env)
    lines: list[str] = []
    loaded = threading.Event()

    def drain() -> None:
        assert p.stderr is not None
        for line in p.stderr:
            lines.append(line)
            if line.startswith("import time:") and line.rstrip().endswith("| sessiontools.entry"):
                loaded.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        if not loaded.wait(timeout=60):
            pytest.fail("the entry module was never loaded:\n" + "".join(lines[-20:]))
        time.sleep(after)
        if p.poll() is not None:
            pytest.skip("the command finished before the interrupt: the machine is faster than this start-up")
        os.killpg(p.pid, signal.SIGINT)
        p.wait(timeout=30)  # (stderr is the reader's: nothing else may read it)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    reader.join(timeout=10)
    assert p.stdout is not None
    out = p.stdout.read()
    err = "".join(ln for ln in lines if not ln.startswith("import time:"))
    if err.startswith("wrote "):
        pytest.skip("the command had written its output when the interrupt came")
    assert p.returncode == 130, err
    assert err == "interrupted\n", err
    assert out == ""
    assert list(tmp_path.iterdir()) == []


def test_a_ctrl_c_while_the_forkserver_is_spawned_is_not_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    """The forkserver must not inherit Python's Ctrl-C handler, but this process must still see a
    Ctrl-C that comes while the server is being spawned: SIGINT is blocked then, not ignored.
    (Ignored, such a Ctrl-C was lost and the command ran to its end: exit 0, seen under load.)"""
    from multiprocessing import forkserver, resource_tracker

    from sessiontools.read import workers

    def spawned_meanwhile() -> None:
        os.kill(os.getpid(), signal.SIGINT)  # the terminal's Ctrl-C, while the server is being spawned
        time.sleep(0.05)

    monkeypatch.setattr(forkserver, "ensure_running", spawned_meanwhile)
    monkeypatch.setattr(resource_tracker, "ensure_running", lambda: None)
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)  # (also when this runs as a background job)
    try:
        with pytest.raises(KeyboardInterrupt):
            workers.start_forkserver_ignoring_sigint()
            for _ in range(100):  # (delivered as soon as the mask is restored: within a few bytecodes)
                time.sleep(0.001)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, outer)


_NESTED = """
import ctypes, os, signal, sys, threading
run = ctypes.pythonapi.PyRun_StringFlags
run.restype = ctypes.py_object
run.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.py_object, ctypes.py_object, ctypes.c_void_p]
threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
try:  # (what a C extension's import that runs Python code does, interrupted)
    run(b"import time\\nfor _ in range(500): time.sleep(0.01)\\n", 257, {}, {}, None)
except KeyboardInterrupt:
    if sys.argv[1] == "ours":
        from sessiontools.entry import interrupted
        sys.exit(interrupted())
    sys.stderr.write("interrupted\\n")
    sys.exit(130)
"""


def test_a_handled_interrupt_exits_130_under_python_m(tmp_path: Path) -> None:
    """CPython remembers a KeyboardInterrupt that passed through a nested PyRun_* call, even when it
    was handled, and `python -m` then dies by SIGINT at exit (-2) instead of exiting 130 (1 in about
    30 interrupted dask runs). The entry's handler makes it forget: exit 130. The plain handler shows
    the CPython behaviour guarded against (-2 on 3.11; 130 would mean a release that no longer does it)."""
    (tmp_path / "nested_interrupt.py").write_text(_NESTED, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                       os.environ.get("PYTHONPATH", "")]))
    codes = {}
    for handler in ("plain", "ours"):
        p = subprocess.run([sys.executable, "-m", "nested_interrupt", handler], capture_output=True, text=True,
                           timeout=60, cwd=tmp_path, preexec_fn=_sigint_as_from_a_terminal, env=env)
        assert p.stderr == "interrupted\n", p.stderr
        codes[handler] = p.returncode
    assert codes["plain"] in (-signal.SIGINT, 130)
    assert codes["ours"] == 130


_ORJSON_PROBE = r'''
import os, signal, sys


class Interrupting:
    """A Ctrl-C just when orjson's init imports a module with Python code."""

    def find_spec(self, name, path=None, target=None):
        if name in ("dataclasses", "json"):
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None


assert not {"orjson", "dataclasses", "json"} & set(sys.modules), "the probe needs a fresh interpreter"
from sessiontools.entry import import_orjson_whole

sys.meta_path.insert(0, Interrupting())
try:
    import_orjson_whole() if sys.argv[1] == "entry" else __import__("orjson")
except KeyboardInterrupt:
    print("interrupted", "orjson" in sys.modules)
'''


def test_a_ctrl_c_inside_orjsons_init_is_a_keyboard_interrupt_not_a_crash() -> None:
    """orjson 3.13's module init imports `dataclasses` and `json`; a KeyboardInterrupt raised in there
    kills the process with SIGSEGV (a plain `import orjson` under this probe: -11 every time, measured
    in s8; 1 in about 8 runs of the start-up test above before `entry.import_orjson_whole`). The entry
    imports orjson with SIGINT blocked, so the Ctrl-C arrives after it, as a KeyboardInterrupt."""
    p = subprocess.run([sys.executable, "-c", _ORJSON_PROBE, "entry"], capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (0, "interrupted True\n"), p.stderr[-2000:]
