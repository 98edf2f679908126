"""Rich renderables for `cut`: one key/value block per `--at` point."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group
from rich.table import Table

from sessiontools.names import CUT_TOKENS_BEFORE
from sessiontools.report.text import one_line, safe_text

#: A session entry (`id`, `line`, `message`), as the cut's policy gives it.
Entry = Any


def _preview(e: Entry | None) -> Any:
    if e is None:
        return "-"
    m = e.message or {}
    content = m.get("content")
    if isinstance(content, list):
        text = " ".join(
            str(b.get("text") or b.get("thinking") or b.get("name") or f"[{b.get('type')}]")
            for b in content
            if isinstance(b, Mapping)
        )
    else:
        text = str(content if content is not None else m.get("command") or m.get("summary") or "")
    return one_line(f"{e.id} (line {e.line}) {m.get('role')}: {text}", 100)


def _files(files: Sequence[str]) -> Any:
    if not files:
        return "-"
    shown = ", ".join(files[:6]) + (f", … (+{len(files) - 6})" if len(files) > 6 else "")
    return safe_text(shown)


def cut_table(cuts: Sequence[Mapping[str, Any]], spans: Sequence[tuple[Entry | None, Entry | None]]) -> Group:
    blocks = []
    for c, (first, last) in zip(cuts, spans, strict=True):
        t = Table(title=safe_text(f"compaction at #{c['at_index']} ({c['at_entry_id']}, line {c['at_line']})"),
                  show_header=False, title_justify="left")
        t.add_column("field", style="bold")
        t.add_column("value")
        if not c["compacts"]:
            t.add_row("compacts", "no")
            t.add_row("reason", safe_text(c["reason"]))
            if c["tokens_before"] is not None:
                t.add_row(CUT_TOKENS_BEFORE, f"{c['tokens_before']:,}")
            blocks.append(t)
            continue
        t.add_row("compacts", "yes")
        t.add_row("first kept", safe_text(f"#{c['first_kept_index']} {c['first_kept_entry_id']}"))
        t.add_row("split turn", f"yes (turn starts at #{c['turn_start_index']})" if c["is_split_turn"] else "no")
        t.add_row(CUT_TOKENS_BEFORE, f"{c['tokens_before']:,}")
        t.add_row("messages summarised", f"{c['messages_to_summarize']:,} (+{c['turn_prefix_messages']} turn prefix)")
        t.add_row("previous summary", "yes" if c["has_previous_summary"] else "no")
        t.add_row("serialised for the summariser", f"{c['serialized_chars']:,} chars")
        t.add_row("read files", _files(c["read_files"]))
        t.add_row("modified files", _files(c["modified_files"]))
        t.add_row("first kept message", _preview(first))
        t.add_row("last kept message", _preview(last))
        blocks.append(t)
    return Group(*blocks)
