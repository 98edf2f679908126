"""Machine-readable output (JSON with a schema_version) and the one writer of output files.

Every file sessiontools writes (`-o` in every format, `--plot`, the HTML report, `--save-calibration`,
`--compactions-output`, the dataset's parts and manifest) goes through `atomic_path`/`atomic_open`:
written to a temporary in the same directory, fsync'd, renamed over the target. A full disk, an
I/O error or Ctrl-C leaves the previous file intact and no temporary behind.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

import orjson

from sessiontools.errors import OutputError

SCHEMA_VERSION = 1
#: Commands whose JSON changed since version 1 (a key renamed or changed in meaning bumps its
#: command's version; README "Output conventions" lists the changes). replay 2: a compaction's
#: `pi_view_at_trigger` is `policy_count_at_trigger` (the policy's own count, whichever agent's).
SCHEMA_VERSIONS: dict[str, int] = {"replay": 2}
_CSV_CONTROL = r"\x1b\[[0-?]*[ -/]*[@-~]|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"


def envelope(command: str, **body: Any) -> dict[str, Any]:
    """`{"schema_version": N, "command": ..., ...}` in a stable key order (N: the command's version)."""
    return {"schema_version": SCHEMA_VERSIONS.get(command, SCHEMA_VERSION), "command": command, **body}


def dumps_json(obj: Any) -> bytes:
    """Deterministic, indented JSON (byte-identical for identical input).

    Session text can hold lone UTF-16 surrogates (JSON allows them as escapes); orjson refuses
    them, so such output is written by the standard library with \\u escapes instead.
    """
    try:
        return orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"
    except TypeError:
        import json

        return json.dumps(obj, indent=2, ensure_ascii=True, default=str).encode("ascii") + b"\n"


# -- atomic files: the one way every output reaches the disk ----------------------------------------

def _temp_name(target: Path) -> Path:
    """A name in the target's own directory (so the rename cannot cross file systems), unique to this
    process and call, hidden, and recognisable as ours (`.NAME.sessiontools-<pid>-<random>.tmp`).
    The random part is `secrets.token_hex(4)`'s own (`os.urandom`), without importing `secrets`
    (`random`, `hmac`, `base64`: about 18M instructions for every `-o`)."""
    return target.with_name(f".{target.name}.sessiontools-{os.getpid()}-{os.urandom(4).hex()}.tmp")


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # (a platform or file system without directory handles: the rename is what we have)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_failure(target: Path, exc: OSError) -> OutputError:
    why = exc.strerror or str(exc)
    kept = "; the previous file is left as it was" if target.exists() else ""
    return OutputError(f"{target}: cannot write ({why}){kept}")


@contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside `target` for a writer that wants a path (polars, matplotlib): when the
    block ends, the file is fsync'd and renamed over `target`, then the directory fsync'd. On any
    failure (an OS error, Ctrl-C, a bug) the temporary is removed and `target` is left as it was;
    an OS error becomes an `OutputError` naming the file and the reason."""
    target = Path(target)
    tmp = _temp_name(target)
    try:
        try:
            yield tmp
            mode = os.stat(target).st_mode & 0o7777 if target.exists() else None
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            if mode is not None:
                os.chmod(tmp, mode)  # a rewritten file keeps its permissions
            os.replace(tmp, target)
        except OSError as exc:
            raise write_failure(target, exc) from exc
    except BaseException:
        with suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(target.parent)


@contextmanager
def atomic_open(target: str | os.PathLike[str], mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """`open(target, mode)` made atomic: the file object writes a temporary that replaces `target`
    only when the block ends without an error (see `atomic_path`)."""
    with atomic_path(target) as tmp:
        try:
            # errors="replace": a lone surrogate (Pi's entries keep them, as Pi does) is written as "?", never a crash
            fh = open(tmp, "xb" if "b" in mode else "x", encoding=None if "b" in mode else encoding,
                      errors=None if "b" in mode else "replace")
        except OSError as exc:
            raise write_failure(Path(target), exc) from exc
        with fh:
            try:
                yield fh
                fh.flush()
            except OSError as exc:
                raise write_failure(Path(target), exc) from exc


def write_atomic(target: str | os.PathLike[str], data: bytes | str) -> None:
    """Write all of `data` to `target` atomically (text as UTF-8; a lone surrogate, which Pi's entries
    keep as Pi does, as "?")."""
    with atomic_open(target, "wb") as fh:
        fh.write(data.encode("utf-8", errors="replace") if isinstance(data, str) else data)


def frame_bytes(frame: Any, fmt: str) -> bytes:
    """A polars DataFrame as Parquet (zstd, with statistics) or CSV bytes, for `write_atomic`: the
    bytes are made in memory first, so a write error is always an OS error on a file we name."""
    if fmt == "csv":
        import polars as pl

        # Control characters (an ESC from a file name: a terminal showing the CSV would obey it) go;
        # tabs, newlines and carriage returns stay (quoted, they are data).
        frame = frame.with_columns(pl.col(pl.Utf8).str.replace_all(_CSV_CONTROL, ""))
        return frame.write_csv().encode("utf-8")  # type: ignore[no-any-return]
    import io

    buf = io.BytesIO()
    frame.write_parquet(buf, compression="zstd", statistics=True)
    return buf.getvalue()
