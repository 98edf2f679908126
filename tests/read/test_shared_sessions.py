"""The real recorded sessions in ../shared/sessions/pi read with the counts their PROVENANCE gives."""

from __future__ import annotations

import orjson
import pytest

from sessiontools.cli import main
from sessiontools.read import load_session
from sessiontools.transcript.pi.inspect import inspect_session

# file -> (assistant, toolResult, user, bashExecution, compactions, thinking_level_change, recovered lines)
PROVENANCE = {
    "before-compaction.jsonl": (484, 448, 55, 3, 2, 5, 0),
    "large-session.jsonl": (453, 373, 88, 0, 0, 103, 0),
    "compact.jsonl": (504, 429, 77, 1, 2, 0, 1),
    "session.jsonl": (220, 189, 44, 1, 1, 8, 1),
}


@pytest.mark.parametrize("name", sorted(PROVENANCE))
def test_counts_match_provenance(shared_pi, name: str) -> None:  # type: ignore[no-untyped-def]
    s = load_session(shared_pi / name)
    r = inspect_session(s)
    a, tr, u, bash, comp, think, recovered = PROVENANCE[name]
    roles = r["messages_by_role"]
    assert (roles.get("assistant"), roles.get("toolResult"), roles.get("user"), roles.get("bashExecution", 0)) == (
        a,
        tr,
        u,
        bash,
    )
    assert len(r["compactions"]) == comp
    assert r["entries_by_type"].get("thinking_level_change", 0) == think
    assert len(r["recovered_lines"]) == recovered and not r["skipped_lines"]
    assert r["format_version"] == 1


def test_compact_jsonl_second_compaction_is_recovered(shared_pi, capsys) -> None:  # type: ignore[no-untyped-def]
    """The glued last line hides the second compaction; `inspect` recovers it and warns."""
    assert main(["inspect", str(shared_pi / "compact.jsonl"), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    comps = orjson.loads(out)["sessions"][0]["compactions"]
    assert [c["tokens_before"] for c in comps] == [184525, 131140]
    assert "compact.jsonl:1013: glued JSON" in err


def test_before_compaction_tokens_and_kinds(shared_pi) -> None:  # type: ignore[no-untyped-def]
    r = inspect_session(load_session(shared_pi / "before-compaction.jsonl"))
    assert [(c["tokens_before"], c["first_kept_entry_id"]) for c in r["compactions"]] == [
        (175004, "v1-293"),
        (185014, "v1-551"),
    ]
    assert r["models"]
