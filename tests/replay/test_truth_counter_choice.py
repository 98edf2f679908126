"""`replay --truth-tokenizer auto`: the counter chosen per session by how well its fit on the session's
earlier requests predicts the later ones (`replay.counter_choice.choose_counter`, `in_session_errors`)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from sessiontools.replay.counter_choice import MIN_CHOICE_REQUESTS, choose_counter, in_session_errors
from sessiontools.replay.priors import TruthPrior
from sessiontools.replay.truth_model import CHARS4, FitInput, fit_overhead_ratio


def _inp(sizes: list[int], truth: list[float], overhead: float = 900.0) -> FitInput:
    """A growing context of one unit per request: request k's context is units 0..k, its recorded
    prompt the overhead plus the units' true tokens; `sizes` is the counter's size of each unit."""
    units = list(range(len(sizes)))
    counted = dict(enumerate(sizes))
    contexts = [(k, units, k + 1, float(sum(sizes[: k + 1]))) for k in units]
    wanted = {k: overhead + sum(truth[: k + 1]) for k in units}
    return FitInput(counted, contexts, wanted, key=lambda x: x)


def _session(n: int, seed: int = 1) -> tuple[list[float], list[int], list[int]]:
    """True tokens of n units, a counter that tracks them (within 2%) and one that does not (+-60%)."""
    rng = random.Random(seed)
    truth = [float(rng.randint(50, 3000)) for _ in range(n)]
    near = [round(t * 0.8 * rng.uniform(0.98, 1.02)) for t in truth]
    far = [round(t * rng.uniform(0.4, 1.6)) for t in truth]
    return truth, near, far


def test_in_session_errors_are_the_prefix_fits_of_fit_overhead_ratio() -> None:
    """The O(1) update gives what fitting every prefix again gives (the lab's definition)."""
    truth, near, far = _session(60, seed=3)
    for sizes in (near, far):
        inp = _inp(sizes, truth)
        xs = [x for _, _, _, x in inp.contexts]
        ys = [inp.wanted[k] for k, _, _, _ in inp.contexts]
        want = []
        for k in range(1, len(xs)):
            fit = fit_overhead_ratio(xs[:k], ys[:k])
            want.append(abs(fit.overhead + fit.ratio * xs[k] - ys[k]) / ys[k])
        assert in_session_errors(inp) == pytest.approx(want, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("near_first", [True, False])
def test_auto_picks_the_counter_that_predicts_the_session_best(near_first: bool) -> None:
    truth, near, far = _session(40)
    inputs = {"a": _inp(near if near_first else far, truth), "b": _inp(far if near_first else near, truth)}
    name, inp, choice = choose_counter(["a", "b"], inputs.__getitem__)
    assert name == ("a" if near_first else "b") and inp is inputs[name]
    assert choice is not None and choice.counter == name and choice.predictions == 39
    assert choice.errors[name] < choice.errors["b" if near_first else "a"]
    assert choice.to_dict()["errors"].keys() == {"a", "b"}


def test_auto_keeps_the_first_counter_on_a_tie() -> None:
    truth, near, _ = _session(30)
    inputs = {CHARS4: _inp(near, truth), "o200k_base": _inp(near, truth)}
    assert choose_counter([CHARS4, "o200k_base"], inputs.__getitem__)[0] == CHARS4


def test_too_few_requests_keep_chars4_without_counting_with_the_tokenizer() -> None:
    truth, near, far = _session(MIN_CHOICE_REQUESTS - 1)
    asked = []

    def inputs(name: str) -> FitInput:
        asked.append(name)
        return _inp(far if name == CHARS4 else near, truth)

    name, _, choice = choose_counter([CHARS4, "o200k_base"], inputs)
    assert name == CHARS4 and asked == [CHARS4]  # the better counter is never counted: nothing to decide on
    assert choice is not None and choice.errors == {} and "too few" in choice.note


def test_too_few_requests_take_the_counter_of_the_run_s_prior() -> None:
    truth, near, far = _session(MIN_CHOICE_REQUESTS - 1)
    inputs = {CHARS4: _inp(far, truth), "o200k_base": _inp(near, truth)}
    prior = TruthPrior(1.2, "model lab/x, 3 sessions of this run", "o200k_base")
    name, inp, choice = choose_counter([CHARS4, "o200k_base"], inputs.__getitem__, prior)
    assert name == "o200k_base" and inp is inputs["o200k_base"]
    assert choice is not None and "prior" in choice.note
    chars4_prior = TruthPrior(1.2, "model lab/x, 3 sessions of this run", CHARS4)
    assert choose_counter([CHARS4, "o200k_base"], inputs.__getitem__, chars4_prior)[0] == CHARS4


def test_one_candidate_is_no_choice() -> None:
    truth, near, _ = _session(30)
    name, _, choice = choose_counter(["o200k_base"], {"o200k_base": _inp(near, truth)}.__getitem__)
    assert name == "o200k_base" and choice is None


def test_a_warm_run_answers_from_the_token_store_and_loads_no_vocabulary(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """With the CLI's token cache (`use_token_store`), a second process's fit of the same session takes
    every tokenizer count from the store: the same model, and no vocabulary loaded."""
    from sessiontools.read.sources import load_source
    from sessiontools.tokens import registry, vocab
    from tests.conftest import SAMPLES
    from tests.replay.walked import pi_truth

    s = load_source(SAMPLES / "pi0-chinese.jsonl")
    path = str(tmp_path / "tokens.sqlite")
    monkeypatch.setattr(registry, "_COUNTERS", {})
    monkeypatch.setattr(registry, "_STORE", {"path": None, "store": None})
    registry.use_token_store(path)
    cold = pi_truth(s)
    assert cold.counter == "o200k_base" and (tmp_path / "tokens.sqlite").is_file()
    # A new process: no counter, no loaded vocabulary; loading one would fail.
    monkeypatch.setattr(registry, "_COUNTERS", {})
    monkeypatch.setattr(registry, "_STORE", {"path": None, "store": None})

    def no_vocabulary(*_: object) -> None:
        raise AssertionError("a vocabulary was loaded")

    monkeypatch.setattr(vocab, "get_encoding", no_vocabulary)
    monkeypatch.setattr(registry, "load", no_vocabulary)
    registry.use_token_store(path)
    warm = pi_truth(s)
    assert warm.record() == cold.record()


def test_the_table_notes_say_the_counter_and_why() -> None:
    from dataclasses import replace

    from sessiontools.replay.counter_choice import CounterChoice
    from sessiontools.replay.records import ReplaySettings
    from sessiontools.report.replay import truth_counter_notes
    from sessiontools.testing import run_record

    def rec(session: str, counter: str | None, note: str | None) -> Any:
        r = run_record(ReplaySettings(64000, 16384, 20000, "pi-0"), agent="pi", session=session)
        choice = CounterChoice(counter or "chars4", {}, 9, note) if note else None
        return replace(r, truth_model=replace(r.truth_model, counter=counter, counter_choice=choice))

    (one,) = truth_counter_notes([rec("a", "o200k_base", "o200k: it predicts ... better"), rec("a", "o200k_base", "x")])
    assert one == "truth counter: o200k (auto: o200k: it predicts ... better)"
    (many,) = truth_counter_notes([rec("a", "o200k_base", "n"), rec("b", "chars4", "n"), rec("c", "chars4", "n")])
    assert many.startswith("truth counter (auto, per session): o200k 1 session(s), chars/4 2 session(s)")
    assert truth_counter_notes([rec("a", None, None)]) == ["truth counter: chars/4"]
