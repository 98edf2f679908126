"""`resummarize` produces today what it produced when its driver was frozen (issue 24: one driver on
the one walk for every agent): over every sample session of every agent and the shared sessions, at
the recorded settings and a smaller window, with the lab's offline summariser and a long one, the
requests sent, the summaries kept, their sizes, the JSON record and the file written are the digests
in tests/replay/data/resummarize_digests.json (`tests.replay.resummarize_digest`)."""

from __future__ import annotations

import json

import pytest

from sessiontools.read.sources import load_source
from sessiontools.replay.registry import unsupported
from tests.replay.resummarize_digest import DATA, SUMMARISERS, digest_of, grids, sessions

FROZEN = json.loads(DATA.read_text(encoding="utf-8"))
PRESENT = dict(sessions())


def test_the_frozen_digests_cover_every_sample() -> None:
    """Every sample of every agent is frozen (the shared sessions when they are here)."""
    samples = {n for n in PRESENT if not n.startswith("shared/")}
    assert samples <= set(FROZEN)
    assert any(n.startswith("codex/") and "unsupported" not in v for n, v in FROZEN.items())
    assert sum(len(c["compactions"]) for v in FROZEN.values() if "unsupported" not in v
               for runs in v.values() if isinstance(runs, list) for c in runs) > 300


@pytest.mark.parametrize("name", sorted(FROZEN))
def test_resummarize_is_what_it_was(name: str) -> None:
    if name not in PRESENT:
        pytest.skip(f"{name}: not here (../shared/sessions)")
    source = load_source(PRESENT[name])
    frozen = FROZEN[name]
    why = unsupported(source)
    if "unsupported" in frozen:
        assert why == frozen["unsupported"]
        return
    assert why is None
    for gname, grid in grids(name, source):
        for sname, fn in SUMMARISERS.items():
            got = digest_of(source, grid, fn)
            assert got == frozen[f"{gname}/{sname}"], f"{name} {gname}/{sname}"
