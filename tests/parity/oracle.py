"""Run Pi's own compiled code (via tests/parity/oracle.mjs) as the parity oracle.

Protocol (JSON Lines; one request per line in, answers in request order out):

Session request::

    {"session_id": str, "lines": [raw text of each file line], "leaf_id": str | None,
     "queries": [{"at_index": int, "keep_recent": int, "reserve_tokens": int}, ...],
     "fields": [...]}  # optional, default: every field except "context_json"

``"text"`` (the whole file content) may replace ``"lines"``. The file is parsed like Pi's
``loadEntriesFromFile`` of that major version, migrated with ``migrateSessionEntries`` (v1 files
get random ids, so compare positions, not ids), and the path runs from ``leaf_id`` (default: the
last entry, like ``SessionManager``) to the root. Query ``q`` is answered on
``path[: at_index + 1]``. One answer per query (a session without queries gets one answer with
``query_index: None``)::

    session_id, query_index, at_index, keep_recent, reserve_tokens, path_len, slice_len
    (query 0 only) pi_version, session_valid, file_version, entry_count, path_types, path_ids,
                   path_line_indices   # line index (into "lines") of each path entry
                   session_context     # SessionManager's buildSessionContext().messages: what Pi
                                       # sends on resume (its leaf rule is not the branch's)
    context                    # buildSessionContext(slice).messages (1.x: the projection)
    context_sources            # per context message: slice index of the entry owning that object, else None
    context_json               # (opt-in) exact JSON.stringify text of the context array
    estimate_tokens            # estimateTokens(m) for each context message
    context_estimate           # estimateContextTokens(context): {tokens, usageTokens, trailingTokens, lastUsageIndex}
    projected_context_estimate # 1.x only: estimateProjectedContextTokens(buildSessionProjection(slice), slice)
    prepare                    # None when prepareCompaction returns undefined, else:
        first_kept_index, first_kept_entry_id, is_split_turn, tokens_before,
        messages_to_summarize, turn_prefix_messages (counts), has_previous_summary
        (previousSummary !== undefined), previous_summary, read_files, modified_files,
        serialized, serialized_turn_prefix, turn_start_index (None unless split),
        boundary_start_index, turn_start_method ("findCutPoint" for 0.x, "projection" for 1.x;
        "unresolved"/"ambiguous"/"mismatch" -> turn_start_index None),
        messages_to_summarize_sources/_roles, turn_prefix_sources/_roles,
        (1.x) projected_boundary_start, projected_first_kept_index, projected_turn_start_index
    overflow                   # [{index, overflow}] for assistant messages with stopReason "error"
    slice_ids_sha1, slice_lines_sha1  # every query: sha1 of JSON.stringify(slice ids / line indices)
    errors / error             # present only when Pi's own code threw: {field: message} and the first
    helper_error               # the oracle's own code failed (a harness bug: parity fails on it)

Function request: ``{"fn": name, "args": [...], "id": any}`` -> ``{"id", "fn", "result",
"undefined"}`` or ``{"id", "fn", "error"}``. ``name`` is any export of compaction.js, utils.js,
session-manager.js, messages.js or pi-ai's overflow.js, or a helper: jsonStringify, stringLength,
serializeLlm, parseLines, loadSession, computeFileListsFromArrays, extractFileOps, prepareSummary,
piVersion, openSession (Pi's SessionManager.open on a scratch file: path_types, path_len, context).

Requests are sent with ``ensure_ascii=True`` (lone surrogates survive the trip); answers are
parsed with the standard ``json`` module (integers stay ``int``; JS prints integral numbers
without a fraction, so ``1.0`` in a session comes back as ``1``).
"""

from __future__ import annotations

import atexit
import json
import subprocess
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from lab.pi_env import PiEnv, PiUnavailable, ensure_pi

__all__ = [
    "ORACLE_JS",
    "OracleError",
    "PiEvalError",
    "PiUnavailable",
    "expected_answers",
    "iter_oracle",
    "oracle_command",
    "pi_eval",
    "pi_eval_many",
    "run_oracle",
]

ORACLE_JS = Path(__file__).with_name("oracle.mjs")

#: Lines the oracle processes wrote to stderr (captured, never printed; the parity summary counts them).
STDERR_LINES: list[str] = []


class OracleError(RuntimeError):
    """The oracle process failed (crashed, timed out, or broke the protocol)."""


class PiEvalError(RuntimeError):
    """Pi's function threw; the message is Pi's error text."""


def _pi_ai_dir(env: PiEnv) -> Path:
    scope = env.package.split("/")[0]
    for candidate in (
        env.package_dir / "node_modules" / scope / "pi-ai",
        env.prefix / "node_modules" / scope / "pi-ai",
    ):
        if (candidate / "dist" / "utils" / "overflow.js").exists():
            return candidate
    raise PiUnavailable(f"pi-ai for {env.package}@{env.version} not found under {env.prefix}")


def oracle_command(major: str) -> list[str]:
    """The argv that starts the oracle for Pi `major` ("0" or "1"); raises PiUnavailable."""
    env = ensure_pi(major)
    return [str(env.node), str(ORACLE_JS), str(env.package_dir), str(_pi_ai_dir(env))]


def _encode(request: dict) -> bytes:
    return (json.dumps(request, ensure_ascii=True, allow_nan=False, separators=(",", ":")) + "\n").encode("ascii")


def expected_answers(request: dict) -> int:
    """How many answer lines the oracle writes for one request."""
    if isinstance(request.get("fn"), str):
        return 1
    queries = request.get("queries")
    return max(1, len(queries)) if isinstance(queries, list) else 1


def _start(major: str) -> subprocess.Popen:
    return subprocess.Popen(
        oracle_command(major),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


class _Rebuilder:
    """Undo the compact transport: rebuild "context" and prepare.serialized* per session."""

    def __init__(self) -> None:
        self.messages: dict[int, Any] = {}
        self.last: dict[str, str] = {}

    def __call__(self, answer: dict) -> dict:
        if "session_id" in answer and answer.get("query_index") in (0, None):
            self.messages = {}
            self.last = {}
        fresh = answer.pop("context_new", None)
        if fresh is not None:
            for message_id, message in fresh:
                self.messages[message_id] = message
            answer["context"] = [self.messages[i] for i in answer["context_refs"]]
        prepare = answer.get("prepare")
        if isinstance(prepare, dict):
            for key in ("serialized", "serialized_turn_prefix"):
                tail = prepare.pop(f"{key}_append", None)
                if tail is not None:
                    prepare[key] = self.last[key] + tail
                if isinstance(prepare.get(key), str):
                    self.last[key] = prepare[key]
        return answer


def iter_oracle(
    major: str, sessions: Iterable[dict], *, compact: bool = True, timeout: float = 900.0
) -> Iterator[dict]:
    """Stream the answers to `sessions` (requests) from one Node process, in request order.

    Input is written by a thread while answers are read, so batches of any size stream without
    deadlock and without holding every answer in memory. With `compact` (default) the oracle sends
    each context message once per session and serialized texts as appended tails; the answers
    yielded are rebuilt to the plain protocol (context dicts are shared between answers of one
    session: treat them as read-only). Raises PiUnavailable when Pi cannot be installed,
    OracleError when Node fails or the answer count is wrong.
    """
    if compact:
        sessions = ({**r, "compact": True} if "fn" not in r else r for r in sessions)
    rebuild = _Rebuilder()
    proc = _start(major)
    stderr_chunks: list[bytes] = []
    write_error: list[BaseException] = []
    expected = [0]

    def write() -> None:
        try:
            assert proc.stdin is not None
            for request in sessions:
                expected[0] += expected_answers(request)
                proc.stdin.write(_encode(request))
            proc.stdin.close()
        except BrokenPipeError as exc:  # node died; reported below with its stderr
            write_error.append(exc)
        except BaseException as exc:  # e.g. a request that is not JSON-serializable
            write_error.append(exc)
            proc.kill()

    def drain_stderr() -> None:
        assert proc.stderr is not None
        stderr_chunks.append(proc.stderr.read())

    timer = threading.Timer(timeout, proc.kill)
    writer = threading.Thread(target=write, daemon=True)
    err_reader = threading.Thread(target=drain_stderr, daemon=True)
    timer.start()
    writer.start()
    err_reader.start()
    count = 0
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            count += 1
            yield rebuild(json.loads(raw))
        rc = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:  # the caller stopped early
            proc.kill()
            proc.wait()
        writer.join()
        err_reader.join()
    stderr = b"".join(stderr_chunks).decode("utf-8", "replace").strip()
    if stderr:
        STDERR_LINES.extend(stderr.splitlines())
    if write_error and not isinstance(write_error[0], BrokenPipeError):
        raise OracleError(f"could not send requests: {write_error[0]!r}") from write_error[0]
    if rc != 0:
        raise OracleError(f"oracle exited with {rc}: {stderr[-2000:]}")
    if count != expected[0]:
        raise OracleError(f"oracle wrote {count} answers, expected {expected[0]}: {stderr[-2000:]}")


def run_oracle(
    major: str, sessions: Sequence[dict], *, compact: bool = True, timeout: float = 900.0
) -> list[dict]:
    """Answer every request in `sessions` with one Node process started for this call.

    Returns the answers in request order (see the module docstring for the protocol). Raises
    PiUnavailable when Pi cannot be installed, OracleError when Node fails.
    """
    return list(iter_oracle(major, sessions, compact=compact, timeout=timeout))


class _Persistent:
    """A long-lived oracle process for many small function calls (request, then answer)."""

    def __init__(self, major: str) -> None:
        self.major = major
        self.lock = threading.Lock()
        self.proc = _start(major)
        self.stderr: list[bytes] = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for chunk in self.proc.stderr:
            self.stderr.append(chunk)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ask(self, requests: list[dict]) -> list[dict]:
        with self.lock:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            expected = sum(expected_answers(r) for r in requests)
            errors: list[BaseException] = []

            def write() -> None:
                try:
                    for request in requests:
                        self.proc.stdin.write(_encode(request))
                    self.proc.stdin.flush()
                except BaseException as exc:
                    errors.append(exc)

            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            answers = []
            for _ in range(expected):
                raw = self.proc.stdout.readline()
                if not raw:
                    break
                answers.append(json.loads(raw))
            writer.join()
            if errors or len(answers) != expected:
                self.close()
                tail = b"".join(self.stderr).decode("utf-8", "replace")[-2000:]
                raise OracleError(f"oracle failed ({errors[0] if errors else 'short answer'}): {tail}")
            return answers

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()


_PROCESSES: dict[str, _Persistent] = {}
_PROCESSES_LOCK = threading.Lock()


def _persistent(major: str) -> _Persistent:
    with _PROCESSES_LOCK:
        proc = _PROCESSES.get(major)
        if proc is None or not proc.alive():
            proc = _PROCESSES[major] = _Persistent(major)
        return proc


@atexit.register
def _close_all() -> None:
    for proc in list(_PROCESSES.values()):
        proc.close()
    _PROCESSES.clear()


def pi_eval_many(major: str, calls: Iterable[tuple[str, Sequence[Any]]]) -> list[dict]:
    """Evaluate many `(fn, args)` calls in one round trip; raw answers ({"result"} or {"error"})."""
    requests = [{"fn": fn, "args": list(args), "id": i} for i, (fn, args) in enumerate(calls)]
    if not requests:
        return []
    return _persistent(major).ask(requests)


def pi_eval(major: str, fn: str, *args: Any) -> Any:
    """`fn(*args)` evaluated by Pi `major`; raises PiEvalError with Pi's message when it throws.

    `undefined` comes back as None. Uses one persistent Node process per major version.
    """
    (answer,) = pi_eval_many(major, [(fn, args)])
    if "error" in answer:
        raise PiEvalError(answer["error"])
    return answer["result"]
