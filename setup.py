"""The optional C extension of the reader (`sessiontools.read._native`, issue 28): the checks' common
case (`scan_fields`, `check_tree(s)`), the Codex reader's one-pass JSON scanner (`project_lines`,
_project.c) and the Pi reader's selective one (`pi_project_lines`, _pi.c), every Pi reading's entries
(`pi_entries`, _pi_entries.c), a Pi message's measures for the replay's compactor (`pi_message_measure`,
_pi_measure.c) and for Pi's own count (`pi_units`, `pi_json`, _pi_units.c), a 0.x path's messages
(`pi_path_messages`, _pi_path.c), a replayed run's pricing loop and its record's count of truth sources (`price_sums`, `point_sources`, _price.c), the replay walk's spans of plain requests (`walk_span`, _walk_span.c). Built by every install (`make`); when a machine cannot build it the package runs its
pure-Python paths (`read.values.scan_fields_reference`, the checks in Python, every Codex line read
the ordinary way, the Pi reader's ordinary reading), with the same results."""

from setuptools import Extension, setup

SOURCES = ["sessiontools/read/_native.c", "sessiontools/read/_project.c", "sessiontools/read/_pi.c",
           "sessiontools/read/_pi_entries.c", "sessiontools/read/_pi_measure.c",
           "sessiontools/read/_codex.c",
           "sessiontools/read/_codex_path.c", "sessiontools/read/_claude.c",
           "sessiontools/read/_claude_line.c", "sessiontools/read/_claude_tree.c", "sessiontools/read/_claude_bill.c",
           "sessiontools/read/_claude_paths.c", "sessiontools/read/_codex_json.c",
           "sessiontools/read/_codex_summary.c", "sessiontools/read/_pi_units.c",
           "sessiontools/read/_pi_path.c", "sessiontools/read/_price.c",
           "sessiontools/read/_walk_span.c"]
setup(ext_modules=[Extension("sessiontools.read._native", SOURCES, optional=True,
                             depends=["sessiontools/read/_claude.h", "sessiontools/read/_codex_json.h"],
                             extra_compile_args=["-O2", "-Wall"])])
