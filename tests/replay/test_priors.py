"""Issue 12, cause 3: the truth fit's prior comes from the run's other sessions (model, else
provider, else the whole run), not only from a fixed default. A one-request session replayed among
Chinese sessions of its model is shrunk toward their ratio (about 2.3), not toward 1.0."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiontools.cli import main
from sessiontools.read.sources import load_source
from sessiontools.replay import replay_records
from sessiontools.replay.priors import MIN_SESSIONS, PriorTable, needs_prior, pooled_priors
from sessiontools.replay.run_document import DeferredRecord, RunRecord, TruthRecord
from sessiontools.replay.truth_model import PRIOR_RATIO
from tests.conftest import SAMPLES

GRID = ["--context-window", "16000", "--reserve", "3000", "--keep-recent", "4000"]


def _rec(session: str, model: str, ratio: float, dominated: bool) -> DeferredRecord:
    """A session's fit as the priors read it (a first pass's record of it)."""
    return DeferredRecord(session, "pi", model, TruthRecord(0, ratio, 0, 0, 0, 0, dominated))


def test_pooled_by_model_then_provider_then_run() -> None:
    recs = [_rec("a", "p/m1", 2.0, False), _rec("a", "p/m1", 9.0, False),  # one session counts once
            _rec("b", "p/m1", 3.0, False), _rec("c", "p/m2", 1.0, False), _rec("d", "q/x", 1.5, False),
            _rec("few", "p/m1", 1.0, True), _rec("few2", "p/m3", 1.0, True), _rec("few3", "r/z", 1.0, True)]
    table = pooled_priors(recs)
    assert MIN_SESSIONS == 2
    assert table.lookup("p/m1").ratio == 2.5  # type: ignore[union-attr]  # median of a, b
    assert table.lookup("p/m3").ratio == 2.0  # type: ignore[union-attr]  # provider p: a, b, c
    assert "provider p" in table.lookup("p/m3").source  # type: ignore[union-attr]
    assert table.lookup("r/z").ratio == 1.75  # type: ignore[union-attr]  # the run: 2, 3, 1, 1.5
    assert needs_prior(recs, table) == ["few", "few2", "few3"]


def test_too_few_sessions_give_no_prior() -> None:
    table = pooled_priors([_rec("a", "p/m", 2.0, False), _rec("b", "p/m", 1.0, True)])
    assert table == PriorTable({}, {}, None) and needs_prior([_rec("b", "p/m", 1.0, True)], table) == []


@pytest.fixture()
def chinese_dir(tmp_path: Path) -> Path:
    for name in ("pi0-chinese.jsonl", "pi0-rough-chinese.jsonl", "pi0-few-pseudo.jsonl"):
        shutil.copy(SAMPLES / name, tmp_path / name)
    return tmp_path


def test_one_request_session_takes_its_models_ratio(chinese_dir: Path) -> None:
    out = chinese_dir / "r.json"
    assert main(["replay", str(chinese_dir), *GRID, "--format", "json", "-o", str(out), "--jobs", "1",
                 "--truth-tokenizer", "chars4"]) == 0
    runs = {Path(r["session"]).name: r for r in json.loads(out.read_text())["runs"]}
    typed = {n: RunRecord.from_dict(r) for n, r in runs.items()}
    ratios = sorted(runs[n]["truth_model"]["ratio_to_chars4"] for n in ("pi0-chinese.jsonl", "pi0-rough-chinese.jsonl"))
    few = runs["pi0-few-pseudo.jsonl"]["truth_model"]
    assert few["prior_dominated"] and few["requests_fitted"] == 1
    # Shrunk toward the median of its model's two Chinese sessions, not toward the default 1.0.
    assert abs(few["ratio_to_chars4"] - sum(ratios) / 2) < 0.05 and sum(ratios) / 2 > PRIOR_RATIO + 1
    assert any("learnt from model lab/lab-model, 2 sessions" in n for n in few["notes"])
    # The same as replaying that file with the pooled table directly (one rule, not a CLI special case).
    table = pooled_priors([r for n, r in typed.items() if n != "pi0-few-pseudo.jsonl"])
    (direct,) = replay_records(load_source(chinese_dir / "pi0-few-pseudo.jsonl"), windows=[16000], reserves=[3000],
                               keeps=[4000], policy=None, priors=table, truth_tokenizer="chars4")
    assert direct.truth_model.to_dict() == few


def test_a_session_too_short_to_choose_takes_the_counter_of_its_models_prior(chinese_dir: Path) -> None:
    """`--truth-tokenizer auto` (the default): both Chinese sessions predict their own requests better
    with o200k; the one-request session cannot tell, and takes o200k with their pooled o200k ratio."""
    out = chinese_dir / "r.json"
    assert main(["replay", str(chinese_dir), *GRID, "--format", "json", "-o", str(out), "--jobs", "1"]) == 0
    runs = {Path(r["session"]).name: r["truth_model"] for r in json.loads(out.read_text())["runs"]}
    long = [runs[n] for n in ("pi0-chinese.jsonl", "pi0-rough-chinese.jsonl")]
    assert all(tm["counter"] == "o200k_base" and tm["counter_choice"]["predictions"] > 30 for tm in long)
    few = runs["pi0-few-pseudo.jsonl"]
    assert few["counter"] == "o200k_base" and few["counter_choice"]["predictions"] == 0
    assert "the counter of the prior (model lab/lab-model, 2 sessions" in few["counter_choice"]["note"]
    mean = sum(tm["ratio_to_chars4"] for tm in long) / 2
    assert abs(few["ratio_to_chars4"] - mean) < 0.05


def test_alone_it_keeps_the_default_prior(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    f = SAMPLES / "pi0-few-pseudo.jsonl"
    assert main(["replay", str(f), *GRID, "--format", "json", "-o", str(out)]) == 0
    (run,) = json.loads(out.read_text())["runs"]
    assert run["truth_model"]["ratio_to_chars4"] == PRIOR_RATIO


def test_the_first_pass_only_fits_a_prior_dominated_session(chinese_dir: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24: priors are learnt in a cheap first pass. A prior-dominated session is fitted, not
    replayed (one deferred record), and replayed once with the learnt priors; the records are those of
    replaying it twice as before, and no other session is replayed again."""
    import sessiontools.replay.transcripts as transcripts_mod
    from sessiontools.replay.priors import refit_with_priors

    kw = dict(windows=[16000], reserves=[3000], keeps=[4000], policy=None, leaf=None, all_leaves=False,
              summary_tokens=None, timeline=True)
    files = sorted(chinese_dir.glob("*.jsonl"))
    walked: list[str] = []
    real = transcripts_mod._runs

    def counting(grid, *rest):  # type: ignore[no-untyped-def]
        walked.extend(grid.path.leaf_id or "" for _ in grid.settings)  # one walk per setting
        return real(grid, *rest)

    monkeypatch.setattr(transcripts_mod, "_runs", counting)
    first = [replay_records(load_source(f), defer_prior_dominated=True, **kw) for f in files]
    deferred = [recs[0].session for recs in first if isinstance(recs[0], DeferredRecord)]
    assert [Path(s).name for s in deferred] == ["pi0-few-pseudo.jsonl"]
    assert walked and len(walked) == len(files) - 1  # one setting each, the deferred one not walked
    again: list[str] = []

    def replay_again(s: str, table: PriorTable) -> list[Any]:
        again.append(s)
        return replay_records(load_source(s), priors=table, **kw)

    new = refit_with_priors(first, replay_again)
    assert again == deferred and len(walked) == len(files)  # every session walked once
    monkeypatch.setattr(transcripts_mod, "_runs", real)
    old = refit_with_priors([replay_records(load_source(f), **kw) for f in files],
                            lambda s, table: replay_records(load_source(s), priors=table, **kw))
    assert new == old
