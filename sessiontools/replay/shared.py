"""What every setting of a grid needs and can share, computed once per workload and Pi version."""

from __future__ import annotations

from dataclasses import dataclass

from sessiontools.replay.memo import PiMemo
from sessiontools.replay.truth import TruthModel, entry_messages
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.pi.usage import assistant_usage, calculate_context_tokens
from sessiontools.transcript.pi.workload import RecordedCompaction, Workload

#: (id of the newest recorded compaction entry or None, base index of its first kept entry)
RecordedState = tuple[int | None, int]


@dataclass(frozen=True, slots=True)
class SharedGrid:
    """Per-workload facts shared by the settings of a grid.

    - `id_pos`: base index of each entry id;
    - `truth_prefix[i]`: truth of base entries [0, i) (so a range is a difference);
    - `chars4_prefix[i]`: Pi's chars/4 of base entries [0, i);
    - `recorded_state[i]`: the compaction state Pi really had before base entry i;
    - `recorded_total`: `calculateContextTokens` of each reply's recorded usage, where Pi trusts it;
    - `entry_ids`: each base entry's id; `timestamps`: each request's timestamp (None unless a
      string, and for entries that are not requests).
    """

    id_pos: dict[str, int]
    truth_prefix: list[float]
    chars4_prefix: list[int]
    recorded_state: list[RecordedState]
    recorded_initial: list[bool]  # recorded_state[i] is (None, 0): no compaction yet
    recorded_total: dict[int, int]
    entry_ids: list[str | None]  # of each base entry
    timestamps: list[str | None]  # of each request's base entry, where a string
    any_failed: bool = False  # some request is a recorded overflow failure


def shared_grid(wl: Workload, truth: TruthModel, v: str) -> SharedGrid:
    """Compute the `SharedGrid` of `wl` for Pi version `v`."""
    base = wl.base
    id_pos = {e.id: i for i, e in enumerate(base) if e.id is not None}
    reuse = truth.counter_is_chars4_of == v
    tokens, counted, ratio = truth.tokens, truth.counted, truth.ratio
    T = [0.0] * (len(base) + 1)
    C = [0] * (len(base) + 1)
    ids: list[str | None] = [e.id for e in base]
    t_sum = 0.0
    c_sum = 0
    tget, cget = tokens.get, counted.get
    for k, e in enumerate(base):
        key = id(e)
        t = tget(key)  # `TruthModel.entry_tokens`
        t_sum += t if t is not None else ratio * cget(key, 0)
        T[k + 1] = t_sum
        c_sum += cget(key, 0) if reuse else sum(estimate_tokens(m, v) for m in entry_messages(e, v))
        C[k + 1] = c_sum
    stamps: list[str | None] = [None] * len(base)  # only requests' are read
    for r in wl.requests:
        ts = base[r.base_index].data.get("timestamp")
        if isinstance(ts, str):
            stamps[r.base_index] = ts
    by_parent: dict[int, list[RecordedCompaction]] = {}
    for rc in wl.recorded_compactions:
        by_parent.setdefault(rc.parent_base_index, []).append(rc)
    state: RecordedState = (None, 0)
    rec_at: list[RecordedState] = [state] * (len(base) + 1)
    if by_parent:
        for i in range(len(base) + 1):
            for rc in by_parent.get(i - 1, ()):
                state = (id(rc.entry), id_pos.get(rc.first_kept_entry_id, i))  # retain-none keeps nothing before
            rec_at[i] = state
    rec_total = {}
    for r in wl.requests:
        u = assistant_usage(base[r.base_index].message or {}, v)
        if u is not None:
            rec_total[r.base_index] = calculate_context_tokens(u)
    initial = [st == (None, 0) for st in rec_at] if by_parent else [True] * (len(base) + 1)
    return SharedGrid(id_pos, T, C, rec_at, initial, rec_total, ids, stamps,
                      any(r.failed_overflow for r in wl.requests))


def seed_estimates(wl: Workload, truth: TruthModel, v: str, memo: PiMemo) -> None:
    """Put Pi's estimateTokens of each 0.x message entry, which the truth fit already counted
    (`TruthModel.counted` is chars/4 of that version), into the memo."""
    if v != "0" or truth.counter_is_chars4_of != "0":
        return
    counted, estimates = truth.counted, memo.estimates
    for e in wl.base:
        m = e.message  # 0.x: the entry's one message, as `entry_messages` gives it
        if m is not None and id(m) not in estimates:
            estimates[id(m)] = counted.get(id(e), 0)
            memo.alive.append(m)
