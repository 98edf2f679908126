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


def test_the_key_is_the_callers_and_the_paths(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Outside `cached_choices`, or without a token store, every choice is computed; inside, the key
    holds the file's key, the candidates and the path's chars/4 fit input (two paths apart)."""
    from sessiontools.replay.truth_model import FitInput
    from sessiontools.tokens import registry

    def inp(wanted: dict[int, float]) -> FitInput:
        return FitInput({}, [(at, [], 1, 10 * at) for at in wanted], wanted, [])

    a, b = inp({1: 100.0, 2: 180.0, 3: 260.0}), inp({1: 100.0, 2: 180.0, 3: 261.0})
    assert cc._choice_key(["chars4", "o200k_base"], a) is None
    with cc.cached_choices("file-1"):
        ka, kb = cc._choice_key(["chars4", "o200k_base"], a), cc._choice_key(["chars4", "o200k_base"], b)
        assert ka is not None and kb is not None and ka != kb and "file-1" in ka
        assert cc._choice_key(["chars4", "qwen3_5"], a) != ka
        with cc.cached_choices(None):
            assert cc._choice_key(["chars4", "o200k_base"], a) is None
    before = registry._STORE["path"]
    registry.use_token_store(str(tmp_path / "t.sqlite"))
    try:
        choice = cc.CounterChoice("o200k_base", {"chars4": 0.1, "o200k_base": 0.05}, 3, "why")
        cc._keep_choice(ka, choice)
        assert cc._stored_choice(ka, ["chars4", "o200k_base"]) == choice
        assert cc._stored_choice(ka, ["chars4", "qwen3_5"]) is None  # names a counter not among these
        assert cc._stored_choice(kb, ["chars4", "o200k_base"]) is None
    finally:
        registry.use_token_store(before)
