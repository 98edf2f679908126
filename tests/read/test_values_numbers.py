"""`read.values.number`, `integer` and `real`: the one way the package reads a number it was given
(the wrappers that used to repeat it in the readers, adapters, price catalogue and endpoint are gone)."""

from __future__ import annotations

import pytest

from sessiontools.read.values import integer, number, real

ODD = [None, True, False, "12", [], {}, b"1"]


@pytest.mark.parametrize("v", ODD)
def test_what_is_no_json_number_gives_the_default(v: object) -> None:
    assert number(v) == 0 and integer(v) == 0 and real(v) == 0.0 and type(real(v)) is float
    assert number(v, None) is None and integer(v, None) is None and real(v, None) is None


def test_numbers_are_read_as_their_kind() -> None:
    assert integer(12) == 12 and integer(12.9) == 12 and integer(-0.5) == 0
    assert real(3) == 3.0 and type(real(3)) is float and real(2.5) == 2.5
    assert number(7) == 7 and type(number(7)) is int and number(1.5) == 1.5


@pytest.mark.parametrize("v", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_float_is_no_integer(v: float) -> None:
    """(`int()` of one raises: a number past 1.8e308 in a file reads as infinity.)"""
    assert integer(v) == 0 and integer(v, None) is None
