"""Issue 30: `calibrated_session`, the calibrated model corrected per session from the session's own
earlier requests (a time split inside each session; `analysis/estimate/session_level.py`)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from sessiontools.analysis.estimate import EstimateErrorOptions, estimate_error
from sessiontools.analysis.estimate.session_level import session_predictions, time_order
from tests.analysis.test_estimate_calibration import o200k_session


def _affine(n: int, scale: float = 1.3, offset: float = 500.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    parent = np.cumsum(rng.uniform(200, 900, n)) + 2000
    return parent, scale * parent + offset


def test_the_first_request_of_a_unit_is_the_parent_prediction() -> None:
    parent, actual = _affine(6)
    units = ["a", "b", "a", "b", "c", "a"]
    out = session_predictions(parent, actual, units)
    for i in (0, 1, 4):  # first of a, b, c
        assert out[i] == parent[i]
    assert out[2] != parent[2] and out[3] != parent[3]


def test_no_request_sees_its_own_or_a_later_usage() -> None:
    parent, actual = _affine(30)
    units = ["s"] * 30
    base = session_predictions(parent, actual, units)
    for i in (0, 7, 29):
        changed = actual.copy()
        changed[i:] *= 5.0  # this request's usage and every later one's
        out = session_predictions(parent, changed, units)
        np.testing.assert_array_equal(out[:i + 1], base[:i + 1])
        if i < 29:
            assert out[i + 1] != base[i + 1]  # the next request does learn from it


def test_the_correction_converges_on_the_session_and_shrinks_toward_the_parent_when_data_are_few() -> None:
    parent, actual = _affine(80)
    out = session_predictions(parent, actual, ["s"] * 80)
    err = np.abs(out - actual) / actual
    parent_err = np.abs(parent - actual) / actual
    assert err[1] < parent_err[1]  # one request already helps...
    assert err[1] > 0.02  # ...but is shrunk toward the parent
    assert err[-10:].max() < 0.01  # many requests: the session's own overhead and scale are learnt
    strong = session_predictions(parent, actual, ["s"] * 80, pseudo_offset=1e9, pseudo_scale=1e9)
    np.testing.assert_allclose(strong, parent, rtol=1e-6)  # infinite shrinkage = the hierarchy above


def test_units_do_not_share_their_correction() -> None:
    p1, a1 = _affine(20, 1.3, 500.0, seed=1)
    p2, a2 = _affine(20, 0.8, 0.0, seed=2)
    alone = session_predictions(p2, a2, ["y"] * 20)
    parent = np.concatenate([p1, p2])
    actual = np.concatenate([a1, a2])
    mixed = session_predictions(parent, actual, ["x"] * 20 + ["y"] * 20)
    np.testing.assert_array_equal(mixed[20:], alone)


def test_a_missing_parent_is_neither_predicted_nor_learnt_from() -> None:
    parent, actual = _affine(10)
    holes = parent.copy()
    holes[3] = np.nan
    out = session_predictions(holes, actual, ["s"] * 10)
    assert math.isnan(out[3])
    skip = session_predictions(np.delete(parent, 3), np.delete(actual, 3), ["s"] * 9)
    np.testing.assert_allclose(np.delete(out, 3), skip)


def test_earlier_means_earlier_in_time_not_in_the_frame() -> None:
    order = time_order([30, 10, None, 20])  # the missing time takes the one before it (10)
    assert order.tolist() == [1, 2, 3, 0]
    parent, actual = _affine(4)
    out = session_predictions(parent, actual, ["s"] * 4, order)
    assert out[1] == parent[1]  # the earliest request is the parent's prediction
    changed = actual.copy()
    changed[0] *= 3  # the latest request (first row) cannot change any other prediction
    np.testing.assert_array_equal(session_predictions(parent, changed, ["s"] * 4, order)[1:], out[1:])


def _sessions(n: int = 14) -> list:
    """Sessions of one model whose hidden overhead differs (what no file records)."""
    return [o200k_session(f"s{k}", "english", requests=n, overhead=ov, seed=k)
            for k, ov in enumerate((150, 2500, 6000, 400))]


def _frame(sessions: list) -> pl.DataFrame:
    rep = estimate_error(sessions, EstimateErrorOptions(estimators=("o200k", "calibrated", "calibrated_session")))
    return rep.frame


def test_the_session_level_learns_each_sessions_hidden_overhead() -> None:
    f = _frame(_sessions())
    first = f.group_by("session", maintain_order=True).head(1)
    assert (first["est_calibrated_session"] == first["est_calibrated"]).all()
    mape = f.select((pl.col("rel_err_calibrated").abs().mean()).alias("loso"),
                    (pl.col("rel_err_calibrated_session").abs().mean()).alias("ts")).row(0, named=True)
    assert mape["loso"] > 0.05  # other sessions cannot tell this session's overhead
    assert mape["ts"] < mape["loso"] / 2


def test_end_to_end_a_session_cut_short_keeps_its_predictions() -> None:
    """The held-out session's tree is fitted on the other sessions and its correction on its own
    earlier requests only: dropping its later requests changes none of its earlier predictions."""
    full = _sessions()
    short = [*full[:3], o200k_session("s3", "english", requests=6, overhead=400, seed=3)]
    a = _frame(full).filter(pl.col("session") == "s3.jsonl").head(6)
    b = _frame(short).filter(pl.col("session") == "s3.jsonl")
    assert len(b) == 6
    assert a["est_calibrated_session"].to_list() == b["est_calibrated_session"].to_list()


@pytest.mark.parametrize("estimators", [("calibrated_session",), ("o200k", "calibrated_session")])
def test_calibrated_session_alone_is_computed(estimators: tuple[str, ...]) -> None:
    rep = estimate_error(_sessions(12), EstimateErrorOptions(estimators=estimators))
    assert rep.frame["est_calibrated_session"].null_count() == 0
