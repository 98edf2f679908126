"""Issue 30: `calibrated_session`, the calibrated model corrected per session from the session's own
earlier requests (a time split inside each session; `analysis/estimate/session_level.py`)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from sessiontools.analysis.estimate import EstimateErrorOptions, estimate_error
from sessiontools.analysis.estimate.session_level import session_predictions, time_order
from sessiontools.tokens.features import FEATURES, MODEL_FEATURE
from tests.analysis.test_estimate_calibration import o200k_session

#: A session level over (overhead, the model's tokens): the parent knows neither the session's
#: overhead nor its scale.
TOK = FEATURES.index(MODEL_FEATURE)
MASK = tuple(n in ("overhead", MODEL_FEATURE) for n in FEATURES)
PARENT = np.array([1000.0 if n == "overhead" else 1.0 if n == MODEL_FEATURE else 0.0 for n in FEATURES])


def _affine(n: int, scale: float = 1.3, offset: float = 500.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(x: overhead 1 and the tokens, A = offset + scale * tokens)."""
    rng = np.random.default_rng(seed)
    tokens = np.cumsum(rng.uniform(200, 900, n)) + 2000
    x = np.zeros((n, len(FEATURES)))
    x[:, 0] = 1.0
    x[:, TOK] = tokens
    return x, offset + scale * tokens


def _predict(x: np.ndarray, y: np.ndarray, units: list, order=None, pseudo: float = 2.0,
             parent: np.ndarray | None = None, forget: float | None = None) -> np.ndarray:
    parent = np.tile(PARENT, (len(y), 1)) if parent is None else parent
    if forget is None:
        return session_predictions(x, y, parent, units, order, MASK, pseudo)
    return session_predictions(x, y, parent, units, order, MASK, pseudo, forget)


def test_the_first_request_of_a_unit_is_the_parent_prediction() -> None:
    x, y = _affine(6)
    out = _predict(x, y, ["a", "b", "a", "b", "c", "a"])
    for i in (0, 1, 4):  # first of a, b, c
        assert out[i] == pytest.approx(PARENT[0] + PARENT[TOK] * x[i, TOK])
    assert out[2] != pytest.approx(PARENT[0] + PARENT[TOK] * x[2, TOK])


def test_no_request_sees_its_own_or_a_later_usage() -> None:
    x, y = _affine(30)
    units = ["s"] * 30
    base = _predict(x, y, units)
    for i in (0, 7, 29):
        changed = y.copy()
        changed[i:] *= 5.0  # this request's usage and every later one's
        out = _predict(x, changed, units)
        np.testing.assert_array_equal(out[:i + 1], base[:i + 1])
        if i < 29:
            assert out[i + 1] != base[i + 1]  # the next request does learn from it


def test_the_session_level_converges_and_shrinks_toward_the_parent_when_data_are_few() -> None:
    x, y = _affine(80)
    out = _predict(x, y, ["s"] * 80, forget=1.0)  # every earlier request alike: exact data, ever closer
    err = np.abs(out - y) / y
    parent_err = np.abs(PARENT[0] + PARENT[TOK] * x[:, TOK] - y) / y
    assert err[1] < parent_err[1]  # one request already helps...
    assert err[1] > 0.01  # ...but is shrunk toward the parent
    # many requests: the session's own overhead and scale take over, ever more closely
    assert err[-1] < min(0.01, parent_err[-1] / 20)
    assert (np.diff(err[-30:]) < 0).all()
    strong = _predict(x, y, ["s"] * 80, pseudo=1e9)
    np.testing.assert_allclose(strong, PARENT[0] + PARENT[TOK] * x[:, TOK], rtol=1e-4)  # the level above
    # with forgetting (the default) the recent requests span a narrower range: close, less exactly
    default = np.abs(_predict(x, y, ["s"] * 80) - y) / y
    assert err[1] < parent_err[1] and default[-1] < min(0.02, parent_err[-1] / 10)


def test_units_do_not_share_their_session_level() -> None:
    x1, y1 = _affine(20, 1.3, 500.0, seed=1)
    x2, y2 = _affine(20, 0.8, 0.0, seed=2)
    alone = _predict(x2, y2, ["y"] * 20)
    mixed = _predict(np.vstack([x1, x2]), np.concatenate([y1, y2]), ["x"] * 20 + ["y"] * 20)
    np.testing.assert_array_equal(mixed[20:], alone)


def test_a_missing_parent_is_neither_predicted_nor_learnt_from() -> None:
    x, y = _affine(10)
    parent = np.tile(PARENT, (10, 1))
    parent[3] = np.nan
    out = _predict(x, y, ["s"] * 10, parent=parent)
    assert math.isnan(out[3])
    skip = _predict(np.delete(x, 3, axis=0), np.delete(y, 3), ["s"] * 9)
    np.testing.assert_allclose(np.delete(out, 3), skip)


def test_earlier_means_earlier_in_time_not_in_the_frame() -> None:
    order = time_order([30, 10, None, 20])  # the missing time takes the one before it (10)
    assert order.tolist() == [1, 2, 3, 0]
    x, y = _affine(4)
    out = _predict(x, y, ["s"] * 4, order)
    assert out[1] == pytest.approx(PARENT[0] + PARENT[TOK] * x[1, TOK])  # the earliest: the parent's prediction
    changed = y.copy()
    changed[0] *= 3  # the latest request (first row) cannot change any other prediction
    np.testing.assert_array_equal(_predict(x, changed, ["s"] * 4, order)[1:], out[1:])


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


def test_the_calibrated_model_feature_of_a_family_that_calibrates_worse_is_o200k() -> None:
    """`hierarchy.calibration_feature`: DeepSeek rows feed o200k's counts to the calibrated model
    (whole context and trailing part); the `model` estimator keeps DeepSeek's own count."""
    from sessiontools.analysis.estimate.hierarchy import calibration_feature, design
    from sessiontools.tokens.features import FEATURES

    f = pl.DataFrame({"model_tokenizer": ["deepseek_v4", "qwen", "o200k_base", None],
                      "est_model": [10, 20, 30, 40], "est_o200k": [11, 21, 31, 41],
                      "t_model": [1, 2, 3, 4], "t_o200k": [5, 6, 7, 8],
                      "messages": [1] * 4, "images": [0] * 4, "actual": [100] * 4,
                      **{c: [0] * 4 for c in ("f_cjk", "f_prose", "f_code", "f_digits", "f_space")}})
    g = calibration_feature(f)
    assert g["f_model"].to_list() == [11, 20, 30, 40]
    assert g["t_f_model"].to_list() == [5, 2, 3, 4]
    assert g["est_model"].to_list() == [10, 20, 30, 40]
    x, _, _ = design(g)
    assert x[:, FEATURES.index("model")].tolist() == [11, 20, 30, 40]


def test_a_loaded_feature_calibration_is_the_parent_of_the_session_level() -> None:
    """With `--calibration` (schema 2) the file's model level is the parent: the first request of a
    session is the file's prediction, later ones learn the session's overhead; schema 1 (a + b * x)
    has no feature coefficients to start from: null."""
    from sessiontools.tokens.calibrated import Calibration, Fit

    train, test = _sessions(), [o200k_session("new", "english", requests=14, overhead=5000, seed=9)]
    fitted = estimate_error(train, EstimateErrorOptions(estimators=("o200k", "calibrated"))).fitted
    f = estimate_error(test, EstimateErrorOptions(estimators=("o200k", "calibrated", "calibrated_session"),
                                                  calibration=fitted)).frame
    assert f["est_calibrated_session"][0] == f["est_calibrated"][0]
    loaded = f.select(pl.col("rel_err_calibrated").abs().mean()).item()
    session = f.select(pl.col("rel_err_calibrated_session").abs().mean()).item()
    assert session < loaded / 2
    linear = Calibration({"*": Fit("o200k", 150.0, 1.0, 10)})
    f1 = estimate_error(test, EstimateErrorOptions(estimators=("o200k", "calibrated", "calibrated_session"),
                                                   calibration=linear)).frame
    assert f1["est_calibrated"].null_count() == 0 and f1["est_calibrated_session"].null_count() == len(f1)


def test_older_requests_are_forgotten_so_a_drift_in_the_hidden_part_is_followed() -> None:
    """The hidden part of a session changes while it runs (OpenClaw injects memory, prunes or
    truncates tool results; a harness update): after a jump of the overhead, the session level with
    forgetting (`FORGET` < 1) follows within a few requests; without it (1.0) the early requests
    hold it back. Forgetting never lets a request see its own or a later usage."""
    from sessiontools.analysis.estimate.session_level import FORGET

    assert 0 < FORGET < 1
    x, y = _affine(60, 1.2, 500.0, seed=3)
    y[30:] -= 0.4 * x[30:, TOK] - 4000.0  # from request 30 on: another scale and overhead
    parent = np.tile(PARENT, (60, 1))
    forgetting = session_predictions(x, y, parent, ["s"] * 60, None, MASK, 2.0, FORGET)
    remembering = session_predictions(x, y, parent, ["s"] * 60, None, MASK, 2.0, 1.0)
    err_f = np.abs(forgetting - y) / y
    err_r = np.abs(remembering - y) / y
    assert err_f[40:].mean() < err_r[40:].mean() / 3
    assert err_f[45:].max() < 0.05 and (np.diff(err_f[45:]) < 0).all()  # and still closing in
    np.testing.assert_array_equal(forgetting[:1], remembering[:1])  # the first: the parent's
    changed = y.copy()
    changed[20:] *= 3.0
    again = session_predictions(x, changed, parent, ["s"] * 60, None, MASK, 2.0, FORGET)
    np.testing.assert_array_equal(again[:21], forgetting[:21])


def test_forget_one_is_the_plain_sum_of_earlier_requests() -> None:
    from sessiontools.analysis.estimate.hierarchy import solve, sums

    x, y = _affine(12, seed=4)
    out = session_predictions(x, y, np.tile(PARENT, (12, 1)), ["s"] * 12, None, MASK, 2.0, 1.0)
    s = sums(x[:11], y[:11], 1.0 / y[:11] ** 2)
    coef = np.asarray(solve(s, tuple(PARENT), 2.0, MASK).coef)
    assert out[11] == pytest.approx(max(0.0, float(coef @ x[11])), rel=1e-9)
