"""The public API: every name `sessiontools`, `sessiontools.read` and `sessiontools.replay` offer
(their neutral names and those `names.PUBLIC_API` re-exports from an agent's homes) resolves, is
listed by `__all__` and `dir()`, and is the object its home defines."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from sessiontools.names import PUBLIC_API


@pytest.mark.parametrize("package", sorted(PUBLIC_API))
def test_every_reexported_name_is_its_homes_object(package: str) -> None:
    pkg = importlib.import_module(package)
    for name, home in PUBLIC_API[package].items():
        assert getattr(pkg, name) is getattr(importlib.import_module(home), name), (package, name)
        assert name in pkg.__all__ and name in dir(pkg), (package, name)


@pytest.mark.parametrize("package", sorted(PUBLIC_API))
def test_star_import_gives_every_listed_name(package: str) -> None:
    ns: dict[str, object] = {}
    exec(f"from {package} import *", ns)  # noqa: S102
    assert set(importlib.import_module(package).__all__) <= set(ns)


def test_an_unknown_name_is_an_attribute_error_and_submodules_still_import() -> None:
    import sessiontools
    import sessiontools.read

    for pkg in (sessiontools, sessiontools.read):
        with pytest.raises(AttributeError, match="no_such_name"):
            pkg.no_such_name  # noqa: B018
    from sessiontools.read import parallel

    assert parallel.__name__ == "sessiontools.read.parallel"


def test_import_sessiontools_stays_light() -> None:
    """`import sessiontools` (the console script's first import) loads neither the registry nor a reader."""
    code = "import sys, sessiontools; print(sorted(m for m in sys.modules if m.startswith('sessiontools')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['sessiontools']"
