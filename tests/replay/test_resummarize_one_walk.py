"""`resummarize` runs on the one walk (issue 24): its driver and every agent's part of it import none
of the exact port's modules, directly or through another module (import-linter's graph, `grimp`)."""

from __future__ import annotations

import grimp
import pytest

from sessiontools.replay.registry import SUMMARIZERS

#: The second engine's modules (Pi's exact port and its truth adapter).
EXACT_PORT = ("simulate", "plain", "shared", "memo", "pi_compact", "truth")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("sessiontools", include_external_packages=False, cache_dir=None)


@pytest.mark.parametrize("module", ["sessiontools.replay.resummarize", *sorted(SUMMARIZERS.values())])
def test_resummarize_imports_no_module_of_the_exact_port(graph: grimp.ImportGraph, module: str) -> None:
    chains = {m: graph.find_shortest_chain(importer=module, imported=f"sessiontools.replay.{m}")
              for m in EXACT_PORT if f"sessiontools.replay.{m}" in graph.modules}
    assert {m: c for m, c in chains.items() if c} == {}


def test_every_agents_part_is_its_policys() -> None:
    """Each agent's part of `resummarize` lives with its policy, not in replay/."""
    assert SUMMARIZERS and all(m.startswith("sessiontools.policies.") for m in SUMMARIZERS.values())
