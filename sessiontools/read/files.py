"""Opening input files: the one place that turns an operating-system error into a user's message;
and the files a list of paths names (directories, globs), for every reader."""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from sessiontools.errors import InputError

#: The largest input file read (a session file is read into memory whole, as Pi does). The CLI's
#: override: the environment variable SESSIONTOOLS_MAX_FILE_BYTES (0 = no limit).
DEFAULT_MAX_FILE_BYTES = 4 * 1024**3
MAX_FILE_BYTES_ENV = "SESSIONTOOLS_MAX_FILE_BYTES"

_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def check_input(path: str | os.PathLike[str], max_bytes: int | None = DEFAULT_MAX_FILE_BYTES) -> os.stat_result:
    """`os.stat` of an input before it is opened: only a regular file is read (a FIFO would block the
    open forever, /dev/zero would fill memory), and only one of at most `max_bytes` (None or 0: any
    size). Raises `InputError` with the reason."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise open_error(path, exc) from exc
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
        raise InputError(f"{path}: {kind}, not a regular file; not read")
    if max_bytes and st.st_size > max_bytes:
        raise InputError(f"{path}: {st.st_size:,} bytes, over the limit of {max_bytes:,} bytes for one input file; "
                         f"not read (raise it with {MAX_FILE_BYTES_ENV}=N, 0 for no limit)")
    return st


def open_error(where: str | os.PathLike[str], exc: OSError) -> InputError:
    """`InputError` for an OSError raised while opening or reading `where` (a path or a URL)."""
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{where}: no such file")
    if isinstance(exc, PermissionError):
        return InputError(f"{where}: permission denied")
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{where}: is a directory")
    return InputError(f"{where}: cannot read ({exc.strerror or exc})")


def path_key(p: Path) -> Path:
    """The identity of a path for "each file once": its resolved path, or for a symlink loop (which
    cannot be resolved) its absolute path; the reader then reports the loop when it opens it."""
    try:
        return p.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(p))


class _Keys:
    """`path_key` of many paths (as strings), each directory resolved once: a file that is no symlink
    is its resolved directory's entry of its name (what `Path.resolve` finds component by component,
    an `lstat` each: 0.05 s of CPU for the 208 files of the Claude Code bench corpus, a tenth of
    `inspect`'s whole run). Each path's key is kept (`session_files` asks for it twice); strings,
    since hashing a `Path` costs more than the `lstat`."""

    __slots__ = ("_dirs", "_paths")

    def __init__(self) -> None:
        self._dirs: dict[str, str] = {}
        self._paths: dict[str, str] = {}

    def __call__(self, p: Path) -> str:
        s = str(p)
        key = self._paths.get(s)
        if key is None:
            key = self._paths[s] = self._key(p)
        return key

    def _key(self, p: Path) -> str:
        name = p.name
        if not name or name == "..":
            return str(path_key(p))
        try:
            link = stat.S_ISLNK(os.lstat(p).st_mode)
        except (OSError, ValueError):  # not there (or no path the system takes): resolve says what it can
            return str(path_key(p))
        if link:
            return str(path_key(p))
        parent = p.parent
        d = self._dirs.get(str(parent))
        if d is None:
            d = self._dirs[str(parent)] = str(path_key(parent))
        return os.path.join(d, name)


def read_file_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a local file (never written to). Raises `InputError`."""
    p = Path(path)
    check_input(p, None)
    try:
        return p.read_bytes()
    except OSError as exc:
        raise open_error(p, exc) from exc


def expand_paths(paths: Iterable[str | os.PathLike[str]], keys: _Keys | None = None) -> Iterator[Path]:
    """Files named, `*.jsonl` files below directories (sorted), and glob matches, each once, in order
    (`keys`: the `path_key`s already known, shared with the caller)."""
    seen: set[str] = set()
    keys = _Keys() if keys is None else keys

    def emit(p: Path) -> Iterator[Path]:
        key = keys(p)
        if key not in seen:
            seen.add(key)
            yield p

    for raw in paths:
        s = os.fspath(raw)
        p = Path(s)
        if p.is_dir():
            for f in sorted(p.rglob("*.jsonl")):
                if f.is_file():
                    yield from emit(f)
        elif not p.exists() and glob.has_magic(s):
            matches = safe_glob(s)
            if not matches:
                raise InputError(f"{s}: no file matches")
            for m in matches:
                mp = Path(m)
                if mp.is_dir():
                    for f in sorted(mp.rglob("*.jsonl")):
                        yield from emit(f)
                else:
                    yield from emit(mp)
        else:
            yield from emit(p)


def safe_glob(pattern: str) -> list[str]:
    """The sorted matches of a glob. A `**` pattern does not descend into symlinked directories
    (`glob.glob(recursive=True)` does, and two directory links that point at each other make it
    walk the same tree exponentially often): pathlib's recursive selector, which never follows them."""
    if "**" not in pattern:
        return sorted(glob.glob(pattern))
    parts = Path(pattern).parts
    i = next(k for k, part in enumerate(parts) if glob.has_magic(part))
    root = Path(*parts[:i]) if i else Path(".")
    rest = "/".join(parts[i:])
    return sorted(str(p) for p in root.glob(rest))


def digest_of(*parts: bytes) -> str:
    """The content key of a file's bytes (and its companions', in order): the first 32 hex digits of
    their sha256, as a Pi `Session.content_hash` is; the key of the results cached per file content
    (estimate-error's rows, replay's counter choices)."""
    import hashlib

    h = hashlib.sha256(parts[0] if parts else b"")
    for extra in parts[1:]:  # a companion file: its length first, so that no two splits hash alike
        h.update(len(extra).to_bytes(8, "little"))
        h.update(extra)
    return h.hexdigest()[:32]


def session_files(paths: Iterable[str | os.PathLike[str]],
                  companion: Callable[[Path], bool] = lambda f: False) -> Iterator[Path]:
    """`expand_paths`, but without the files found in a directory or a glob that `companion` says are
    read as part of another file (a reader's rule: `read.sources.Reader.companion`); a file named
    explicitly is kept. Each file once, in order."""
    seen: set[str] = set()
    keys = _Keys()
    for raw in paths:
        explicit = Path(os.fspath(raw)).is_file()
        for f in expand_paths([raw], keys):
            key = keys(f)
            if key in seen or (not explicit and companion(f)):
                continue
            seen.add(key)
            yield f
