"""How many bytes `sessiontools export` reads: a first export of the given files into a new dataset,
then the same export again (every file unchanged), each with the bytes read (`rchar` of
/proc/self/io, Linux), the read calls and the CPU time.

    .venv/bin/python -m lab.export_reads DIR_OR_FILES... [--root REPO]

`--root` runs another checkout's package (e.g. an unpacked older commit) with this one's
interpreter, for a before/after comparison. Nothing of the files is printed but sizes and counts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time


def _io() -> tuple[int, int]:
    with open("/proc/self/io") as fh:
        d = dict(line.split(": ") for line in fh.read().splitlines())
    return int(d["rchar"]), int(d["syscr"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.export_reads")
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--root", help="a checkout whose sessiontools package to run")
    args = ap.parse_args(argv)
    if args.root:
        sys.path.insert(0, os.path.abspath(args.root))
        for name in [m for m in sys.modules if m == "sessiontools" or m.startswith("sessiontools.")]:
            del sys.modules[name]
    import sessiontools.cli as cli

    out = tempfile.mkdtemp(prefix="export-reads-")
    files = [p for p in args.paths if os.path.isfile(p)]
    files += [os.path.join(d, f) for p in args.paths for d, _, fs in os.walk(p) for f in fs if f.endswith(".jsonl")]
    total = sum(os.path.getsize(f) for f in files)
    print(f"package {os.path.dirname(cli.__file__)}; {len(files):,} *.jsonl files, {total / 1e6:.1f} MB")
    try:
        for run in ("first export", "same files again"):
            r0, c0 = _io()
            t0 = time.process_time()
            rc = cli.main(["export", *args.paths, "-o", os.path.join(out, "ds"), "--jobs", "1"])
            r1, c1 = _io()
            print(f"{run}: exit {rc}, read {(r1 - r0) / 1e6:.1f} MB in {c1 - c0:,} read calls, "
                  f"CPU {time.process_time() - t0:.2f} s")
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
