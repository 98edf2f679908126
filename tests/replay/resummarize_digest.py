"""The digests of what `resummarize` produces (tests/replay/test_resummarize_digests.py): for every
sample session of every agent and the shared sessions, at the recorded settings and at a smaller
window, with two offline summarisers (the lab's lossy Pi summariser, and a long one whose answers
move the later compactions), each chain's requests sent, answers kept, sizes, JSON record and the
file written, as sha256 digests. Regenerate the data file (only for a deliberate fix, listed in the
commit) with `python -m tests.replay.resummarize_digest`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lab.summarizer import summarize as lab_summarize
from sessiontools.read.sources import load_source
from sessiontools.replay.registry import summarizer_of, unsupported
from sessiontools.replay.summarizer import Answer, SummaryGrid, estimated_tokens
from sessiontools.report.resummarize import result_record

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_sessions"
SHARED = ROOT.parent / "shared" / "sessions"
DATA = Path(__file__).with_name("data") / "resummarize_digests.json"


def _sha(obj: Any) -> str:
    text = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _request_dict(req: Any) -> Any:
    return req.to_dict() if hasattr(req, "to_dict") else {"body": req.body, "headers": getattr(req, "headers", None)}


def lab_answer(req: Any) -> Answer:
    """The lab's seeded summariser, offline: Pi's kinds by the request's kind, any other request (Codex's
    compact request) as an initial summary of its text."""
    kind = req.kind.value if req.kind.value in ("initial", "update", "turn_prefix") else "initial"
    text = lab_summarize(kind, req.user, 7)
    return Answer(text, estimated_tokens(req.system) + estimated_tokens(req.user), estimated_tokens(text))


def long_answer(req: Any) -> Answer:
    """A long answer, its length from the request's digest (the endpoint counts its tokens)."""
    words = 300 + int(_sha(_request_dict(req))[:4], 16) % 900
    text = "## Goal\n" + "word " * words
    return Answer(text, 100, words + 3)


SUMMARISERS = {"lab": lab_answer, "long": long_answer}


def sessions() -> Iterator[tuple[str, Path]]:
    """(name, path) of every sample session of every agent and the shared sessions (when present)."""
    for p in sorted(SAMPLES.glob("*.jsonl")):
        yield p.name, p
    for sub in ("codex", "claude-code"):
        for p in sorted((SAMPLES / sub).glob("*.jsonl")):
            yield f"{sub}/{p.name}", p
    if SHARED.is_dir():
        for p in sorted(SHARED.rglob("*.jsonl")):
            yield f"shared/{p.relative_to(SHARED)}", p


def grids(name: str, source: Any) -> list[tuple[str, SummaryGrid]]:
    """The recorded settings (the manifest's, else the defaults) and a smaller window."""
    pi = json.loads((SAMPLES / "manifest.json").read_text(encoding="utf-8"))
    codex = json.loads((SAMPLES / "codex" / "manifest.json").read_text(encoding="utf-8"))
    stem = Path(name).stem
    if stem in pi and not name.startswith(("codex/", "shared/")):
        m = pi[stem]
        return [("recorded", SummaryGrid([m["window"]], [m["reserve"]], [m["keep"]])),
                ("small", SummaryGrid([m["window"] * 3 // 4], [m["reserve"]], [m["keep"] // 2]))]
    if name.startswith("codex/") and stem in codex:
        s = codex[stem]["spec"]
        w = s["context_window"]
        lim = s["auto_compact_limit"]
        return [("recorded", SummaryGrid([w] if w else None, [16384], [20000], limits=[lim])),
                ("small", SummaryGrid([w] if w else None, [16384], [20000], limits=[(lim or 40000) * 3 // 4]))]
    return [("default", SummaryGrid(None, [16384], [20000]))]


def digest_of(source: Any, grid: SummaryGrid, summarise: Any, s: Any = None) -> list[dict[str, Any]]:
    """Each chain's digests (`s`: the summariser, by default the source's agent's)."""
    s = s if s is not None else summarizer_of(source)
    assert s is not None
    out = []
    for chain in s.plan(source, grid):
        asked = s.requests_of(chain)
        res = s.regenerate(chain, summarise, None, None)
        rec = result_record(res, None, None)
        settings = rec.pop("settings")
        rec.pop("session")  # the file's path: where the checkout is, not what resummarize did
        comps = []
        for r in res.compactions:
            comps.append({
                "regenerated": r.regenerated,
                "parent": r.compaction.parent_entry_id,
                "first_kept": r.compaction.first_kept_entry_id,
                "tokens_before": r.compaction.tokens_before,
                "requests": [_sha(_request_dict(q)) for q, _ in r.calls],
                "request_chars": [len(q.system) + len(q.user) for q, _ in r.calls],
                "summary": _sha(r.summary), "summary_chars": len(r.summary),
            })
        records = s.records(res) if res.error is None else []
        out.append({"label": chain.label, "settings": settings, "requests_of": asked, "error": res.error,
                    "compactions": comps,
                    "record": _sha(rec), "file": _sha(records), "file_lines": len(records)})
    return out


def compute(pick: Any = None) -> dict[str, Any]:
    """Every session's digests (`pick`: source -> the summariser to run, by default its agent's)."""
    out: dict[str, Any] = {}
    for name, path in sessions():
        source = load_source(path)
        why = unsupported(source)
        if why is not None:
            out[name] = {"unsupported": why}
            continue
        entry: dict[str, Any] = {}
        for gname, grid in grids(name, source):
            for sname, fn in SUMMARISERS.items():
                try:
                    entry[f"{gname}/{sname}"] = digest_of(source, grid, fn, pick(source) if pick else None)
                except Exception as exc:  # noqa: BLE001 (an input error is part of what is frozen)
                    entry[f"{gname}/{sname}"] = {"raised": f"{type(exc).__name__}: {exc}"}
        out[name] = entry
    return out


if __name__ == "__main__":
    DATA.write_text(json.dumps(compute(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(DATA)
