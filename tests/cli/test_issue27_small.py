"""The smaller items of issue 27: ESC bytes from file names never reach CSV or HTML, a bad
--compactions-output is refused before the work, the least-squares fit never warns on stderr."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

from tests.conftest import SAMPLES
from tests.robust.mutate import run

ESC_NAME = "a\x1b[31mred\x1b]0;title\x07.jsonl"


def _esc_dir(tmp_path: Path) -> Path:
    d = tmp_path / "in"
    d.mkdir()
    shutil.copy(SAMPLES / "pi0-tiny.jsonl", d / ESC_NAME)
    return d


def test_esc_bytes_of_file_names_never_reach_csv_or_html(tmp_path: Path) -> None:
    d = _esc_dir(tmp_path)
    assert run(["estimate-error", str(d), "--no-cache", "-o", str(tmp_path / "e.csv")])[0] == 0
    assert run(["report", str(d), "-o", str(tmp_path / "r.html"), "--context-window", "8000", "--reserve", "1000"])[0] == 0
    for name in ("e.csv", "r.html"):
        data = (tmp_path / name).read_bytes()
        assert b"\x1b" not in data and b"\x07" not in data, name
        assert b"ared" in data or b"a[31mred" in data, name  # the name is still there, minus its controls


def test_compactions_output_is_checked_before_the_work(tmp_path: Path) -> None:
    code, err = run(["replay", str(SAMPLES / "pi0-tiny.jsonl"), "--compactions-output", str(tmp_path / "no" / "c.csv")])
    assert code == 2
    assert f"--compactions-output {tmp_path / 'no' / 'c.csv'}: the folder {tmp_path / 'no'} does not exist" in err
    assert "replay" not in err.split("error:")[0]  # nothing was replayed first (no headline)


def test_degenerate_fits_do_not_warn() -> None:
    from sessiontools.tokens.fit import least_squares

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        zero = least_squares([[0.0, 0.0], [0.0, 0.0]], [1.0, 2.0])
        huge = least_squares([[1e300, 1.0], [1e300, 1.0]], [1e300, 1e308], nonneg=True)
        ridge = least_squares([[1e200, 1e200]], [1e308], ridge=1.0, prior=[1.0, 1.0])
    assert all(c == c for c in zero.coef + huge.coef + ridge.coef)  # finite or the prior, never NaN
