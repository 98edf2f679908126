"""`inspect`: what is in a session file, as one JSON-ready dict per session (the contract of
`sessiontools inspect --format json`), for a loaded file of any agent."""

from __future__ import annotations

from typing import Any


def inspect_fn(**options: Any) -> Any:
    """`inspect_source` with `options`, as the per-file function of a run over files: it reads only
    what a selective reading keeps (`inspect_source.selective_read`, read by
    `read.parallel.reads_selectively`); picklable, for `--jobs` workers and Dask."""
    from functools import partial

    return partial(inspect_source, **options)


def inspect_source(source: Any, **options: Any) -> dict[str, Any]:
    """`inspect` of a loaded file of any agent: an agent whose reader keeps more than the transcript
    (`transcript.load.OWN_INSPECT`: Pi's entry types, labels and branch points) by its own inspect,
    the others from their neutral transcript. `options`: `leaf`, `all_leaves`, `rule_version`."""
    from sessiontools.transcript.load import OWN_INSPECT, transcript_of

    own = OWN_INSPECT.get(source.agent)
    if own is not None:
        return own(source, **options)
    from sessiontools.analysis.inspect_transcript import inspect_transcript

    return inspect_transcript(transcript_of(source, **options))


#: inspect reads of a Pi session only the fields a selective reading keeps (`read.pi.selective`:
#: no message content), so `read.parallel` reads its files that way.
inspect_source.selective_read = True  # type: ignore[attr-defined]
