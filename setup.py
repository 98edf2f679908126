"""The optional C extension of the reader (`sessiontools.read._native`, issue 28): built by every
install (`make`), and when a machine cannot build it the package runs its pure-Python reference
(`read.values.scan_fields`), with the same results."""

from setuptools import Extension, setup

SOURCES = ["sessiontools/read/_native.c", "sessiontools/read/_project.c"]
setup(ext_modules=[Extension("sessiontools.read._native", SOURCES, optional=True,
                             extra_compile_args=["-O2", "-Wall"])])
