"""Each file once (`read.files.expand_paths`): the keys of the directory walk, each directory
resolved once (`_Keys`), are `path_key`'s for every kind of path: symlinked files and directories,
relative paths, `..`, loops, paths that are not there."""

from __future__ import annotations

import os
from pathlib import Path

from sessiontools.read.files import _Keys, expand_paths, path_key


def _tree(tmp_path: Path) -> list[Path]:
    (tmp_path / "a" / "b").mkdir(parents=True)
    real = tmp_path / "a" / "b" / "x.jsonl"
    real.write_text("{}\n")
    (tmp_path / "link.jsonl").symlink_to("a/b/x.jsonl")
    (tmp_path / "dirlink").symlink_to("a")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    return [real, tmp_path / "link.jsonl", tmp_path / "dirlink" / "b" / "x.jsonl",
            tmp_path / "a" / "b" / ".." / "b" / "x.jsonl", tmp_path / "loop1", tmp_path / "loop1" / "x.jsonl",
            tmp_path / "none.jsonl", tmp_path / "a" / "..", tmp_path, Path("/")]


def test_keys_are_path_keys(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    paths = _tree(tmp_path)
    monkeypatch.chdir(tmp_path / "a")
    paths += [Path("b/x.jsonl"), Path("../link.jsonl"), Path("b/../b/x.jsonl"), Path("."), Path(".."),
              Path("b/nothing/../x.jsonl")]
    keys = _Keys()
    for p in paths:
        assert keys(p) == str(path_key(p)), p
        assert keys(p) == str(path_key(p)), p  # (the kept key)


def test_each_file_once_through_links(tmp_path: Path) -> None:
    paths = _tree(tmp_path)
    got = list(expand_paths([paths[0], paths[1], paths[2], tmp_path / "a", os.fspath(paths[3])]))
    assert got == [paths[0]]
