"""The Dask client's import (`executors.import_client`): dask's and distributed's configuration read
by PyYAML's C loader is the configuration the pure-Python loader reads, and `yaml.safe_load` is
PyYAML's own again after it."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("distributed")
yaml = pytest.importorskip("yaml")

CODE = """
import contextlib, json, sys
from sessiontools.read import executors
if sys.argv[1] == "pure":
    executors._libyaml_safe_load = contextlib.nullcontext
executors.import_client()
import dask.config, yaml
assert yaml.safe_load.__module__ == "yaml" and yaml.safe_load.__name__ == "safe_load"
assert "numpy" not in sys.modules and "jinja2" not in sys.modules
print(json.dumps(dask.config.config, sort_keys=True, default=repr))
"""


@pytest.mark.skipif(not getattr(yaml, "__with_libyaml__", False), reason="PyYAML without libyaml: nothing swapped")
def test_client_import_reads_the_same_configuration() -> None:
    out = {}
    for how in ("c", "pure"):
        proc = subprocess.run([sys.executable, "-c", CODE, how], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        out[how] = proc.stdout
    assert out["c"] == out["pure"] and '"distributed"' in out["c"]


def test_libyaml_swap_is_scoped() -> None:
    from sessiontools.read.executors import _libyaml_safe_load

    pure = yaml.safe_load
    with _libyaml_safe_load():
        assert yaml.safe_load("a: [1, 2]\nb: {c: null}") == {"a": [1, 2], "b": {"c": None}}
    assert yaml.safe_load is pure
