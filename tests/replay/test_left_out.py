"""What a file's replay returns instead of its runs (`replay.run_document.InsteadOfRun`), made by the
code that knows why (`replay.session.replay_or_left_out`), not read back from an error's words.

- a session whose model has no window anywhere: the replay raises `errors.ModelNotInCatalogue` with
  the model (picklable, as a `--jobs` worker's error), and the file gets one `MissingModel` of it;
- the model comes from the typed error, whatever its message says; an `InputError` that only says
  "is not in the catalogue" is an error, not a missing model;
- a file with no model request gets one `NoReplay` with the reason `NothingToReplay` gave;
- the three markers (`DeferredRecord` too) are one type, each with its `session`.
"""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import Any

import pytest

from sessiontools.errors import InputError, ModelNotInCatalogue, NothingToReplay
from sessiontools.read.sources import load_source
from sessiontools.replay import replay_records
from sessiontools.replay.run_document import DeferredRecord, InsteadOfRun, MissingModel, NoReplay
from sessiontools.replay.session import replay_or_left_out
from tests.folder import pi_session

OPTIONS = dict(windows=None, reserves=[16384], keeps=[20000], policy=None, leaf=None, all_leaves=False,
               summary_tokens=None)


@pytest.fixture
def missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A Pi session of minimax/MiniMax-M2.5 (no window in the catalogue, no Pi or OpenClaw config)."""
    monkeypatch.setenv("OPENCLAW_CONFIG_PATH", str(tmp_path / "no-openclaw.json"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "no-pi"))
    rel, data = pi_session(3)
    p = tmp_path / Path(rel).name
    p.write_bytes(data)
    return load_source(p)


def test_a_model_without_a_window_is_a_typed_error(missing: Any) -> None:
    with pytest.raises(ModelNotInCatalogue) as info:
        replay_records(missing, **OPTIONS)
    assert info.value.model == "minimax/MiniMax-M2.5"
    assert f"model {info.value.model} is not in the catalogue" in str(info.value)
    back = pickle.loads(pickle.dumps(info.value))
    assert (type(back), back.model, str(back)) == (ModelNotInCatalogue, info.value.model, str(info.value))


def test_the_file_gets_one_missing_model(missing: Any) -> None:
    out = replay_or_left_out(missing, replay=replay_records, **OPTIONS)
    assert out == [MissingModel(str(missing.path), "minimax/MiniMax-M2.5")]


def test_the_model_is_the_errors_not_its_words(missing: Any) -> None:
    def worded(source: Any, **_: Any) -> list[Any]:
        raise ModelNotInCatalogue("a message in other words", "some/model")

    assert replay_or_left_out(missing, replay=worded) == [MissingModel(str(missing.path), "some/model")]

    def plain(source: Any, **_: Any) -> list[Any]:
        raise InputError(f"{source.path}: model some/model is not in the catalogue (bundled)")

    with pytest.raises(InputError, match="not in the catalogue"):
        replay_or_left_out(missing, replay=plain)


def test_nothing_to_replay_and_no_message(missing: Any) -> None:
    def nothing(source: Any, **_: Any) -> list[Any]:
        raise NothingToReplay("x: no model request in the file")

    path = str(missing.path)
    assert replay_or_left_out(missing, replay=nothing) == [NoReplay(path, "x: no model request in the file")]
    assert replay_or_left_out(missing, replay=lambda s, **_: []) == [
        NoReplay(path, f"{path}: no message in the file: nothing to replay")]


def test_the_markers_are_one_type() -> None:
    for t in (DeferredRecord, MissingModel, NoReplay):
        assert issubclass(t, InsteadOfRun)
        assert dataclasses.fields(t)[0].name == "session"
