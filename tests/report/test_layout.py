"""report/layout.py: tables that fit, names that stay distinct, cells never cut."""

from __future__ import annotations

from rich.text import Text

from sessiontools.report.layout import Column, FittedTable, short_names, tokens
from tests.render import rendered_lines


def test_short_names_keep_files_apart() -> None:
    """Two files with the same name in different folders never look the same (issue 17, defect 1)."""
    paths = ["/home/u/.pi/agent/sessions/--work-a--/pi0-pair-a.jsonl",
             "/home/u/.pi/agent/sessions/--work-b--/pi0-pair-a.jsonl",
             "/home/u/.pi/agent/sessions/--work-b--/pi0-pair-b.jsonl"]
    names = short_names(paths)
    assert len(set(names.values())) == 3
    assert names[paths[2]] == "pi0-pair-b"
    assert names[paths[0]] == "--work-a--/pi0-pair-a"
    long = [f"/x/sessions/2026-01-0{i}T10-00-00-000Z_0198f6a0-aaaa-bbbb-cccc-00000000000{i}.jsonl" for i in range(3)]
    assert len(set(short_names(long).values())) == 3  # a common prefix of the names is not cut away


def test_short_names_edge_cases() -> None:
    assert short_names([]) == {}
    assert short_names(["a.jsonl", "a.jsonl"]) == {"a.jsonl": "a"}
    assert short_names(["d/x.jsonl", "d/x"]) in ({"d/x.jsonl": "d/x.jsonl", "d/x": "d/x"},
                                                  {"d/x.jsonl": "x.jsonl", "d/x": "x"})


def test_tokens_units() -> None:
    assert [tokens(v) for v in (None, 950, 16_000, 831_634, 1_234_567, 12_345_678)] == \
        ["-", "950", "16.0k", "832k", "1.23M", "12.3M"]


def _table(n_cols: int, name: str) -> FittedTable:
    cols = [Column(f"col{i} tok", f"column {i} (tokens)", optional=i % 3 == 2) for i in range(n_cols)]
    t = FittedTable("a title that is long enough to need more than one line at forty columns of width", cols)
    for r in range(3):
        t.add_row(*[f"{(r + 1) * 1111 * (i + 1):,}" for i in range(n_cols)], group=f"{name}-{r}")
    return t


def test_fitted_table_fits_and_keeps_cells_whole() -> None:
    for width in (60, 80, 100, 140):
        for n in (3, 8, 12):
            t = _table(n, "pi0-threshold-5x-session")
            lines = rendered_lines([t], width)
            assert max(len(x) for x in lines) <= width, (width, n)
            text = "\n".join(lines)
            for row in t.rows:
                for cell in row:
                    if str(cell) and "left out at this width" not in text:
                        assert str(cell) in text, (width, n, cell)
            for g in t.groups:
                assert g in text  # session names are never cut


def test_fitted_table_drops_optional_columns_with_a_note() -> None:
    t = _table(12, "s")
    text = "\n".join(rendered_lines([t], 60))
    assert "left out at this width" in text
    wide = "\n".join(rendered_lines([t], 200))
    assert "left out" not in wide
    assert "col11 tok: column 11 (tokens)" in wide  # the legend explains every header


def test_empty_table_prints_nothing() -> None:
    t = FittedTable("nothing", [Column("a")])
    assert [x for x in rendered_lines([t], 80) if x.strip()] == []


def test_rows_must_match_columns() -> None:
    t = FittedTable("t", [Column("a"), Column("b")])
    try:
        t.add_row(Text("x"))
    except ValueError:
        return
    raise AssertionError("a short row was accepted")
