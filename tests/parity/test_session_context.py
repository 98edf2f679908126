"""The parity harness difference of issue 27, as fixed cases: Pi's SessionManager resumes a session
with a context that is not always its branch's.

Once drawn by hypothesis (a generated 0.x file whose last entry had no id): the oracle harness gave
the context `[]`, Pi's own `SessionManager.open(...).buildSessionContext()` one user message. Both
start from the last entry's raw id, but with two rules (session-manager.js, 0.73.1 and 1.6.0 alike):
`getBranch()` (what compaction sees) is empty unless that id is truthy in JavaScript, while
`buildSessionContext()` (what Pi sends) is empty only for an explicit `"id": null` and otherwise falls
back to the last entry itself. The harness built the context on the branch, and so did our port: both
were wrong for such a file. Now the harness reports Pi's own session context (`session_context`) and
our port has Pi's rule (`SessionTree.context_path`); its branch also follows the truthiness rule (an
empty-string id gave us a one-entry branch where Pi's is empty).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontools.read import load_session
from sessiontools.transcript.pi import SessionTree, build_context
from tests.conftest import require_pi
from tests.parity.oracle import pi_eval_many, run_oracle

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}


def _user(text: str, **ids: object) -> dict:
    return {"type": "message", **ids, "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": text, "timestamp": 1}}


def _assistant(text: str, **ids: object) -> dict:
    return {"type": "message", **ids, "timestamp": "2025-01-01T00:00:02.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "x",
                        "provider": "x", "model": "m", "stopReason": "stop", "timestamp": 2,
                        "usage": {"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12,
                                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}}


#: (name, the records after the header, Pi's branch length, Pi's context length): what Pi 0.x and
#: 1.x answer for each (checked below against the installed releases, not just asserted).
CASES = [
    ("the drawn case: one user message without an id", [_user("hi", parentId=None)], 0, 1),
    ("an explicit null id", [_user("hi", id=None, parentId=None)], 0, 0),
    ("an empty-string id", [_user("hi", id="", parentId=None)], 0, 1),
    ("a zero id (dropped by our reader, falsy for Pi)", [_user("hi", id=0, parentId=None)], 0, 1),
    ("a chain whose last entry has no id",
     [_user("q", id="a", parentId=None), _assistant("r", id="b", parentId="a"), _user("again", parentId="b")], 0, 3),
    ("an ordinary chain", [_user("q", id="a", parentId=None), _assistant("r", id="b", parentId="a")], 2, 2),
]


def _write(tmp_path: Path, name: str, records: list[dict]) -> tuple[Path, list[str]]:
    lines = [json.dumps(r) for r in [HEADER, *records]]
    path = tmp_path / f"{abs(hash(name))}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, lines


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_our_branch_and_session_context(tmp_path: Path, name: str) -> None:
    """Our port alone (no Node): the branch and the resumed context Pi has for each case."""
    _, records, branch_len, context_len = next(c for c in CASES if c[0] == name)
    path, _ = _write(tmp_path, name, records)
    tree = SessionTree(load_session(path))
    assert len(tree.path()) == branch_len
    assert len(build_context(tree.context_path().entries, "0").messages) == context_len
    assert len(build_context(tree.context_path().entries, "1").messages) == context_len


@pytest.mark.parity
@pytest.mark.parametrize("major", ["0", "1"])
def test_session_context_is_pis_own(tmp_path: Path, major: str) -> None:
    """Pi's SessionManager, the harness and our port agree on the branch and on the session's context
    of every case (the drawn case failed before: harness `[]`, Pi one message)."""
    require_pi(major)
    files = [_write(tmp_path, name, records) for name, records, _, _ in CASES]
    managers = pi_eval_many(major, [("openSession", [str(p)]) for p, _ in files])
    answers = run_oracle(major, [{"session_id": str(i), "lines": lines, "leaf_id": None, "fields": ["context"],
                                  "queries": [{"at_index": 10**6, "keep_recent": 1, "reserve_tokens": 1}]}
                                 for i, (_, lines) in enumerate(files)])
    for (name, _, branch_len, context_len), (path, _), manager, answer in zip(CASES, files, managers, answers,
                                                                              strict=True):
        pi = manager["result"]
        assert (len(pi["path_types"]), len(pi["context"])) == (branch_len, context_len), name  # Pi's own answer
        assert answer["path_types"] == pi["path_types"], name
        assert answer["session_context"] == pi["context"], name
        tree = SessionTree(load_session(path))
        assert [e.type for e in tree.path()] == pi["path_types"], name
        assert [dict(m) for m in build_context(tree.context_path().entries, major).messages] == pi["context"], name
