"""Token-counting ratios for `make bench`: estimate-error's o200k throughput against raw tiktoken,
and a cold token cache against a warm one. Measured on the first ~40 MB of the corpus (the
estimate-error run holds its sessions in memory for the calibration fit)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

SUBSET_MB = 40


def token_ratios(files: list[Path]) -> dict[str, float]:
    from sessiontools.analysis.estimate_error import EstimateErrorOptions, estimate_error
    from sessiontools.read import load_session
    from sessiontools.tokens.store import TokenStore
    from sessiontools.tokens.tiktoken_counter import message_units
    from sessiontools.tokens.vocab import get_encoding
    from sessiontools.transcript.pi import SessionTree, build_context

    subset, total = [], 0
    for f in files:
        if total > SUBSET_MB * 1e6:
            break
        subset.append(f)
        total += f.stat().st_size
    sessions = [load_session(f, content_hash=True) for f in subset]
    enc = get_encoding("o200k_base")  # loaded before timing either side

    # The same texts estimate-error tokenizes: the text units of every message of every context.
    texts: list[str] = []
    seen: set[bytes] = set()
    for s in sessions:
        ctx = build_context(SessionTree(s).path().entries, s.pi_version)
        for m in ctx.messages:
            u = message_units(m, s.pi_version)
            if u.key not in seen:
                seen.add(u.key)
                texts.extend(u.texts)
    t = time.perf_counter()
    enc.encode_ordinary_batch(texts, num_threads=2)
    t_raw = time.perf_counter() - t

    options = EstimateErrorOptions(estimators=("o200k",))
    with tempfile.TemporaryDirectory() as d:
        store = TokenStore(Path(d) / "tokens.sqlite")
        t = time.perf_counter()
        cold = estimate_error(sessions, options, token_store=store)
        t_cold = time.perf_counter() - t
        store.close()
        store = TokenStore(Path(d) / "tokens.sqlite")
        t = time.perf_counter()
        warm = estimate_error(sessions, options, token_store=store)
        t_warm = time.perf_counter() - t
        store.close()
    assert cold.frame.equals(warm.frame)
    print(f"o200k: raw tiktoken {sum(map(len, texts)) / 1e6 / t_raw:.1f} MB/s of text; estimate-error cold "
          f"{t_cold:.2f}s, warm {t_warm:.2f}s, raw {t_raw:.2f}s over {len(subset)} sessions ({total / 1e6:.0f} MB)")
    return {"o200k_vs_tiktoken": round(t_raw / t_cold, 3), "warm_vs_cold": round(t_cold / t_warm, 3)}
