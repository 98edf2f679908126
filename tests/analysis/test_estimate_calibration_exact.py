"""`fit_calibration` over numpy vectors gives, to the bit, what the list-based fit gave (the
reference below is that implementation: Python sums left to right, one fold at a time)."""

from __future__ import annotations

import random

import pytest

from sessiontools.analysis.estimate.calibration import fit_calibration
from sessiontools.tokens.calibrated import Fit, fit_line
from sessiontools.tokens.fit import least_squares


def _ref_fit_line(xs: list[float], ys: list[int]) -> tuple[float, float]:
    n = len(xs)
    mx = sum(xs) / n
    my = sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx <= 1e-12 * max(1.0, mx * mx):
        return (0.0, my / mx) if mx > 0 else (my, 0.0)
    (b,) = least_squares([[x - mx] for x in xs], [y - my for y in ys]).coef
    return my - b * mx, b


def _ref(rows: list[dict]) -> tuple[dict, list, list]:
    """Per model key and `*`: (a, b, n, in-sample predictions, out-of-sample predictions)."""
    idx_all = [i for i, r in enumerate(rows) if r.get("est_o200k") is not None]
    xs = [float(r["est_o200k"]) if r.get("est_o200k") is not None else 0.0 for r in rows]
    ys = [int(r["actual"]) for r in rows]
    by: dict[str, list[int]] = {}
    for i in idx_all:
        by.setdefault(rows[i]["model_key"], []).append(i)
    ins: list = [None] * len(rows)
    oos: list = [None] * len(rows)
    out = {}
    for key, group, own in [(k, by[k], True) for k in sorted(by)] + ([("*", idx_all, False)] if idx_all else []):
        a, b = _ref_fit_line([xs[i] for i in group], [ys[i] for i in group])
        full = Fit("o200k", a, b, len(group))
        names = list(dict.fromkeys(rows[i]["session"] for i in group))
        if len(names) >= 2:
            folds = [[i for i in group if rows[i]["session"] == s] for s in names]
        elif len(group) >= 2:
            h = (len(group) + 1) // 2
            folds = [group[:h], group[h:]]
        else:
            folds = [group]
        pred = {}
        for test in folds:
            train = [i for i in group if i not in test] or [i for i in idx_all if i not in test]
            if train:
                fa, fb = _ref_fit_line([xs[i] for i in train], [ys[i] for i in train])
                pred.update({i: Fit("o200k", fa, fb, len(train)).predict(xs[i]) for i in test})
        if own:
            for i in group:
                ins[i] = full.predict(xs[i])
            for i, v in pred.items():
                oos[i] = v
        out[key] = (a, b, len(group))
    return out, ins, oos


def _rows(seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for s in range(rng.choice([1, 1, 2, 5, 12])):
        for _ in range(rng.choice([1, 2, 7, 30])):
            mk = rng.choice(["a/x", "a/y", "b/z"])
            x = None if rng.random() < 0.1 else rng.choice([rng.uniform(0, 9e4), 5000.0, 0.1 * rng.randint(0, 9)])
            scale = {"a/x": 1.3, "a/y": 0.9, "b/z": 2.1}[mk]
            actual = max(1, int((x or 3000) * scale * rng.uniform(0.7, 1.3) + rng.randint(0, 4000)))
            rows.append({"session": f"s{s}", "model_key": mk, "est_o200k": x, "actual": actual})
    return rows


@pytest.mark.parametrize("seed", range(60))
def test_fit_calibration_is_the_list_fit_to_the_bit(seed: int) -> None:
    rows = _rows(seed)
    ref, ins, oos = _ref(rows)
    got = fit_calibration(rows, "o200k")
    assert {k: (f.a, f.b, f.n) for k, f in got.fitted.models.items()} == ref
    assert got.in_sample == ins
    assert got.out_of_sample == oos


def test_fit_line_takes_lists_and_vectors_alike() -> None:
    import numpy as np

    rng = random.Random(3)
    xs = [rng.uniform(0, 1e5) for _ in range(500)]
    ys = [int(x * 1.7) + rng.randint(0, 900) for x in xs]
    assert fit_line(np.array(xs), np.array(ys)) == fit_line(xs, ys) == _ref_fit_line(xs, ys)
