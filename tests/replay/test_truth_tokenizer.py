"""Issue 30's last item: the one truth model counts with a tokenizer when asked
(`replay --truth-tokenizer`), for every agent and both walks, with priors in the fit's own units."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sessiontools.policies.registry import own_policy
from sessiontools.read.sources import load_source
from sessiontools.replay.neutral import fit_neutral_truth
from sessiontools.replay.priors import TruthPrior, pooled_priors
from sessiontools.replay.run_document import DeferredRecord, TruthRecord
from sessiontools.tokens.registry import shared_message_counter
from sessiontools.transcript.load import transcript_of
from tests.conftest import SAMPLES
from tests.replay.walked import pi_truth


@pytest.mark.parametrize("name", ["pi0-chinese", "pi1-pair-a"])
def test_a_pi_session_counts_with_the_tokenizer_asked(name: str) -> None:
    """With o200k as the counter, a Pi session's fit counts Pi's own message objects with it: the
    counts differ from chars/4's, and the model says which counter it used."""
    s = load_source(SAMPLES / f"{name}.jsonl")
    o200k, plain = pi_truth(s, tokenizer="o200k"), pi_truth(s, tokenizer="chars4")
    assert o200k.counter == "o200k_base" and plain.counter == "chars4"
    assert o200k.record().counter == "o200k_base" and "counter" not in plain.record().to_dict()
    assert o200k.ratio != pytest.approx(plain.ratio, rel=1e-3)
    t = transcript_of(s)
    path = t.paths[0]
    count = shared_message_counter("o200k_base", s.pi_version)
    m = next(m for m in path.messages if m.raw)
    assert o200k.counted[m.index] == count(m.raw) != plain.counted[m.index]


def test_other_agents_count_their_text_units_with_the_tokenizer() -> None:
    from sessiontools.tokens.registry import load

    t = transcript_of(load_source(SAMPLES / "codex" / "codex-pair-a.jsonl"))
    path = t.paths[0]
    truth = fit_neutral_truth(path, None, None, own_policy(t, path), tokenizer="o200k")
    o200k = load("o200k_base")
    m = next(m for m in path.messages if m.text)
    assert truth.counted[m.index] == sum(o200k(u.text) for u in m.units if u.text)
    assert truth.counter == "o200k_base"


def _record(session: str, ratio: float, counter: str | None, dominated: bool = False) -> DeferredRecord:
    """A session's fit as the priors read it (a first pass's record of it)."""
    return DeferredRecord(session, "pi", "lab/lab-model", TruthRecord(0, ratio, 0, 0, 0, 0, dominated, counter=counter))


def test_priors_are_pooled_and_applied_in_their_own_units() -> None:
    """Ratios of fits that counted with o200k are pooled apart from chars/4 ones; a fit applies only a
    prior of its own units, and says so when it drops one."""
    recs = [_record("a", 2.5, None), _record("b", 2.7, None), _record("c", 1.1, "o200k_base"),
            _record("d", 1.3, "o200k_base"), _record("e", 1.2, "o200k_base"), _record("f", 9.0, None, True)]
    table = pooled_priors(recs)
    got = table.lookup("lab/lab-model", "o200k_base")
    assert got is not None and got.counter == "o200k_base" and got.ratio == pytest.approx(1.2)
    chars = table.lookup("lab/lab-model", "chars4")
    assert chars is not None and chars.ratio == pytest.approx(2.6)
    s = load_source(SAMPLES / "pi0-few-pseudo.jsonl")
    fitted = pi_truth(s, prior=chars, tokenizer="o200k")
    assert fitted.prior is None and any("learnt in chars4 units, is not applied" in n for n in fitted.notes)
    kept = pi_truth(s, prior=TruthPrior(1.2, "model lab/lab-model", "o200k_base"), tokenizer="o200k")
    assert kept.prior is not None and kept.ratio == pytest.approx(1.2, rel=0.2)


def test_replay_takes_the_truth_tokenizer_from_the_cli() -> None:
    from sessiontools.cli import app

    args = ["replay", str(SAMPLES / "pi0-chinese.jsonl"), "--context-window", "16k", "--reserve", "4000",
            "--keep-recent", "2000", "-f", "json"]
    base = json.loads(CliRunner().invoke(app, [*args, "--truth-tokenizer", "chars4"]).stdout)["runs"][0]["truth_model"]
    res = CliRunner().invoke(app, [*args, "--truth-tokenizer", "model"])
    assert res.exit_code == 0, res.output
    tm = json.loads(res.stdout)["runs"][0]["truth_model"]
    assert "counter" not in base and tm["counter"] == "o200k_base" and "counter_choice" not in tm
    assert any("o200k" in n for n in tm["notes"])
    auto = json.loads(CliRunner().invoke(app, args).stdout)["runs"][0]["truth_model"]  # the default: auto
    assert auto["counter"] == "o200k_base" and auto["counter_choice"]["predictions"] == 64
    assert auto["counter_choice"]["errors"]["o200k_base"] < auto["counter_choice"]["errors"]["chars4"]
    assert {k: v for k, v in auto.items() if k != "counter_choice"} == tm
    bad = CliRunner().invoke(app, [*args, "--truth-tokenizer", "nope"])
    assert bad.exit_code == 2


def test_a_text_known_by_its_length_is_scaled_to_the_counters_units() -> None:
    """`text_tokens(chars)` (Pi's file lists, summarisation prompts: texts the walk knows only by length)
    is chars/4 times the fitted ratio, and, under another counter, times the session's units of that
    counter per chars/4 token: on Chinese text o200k's ratio alone (about 1) would price it at a
    third of what chars/4's fit (about 2.5) says."""
    s = load_source(SAMPLES / "pi0-chinese.jsonl")
    plain, o200k = pi_truth(s, tokenizer="chars4"), pi_truth(s, tokenizer="o200k")
    assert plain.chars4_scale == 1.0 and plain.text_tokens(4000) == pytest.approx(plain.ratio * 1000)
    assert o200k.chars4_scale > 1.5
    assert o200k.text_tokens(4000) == pytest.approx(plain.text_tokens(4000), rel=0.15)
    assert o200k.ratio * 1000 < 0.7 * plain.text_tokens(4000)
