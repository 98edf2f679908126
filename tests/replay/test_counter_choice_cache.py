"""Issue 24 item 4: a warm `replay` does not compare the truth counters again. Each path's
`CounterChoice` is kept in the token store's results under the file's content hash and the code's
fingerprint (`replay.counter_choice.cached_choices`, `cli.priors.choices_kept`); the next run of
the same bytes takes it and counts only with the counter it chose, and its records are byte-identical.

Measured on the 4 shared Pi sessions (warm, --jobs 1): the comparison and the unchosen counter's
counts were 0.07-0.09 s of about 0.45 s of in-process CPU after the imports; cached, 0.005 s.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import sessiontools.replay.counter_choice as cc
from sessiontools.cli import main
from tests.conftest import SAMPLES

#: chars/4 is kept for the first (the tokenizer's counts are not needed on a warm run), the second
#: takes o200k (each path is compared over enough requests: 70 and 64 predictions).
FILES = ("pi0-pair-a.jsonl", "pi0-chinese.jsonl")
OPTS = ["--context-window", "24000", "--reserve", "4000", "--keep-recent", "6000", "--jobs", "1", "-f", "json"]


def _no_comparison(*_: Any) -> Any:
    raise AssertionError("the counters were compared again")


def _replay(f: Path, out: Path) -> dict[str, Any]:
    assert main(["replay", str(f), *OPTS, "-o", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("name", FILES)
def test_a_warm_replay_takes_the_kept_choice(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The second run of the same file compares nothing and writes the same bytes; a file with other
    bytes (one line more) is compared again."""
    monkeypatch.setenv("SESSIONTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / name
    shutil.copyfile(SAMPLES / name, f)
    cold = _replay(f, tmp_path / "cold.json")
    choice = cold["runs"][0]["truth_model"]["counter_choice"]
    assert choice["predictions"] >= cc.MIN_CHOICE_REQUESTS and len(choice["errors"]) == 2
    with monkeypatch.context() as m:
        m.setattr(cc, "in_session_errors", _no_comparison)
        warm = _replay(f, tmp_path / "warm.json")
        assert (tmp_path / "warm.json").read_bytes() == (tmp_path / "cold.json").read_bytes()
        assert warm == cold
        with f.open("ab") as fh:  # other bytes: another key
            fh.write(b"\n")
        capsys.readouterr()
        assert main(["replay", str(f), *OPTS, "-o", str(tmp_path / "other.json")]) != 0  # (the file is left out)
        assert "the counters were compared again" in capsys.readouterr().err


def _path(leaf: str = "z", prompts: tuple[float, ...] = (100.0, 180.0, 260.0), n: int = 6,
          extra: tuple[tuple[int, int], ...] = ()) -> Any:
    """A transcript path's shape, as `path_key` reads it: its leaf, sidechain flag, message count and
    each request's context ranges and recorded prompt."""
    from types import SimpleNamespace

    reqs = tuple(SimpleNamespace(context=((0, 2 * (k + 1)), *extra), usage=SimpleNamespace(prompt=p))
                 for k, p in enumerate(prompts))
    return SimpleNamespace(leaf_id=leaf, sidechain=False, messages=tuple(range(n)), requests=reqs)


def test_the_key_is_the_callers_the_rules_and_the_paths(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Outside `cached_choices`, without a token store or with one candidate, nothing is kept; inside,
    the key holds the file's key, the rule, the candidates and the path's shape (leaf, message count,
    each request's context and recorded prompt), so two paths, rules or candidate lists are apart."""
    from sessiontools.tokens import registry

    both = ["chars4", "o200k_base"]
    before = registry._STORE["path"]
    registry.use_token_store(str(tmp_path / "t.sqlite"))
    try:
        a = _path()
        assert cc.path_key(a, "pi-0", both) is None  # outside cached_choices
        with cc.cached_choices("file-1"):
            ka = cc.path_key(a, "pi-0", both)
            assert ka is not None and "file-1" in ka and "pi-0" in ka
            assert cc.path_key(_path(), "pi-0", both) == ka  # the same shape, the same key
            others = [cc.path_key(_path(leaf="y"), "pi-0", both), cc.path_key(_path(n=7), "pi-0", both),
                      cc.path_key(_path(prompts=(100.0, 180.0, 261.0)), "pi-0", both),
                      cc.path_key(_path(extra=((9, 10),)), "pi-0", both),
                      cc.path_key(a, "pi-1", both), cc.path_key(a, "pi-0", ["chars4", "qwen3_5"])]
            assert None not in others and len({ka, *others}) == 7
            assert cc.path_key(a, "pi-0", ["chars4"]) is None  # one candidate: nothing to choose
            with cc.cached_choices(None):
                assert cc.path_key(a, "pi-0", both) is None
            kb = others[2]
            choice = cc.CounterChoice("o200k_base", {"chars4": 0.1, "o200k_base": 0.05}, 3, "why")
            cc._keep_choice(ka, choice)
            assert cc._stored_choice(ka, both) == choice
            assert cc._stored_choice(ka, ["chars4", "qwen3_5"]) is None  # names a counter not among these
            assert cc._stored_choice(kb, both) is None
            # the chosen tokenizer's counts, kept beside the choice, only as they were kept
            assert cc.kept_counts(ka, 6) is None
            cc.keep_counts(ka, [1, 2, 3, 4, 5, 6], 19.0)
            assert cc.kept_counts(ka, 6) == ([1, 2, 3, 4, 5, 6], 19.0)
            assert cc.kept_counts(ka, 7) is None and cc.kept_counts(kb, 6) is None  # another length, key
            registry.truth_result_store().put_result(f"{kb}:counts", b'{"counts": [1, 2.5], "chars4_total": 3}')
            assert cc.kept_counts(kb, 2) is None  # a count not an int
            registry.truth_result_store().put_result(f"{kb}:counts", b'{"counts": [1, 2]')
            assert cc.kept_counts(kb, 2) is None  # not JSON
        registry.use_token_store(None)
        with cc.cached_choices("file-1"):
            assert cc.path_key(a, "pi-0", both) is None  # no store: nothing is kept
    finally:
        registry.use_token_store(before)


def test_a_warm_replay_counts_nothing_with_the_tokenizer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pi0-chinese chooses o200k: its warm run takes the kept counts and asks the tokenizer nothing
    (every way a path's messages are counted with it raises), with byte-identical output."""
    from sessiontools.tokens import registry

    monkeypatch.setenv("SESSIONTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "pi0-chinese.jsonl"
    shutil.copyfile(SAMPLES / f.name, f)
    cold = _replay(f, tmp_path / "cold.json")
    assert cold["runs"][0]["truth_model"]["counter"] == "o200k_base"

    def no_tokenizer(*_: Any, **__: Any) -> Any:
        raise AssertionError("the tokenizer was asked on a warm run")

    with monkeypatch.context() as m:
        for name in ("shared_units_counts", "shared_message_counter", "_shared_counter"):
            m.setattr(registry, name, no_tokenizer)
        m.setattr(cc, "in_session_errors", _no_comparison)
        _replay(f, tmp_path / "warm.json")
    assert (tmp_path / "warm.json").read_bytes() == (tmp_path / "cold.json").read_bytes()
