"""`read.lines.line_views`: the one numbering of physical lines every reader reports in file:line."""

from __future__ import annotations

from sessiontools.read.lines import line_views


def _lines(data: bytes) -> list[tuple[int, bytes, bool]]:
    return [(n, bytes(raw), after <= len(data)) for n, raw, after in line_views(data)]


def test_lines_numbers_and_whether_a_newline_ended_them() -> None:
    assert _lines(b"") == []
    assert _lines(b"a\n") == [(1, b"a", True)]
    assert _lines(b"a") == [(1, b"a", False)]
    assert _lines(b"a\n\nb\r\n{") == [(1, b"a", True), (2, b"", True), (3, b"b\r", True), (4, b"{", False)]
    assert _lines(b"\n\n") == [(1, b"", True), (2, b"", True)]


def test_after_is_the_next_lines_offset() -> None:
    data = b"ab\ncd\nef"
    assert [after for _, _, after in line_views(data)] == [3, 6, 9]
    assert [bytes(raw) for _, raw, _ in line_views(data)] == data.split(b"\n")
