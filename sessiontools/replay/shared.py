"""What every setting of a grid needs and can share, computed once per workload and Pi version."""

from __future__ import annotations

from dataclasses import dataclass

from sessiontools.replay.truth import TruthModel, entry_messages
from sessiontools.replay.workload import RecordedCompaction, Workload
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.pi.usage import assistant_usage, calculate_context_tokens

#: (id of the newest recorded compaction entry or None, base index of its first kept entry)
RecordedState = tuple[int | None, int]


@dataclass(frozen=True, slots=True)
class SharedGrid:
    """Per-workload facts shared by the settings of a grid.

    - `id_pos`: base index of each entry id;
    - `truth_prefix[i]`: truth of base entries [0, i) (so a range is a difference);
    - `chars4_prefix[i]`: Pi's chars/4 of base entries [0, i);
    - `recorded_state[i]`: the compaction state Pi really had before base entry i;
    - `recorded_total`: `calculateContextTokens` of each reply's recorded usage, where Pi trusts it.
    """

    id_pos: dict[str, int]
    truth_prefix: list[float]
    chars4_prefix: list[int]
    recorded_state: list[RecordedState]
    recorded_total: dict[int, int]


def shared_grid(wl: Workload, truth: TruthModel, v: str) -> SharedGrid:
    """Compute the `SharedGrid` of `wl` for Pi version `v`."""
    base = wl.base
    id_pos = {e.id: i for i, e in enumerate(base) if e.id is not None}
    reuse = truth.counter_is_chars4_of == v
    T = [0.0]
    C = [0]
    for e in base:
        T.append(T[-1] + truth.entry_tokens(e))
        c = truth.counted.get(id(e), 0) if reuse else sum(estimate_tokens(m, v) for m in entry_messages(e, v))
        C.append(C[-1] + c)
    by_parent: dict[int, list[RecordedCompaction]] = {}
    for rc in wl.recorded_compactions:
        by_parent.setdefault(rc.parent_base_index, []).append(rc)
    state: RecordedState = (None, 0)
    rec_at = []
    for i in range(len(base) + 1):
        for rc in by_parent.get(i - 1, []):
            state = (id(rc.entry), id_pos.get(rc.first_kept_entry_id, i))  # retain-none keeps nothing before
        rec_at.append(state)
    rec_total = {}
    for r in wl.requests:
        u = assistant_usage(base[r.base_index].message or {}, v)
        if u is not None:
            rec_total[r.base_index] = calculate_context_tokens(u)
    return SharedGrid(id_pos, T, C, rec_at, rec_total)
