"""The calibrated estimator's coefficients: least squares, JSON format, lookup and validation."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontools.errors import InputError
from sessiontools.tokens.calibrated import (
    ANY_MODEL,
    Calibration,
    CalibrationError,
    Fit,
    fit_line,
    load_calibration,
    model_key,
    save_calibration,
)


@settings(max_examples=100, deadline=None)
@given(st.floats(-1e4, 1e4), st.floats(0.1, 5), st.lists(st.integers(0, 200_000), min_size=2, max_size=30, unique=True))
def test_fit_line_recovers_an_exact_line(a: float, b: float, xs: list[int]) -> None:
    """Points on y = a + b*x give back a and b."""
    a2, b2 = fit_line(xs, [a + b * x for x in xs])
    assert b2 == pytest.approx(b, rel=1e-6, abs=1e-9)
    assert a2 == pytest.approx(a, rel=1e-6, abs=1e-3)


def test_fit_line_degenerate_cases() -> None:
    """One distinct x: a line through the origin; all x zero: the mean; no points: ValueError."""
    assert fit_line([10, 10], [30, 50]) == (0.0, 4.0)
    assert fit_line([0, 0], [3, 5]) == (4.0, 0.0)
    with pytest.raises(ValueError):
        fit_line([], [])


def test_fit_predict_is_never_negative() -> None:
    """A negative intercept does not produce a negative estimate."""
    fit = Fit("o200k", -500.0, 1.2, 10)
    assert fit.predict(100) == 0.0
    assert fit.predict(1000) == pytest.approx(700.0)


def test_roundtrip_and_stable_bytes() -> None:
    """save -> load gives the same fits; saving twice gives identical bytes; `*` comes last."""
    cal = Calibration({
        ANY_MODEL: Fit("o200k", 10.0, 1.25, 30, 0.05, 0.07),
        "openai/gpt-5": Fit("o200k", 1.0, 1.0, 10, None, None),
        "anthropic/claude-opus-4-5": Fit("chars4", 2000.5, 1.3, 20, 0.04, 0.06),
    })
    data = save_calibration(cal)
    assert data == save_calibration(load_calibration(data))
    doc = orjson.loads(data)
    assert doc["schema_version"] == 1 and doc["kind"] == "calibration"
    assert list(doc["models"]) == ["anthropic/claude-opus-4-5", "openai/gpt-5", "*"]
    assert doc["models"]["anthropic/claude-opus-4-5"] == {
        "x": "chars4", "a": 2000.5, "b": 1.3, "n": 20, "mape_in_sample": 0.04, "mape_out_of_sample": 0.06,
    }
    assert load_calibration(data.decode()) == load_calibration(doc)


def test_lookup_falls_back_to_any_model() -> None:
    """A model without its own fit uses `*`; without `*` there is no fit."""
    own = Fit("o200k", 0.0, 1.1, 5)
    anyf = Fit("o200k", 0.0, 1.3, 9)
    cal = Calibration({"anthropic/claude-opus-4-5": own, ANY_MODEL: anyf})
    assert cal.lookup("anthropic", "claude-opus-4-5") is own
    assert cal.lookup("openai", "gpt-5") is anyf
    assert Calibration({"a/b": own}).lookup("x", "y") is None


def test_model_key_handles_missing_values() -> None:
    """Keys are provider/model with `?` for missing parts."""
    assert model_key("anthropic", "claude") == "anthropic/claude"
    assert model_key(None, "") == "?/?"


@pytest.mark.parametrize(
    "doc, message",
    [
        (b"{not json", "not valid JSON"),
        (b"[]", "JSON object"),
        (b'{"kind": "other", "schema_version": 1, "models": {}}', "kind"),
        (b'{"kind": "calibration", "schema_version": 3, "models": {}}', "schema_version"),
        (b'{"kind": "calibration", "schema_version": 2, "models": {}}', "corpus"),
        (b'{"kind": "calibration", "schema_version": 1}', "models"),
        (b'{"kind": "calibration", "schema_version": 1, "models": {"a/b": {"x": "o200k", "b": 1}}}', "a must be"),
        (b'{"kind": "calibration", "schema_version": 1, "models": {"a/b": {"x": "bpe", "a": 0, "b": 1}}}', "x must be"),
        (b'{"kind": "calibration", "schema_version": 1, "models": {"a/b": {"a": 0, "b": true}}}', "b must be"),
        (b'{"kind": "calibration", "schema_version": 1, "models": {"a/b": {"a": 0, "b": 1, "n": -1}}}', "n must be"),
        (b'{"kind": "calibration", "schema_version": 1, "models": {"a/b": 3}}', "must be an object"),
    ],
)
def test_invalid_documents_are_rejected(doc: bytes, message: str) -> None:
    """Every malformed calibration is a CalibrationError (an InputError) with a clear reason."""
    with pytest.raises(CalibrationError, match=message):
        load_calibration(doc)
    assert issubclass(CalibrationError, InputError)


def test_defaults_for_optional_fields() -> None:
    """x defaults to o200k, n to 0, the MAPEs to None."""
    cal = load_calibration(b'{"kind": "calibration", "schema_version": 1, "models": {"a/b": {"a": 1, "b": 2}}}')
    assert cal.models["a/b"] == Fit("o200k", 1.0, 2.0, 0, None, None)
