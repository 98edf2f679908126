"""estimate-error's tables: a fit with too few requests says so instead of a MAPE, and the
calibration levels show the coefficients that are not 0 (issue 26)."""

from __future__ import annotations

from sessiontools.report.estimate_error import _levels_table, _oos_cell
from tests.render import rendered_lines


def test_too_few_requests_instead_of_a_mape() -> None:
    assert _oos_cell(69.306, 2) == "too few requests (2)"
    assert _oos_cell(0.25, 40) == "25.0"
    assert _oos_cell(None, 40) == "too few"


def test_levels_show_the_coefficients_that_matter_at_100_columns() -> None:
    feats = ["overhead", "cjk", "prose", "code", "messages", "o200k"]
    coef = {"overhead": 847.0, "cjk": 0.0, "prose": 0.0, "code": 0.0, "messages": 53.1, "o200k": 1.609}
    lv = {"level": "corpus", "key": "*", "n": 1070, "status": "fit", "candidate": "o200k", "coef": coef,
          "mape_in_sample": 0.032, "mape_out_of_sample": 0.032}
    few = {**lv, "level": "model", "key": "x/y", "n": 2, "mape_out_of_sample": 69.3}
    text = "\n".join(rendered_lines([_levels_table({"features": feats, "judged_by": "LOSO", "levels": [lv, few]})], 100))
    assert "o200k" in text.split("MAPE in %")[0] and "1.609" in text
    assert "coefficient 0 at every level (not shown): cjk, prose, code" in text
    assert "too few requests (2)" in text and "6930" not in text
