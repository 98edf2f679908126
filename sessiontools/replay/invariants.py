"""What every replay run must satisfy, written once: the numbers of one run cannot contradict each other.

`violations(record)` checks one run record of the replay JSON contract (`runs[]`, whichever policy and
agent produced it) and returns each broken rule in words (empty: the run is consistent). Tests run it
over every sample and every real session they read, at the recorded settings, under small grids and
under every other agent's policy (tests/replay/test_invariants.py); `replay` itself does not (a run
that breaks one is a bug to fix in the engine, not a warning for the user).

The rules (docs: ARCHITECTURE.md section 2):

1. **peak**: `peak_truth_tokens` is the largest truth the run reports anywhere, compactions' truth at
   their trigger included (a check point's truth is at least as large as a compaction's trigger).
2. **overflow**: an overflow is a request whose truth exceeds the window of its setting, so a run with
   overflows has a peak above the window; a rejection the provider recorded below that window is a
   `provider_rejections`, not an overflow.
3. **compaction above the window**: a compaction above the window implies the overflow before it or
   the one it prevented. A check point measures the context the next request would send: a truth
   above the window there is an overflow the compaction prevented (rule 1 puts it in the peak); an
   overflow compaction follows an overflow or a provider rejection (`overflow_compactions <=
   overflows + provider_rejections`); a summarisation request above the window is itself an overflow
   (rule 5).
4. **late**: `late > 0` implies a check point above the threshold, hence a peak above it.
5. **failed compaction**: a summarisation request larger than the window is rejected: counted as an
   overflow, not billed; the compaction is failed (`failed_compactions`, the context left as it was)
   unless the policy trims its request until it fits (`Policy.trims_summary_request`). No billed
   compaction has a summarisation request above the window.
6. **user compactions**: the recorded user/extension compactions applied are the same at every setting
   (`consistent_user_compactions` over the runs of one session path).
7. **counts**: compactions = threshold + overflow compactions; rates within [0, 1]; no negative count.
8. **timeline** (a record that carries its `timeline`, the data of `--plot` and of the report's figure):
   no request's truth is above `peak_truth_tokens`, and no more requests are above the window than the
   run counts overflows: the figure and the numbers are of one run. It has one policy count and one
   check truth per check point (`check_points`), and one recorded point per compaction the file
   records (the policy's, `recorded_match.recorded`, and the user's or an extension's applied).
9. **check points** (with the timeline): each check point is a request's (the first after it) or
   is accounted for outside one (`checks_outside`, each check point's index and why: before the first
   request, only the run's first ones, or again after the same request; its truth in `check_truth`); the peak is the largest truth reported anywhere (request,
   check point, a compaction's trigger, a failed summarisation request), and it is reached by one of
   them; `late` and the threshold compactions are check points, so neither exceeds the check points
   (late ones over the threshold).
10. **priced totals**: a total of a cost over runs says how many of them were priced and never draws an
   unknown cost as 0 (`PricedTotal`, `priced_total`: the one sum every table, headline and heatmap
   cell uses; `priced_total_aggs` the same as polars aggregations, for the frames' totals;
   `priced_total_violations` checks one against the costs it sums).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Why a check point is no request's (`replay.records.CheckAt.outside`).
OUTSIDE = frozenset({"before the first request", "again after the same request"})


def _window(settings: Mapping[str, Any]) -> int:
    """The largest window of the run (a session that switched models has several)."""
    w = int(settings["context_window"])
    for _, window in settings.get("window_changes") or ():
        w = max(w, int(window))
    return w


def _threshold(settings: Mapping[str, Any]) -> float | None:
    """The run's one threshold (None: it follows each model's window, `ReplaySettings.to_dict`)."""
    t = settings["threshold"]
    return None if t is None else float(t)


def violations(record: Mapping[str, Any]) -> list[str]:
    """The invariants (module docstring) one run record breaks, in words."""
    out: list[str] = []
    m, s = record["metrics"], record["settings"]
    w = _window(s)
    peak = m["peak_truth_tokens"]
    comps: Sequence[Mapping[str, Any]] = record["compactions"]
    policy = [c for c in comps if c["reason"] != "user"]
    top = max((c["truth_at_trigger"] for c in comps), default=0)
    if top > peak:
        out.append(f"peak: a compaction's truth at trigger {top:,} is above peak_truth_tokens {peak:,}")
    if m["overflows"] > 0 and peak <= w:
        out.append(f"overflow: {m['overflows']} overflow(s) with peak {peak:,} not above the window {w:,}")
    rejected = m["overflows"] + m.get("provider_rejections", 0)
    if m["overflow_compactions"] > rejected:
        out.append(f"overflow compactions: {m['overflow_compactions']} overflow compaction(s) after "
                   f"{rejected} rejected request(s)")
    t = _threshold(s)
    if t is not None and m["late"] > 0 and peak <= t:
        out.append(f"late: late {m['late']} with peak {peak:,} not above the threshold {t:,.0f}")
    for c in policy:
        sin = c.get("summarization_input_tokens")
        if sin is not None and sin > w:
            out.append(f"failed compaction: a summarisation request of {sin:,} tokens above the window {w:,} "
                       "is billed as a compaction (it is rejected: a failed compaction)")
    failed = record.get("failed_compactions") or []
    if len(failed) > m["overflows"] or len(failed) != m.get("failed_compactions", 0):
        out.append(f"failed compaction: {len(failed)} failed compaction(s) listed, {m.get('failed_compactions')} "
                   f"counted, {m['overflows']} overflow(s)")
    for c in failed:
        if c["summarization_input_tokens"] > peak:
            out.append(f"peak: a failed summarisation request of {c['summarization_input_tokens']:,} tokens is "
                       f"above peak_truth_tokens {peak:,}")
    n_thr = sum(1 for c in policy if c["reason"] == "threshold")
    if m["threshold_compactions"] != n_thr or m["compactions"] != len(policy):
        out.append(f"counts: compactions {m['compactions']} / threshold {m['threshold_compactions']} disagree "
                   f"with the {len(policy)} listed ({n_thr} threshold)")
    for k in ("early_rate", "late_rate"):
        if not 0.0 <= m[k] <= 1.0:
            out.append(f"counts: {k} {m[k]} outside [0, 1]")
    for k, v in m.items():
        if isinstance(v, int | float) and not isinstance(v, bool) and v < 0:
            out.append(f"counts: {k} is negative ({v})")
    if record.get("timeline"):
        out += _timeline_violations(record["timeline"], m, w)
        out += _check_violations(record, _threshold(s))
    return out


def _timeline_violations(tl: Mapping[str, Any], m: Mapping[str, Any], w: int) -> list[str]:
    """Rule 8: the timeline's requests against the run's peak and overflows."""
    out = []
    truths = [y for _, y in tl["truth"]]
    top = max(truths, default=0)
    if top > m["peak_truth_tokens"] + 0.5:  # the record rounds the peak
        out.append(f"timeline: a request's truth {top:,.0f} is above peak_truth_tokens {m['peak_truth_tokens']:,}")
    over = sum(1 for y in truths if y > w)
    if over > m["overflows"]:
        out.append(f"timeline: {over} request(s) above the window {w:,}, {m['overflows']} overflow(s) counted")
    return out


def _check_violations(record: Mapping[str, Any], t: float | None) -> list[str]:
    """Rules 8 (counts) and 9: the timeline's check points against the run's numbers."""
    out = []
    tl, m = record["timeline"], record["metrics"]
    n = m["check_points"]
    if len(tl["policy_count"]) != n or len(tl["check_truth"]) != n:
        out.append(f"timeline: {len(tl['policy_count'])} policy count(s) and {len(tl['check_truth'])} check "
                   f"truth(s) for {n} check point(s)")
    recorded = record["recorded_match"]["recorded"] + m["user_compactions"]
    if len(tl["recorded"]) != recorded:
        out.append(f"timeline: {len(tl['recorded'])} recorded point(s) for {recorded} recorded compaction(s)")
    reasons = {why for _, why in tl["checks_outside"]}
    if not reasons <= OUTSIDE:
        out.append(f"check points: outside a request for no known reason ({sorted(reasons - OUTSIDE)})")
    firsts = [k for k, why in tl["checks_outside"] if why == "before the first request"]
    if firsts != list(range(len(firsts))) or (tl["checks_outside"] and tl["checks_outside"][0][0] == 0
                                              and tl["checks_outside"][0][1] != "before the first request"):
        out.append("check points: 'before the first request' is not where the run's first check points are")
    truths = [y for _, y in tl["truth"]] + [y for _, y in tl["check_truth"]]
    truths += [c["truth_at_trigger"] for c in record["compactions"]]
    truths += [c["summarization_input_tokens"] for c in record.get("failed_compactions") or []]
    top = round(max(truths, default=0.0))
    if truths and top != m["peak_truth_tokens"]:
        out.append(f"peak: peak_truth_tokens {m['peak_truth_tokens']:,} is not the largest truth the run "
                   f"reports ({top:,})")
    n_thr = m["threshold_compactions"]
    if n_thr > n or m["late"] > n:
        out.append(f"check points: {n_thr} threshold compaction(s) and late {m['late']} for {n} check point(s)")
    if t is not None:
        over = sum(1 for _, y in tl["check_truth"] if y > t)
        if m["late"] > over:
            out.append(f"late: late {m['late']} with {over} check point(s) above the threshold {t:,.0f}")
    return out


def consistent_user_compactions(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """Rule 6 over the runs of one session path: every setting applies the same recorded user and
    extension compactions (a hook's compaction is not "recorded" at one window and "user" at another)."""
    seen: dict[tuple[Any, Any], set[int]] = {}
    for r in records:
        seen.setdefault((r["session"], r.get("leaf_id")), set()).add(r["metrics"]["user_compactions"])
    return [f"user compactions: {session} reports {sorted(n)} user compactions across its settings"
            for (session, _), n in seen.items() if len(n) > 1]


@dataclass(frozen=True, slots=True)
class PricedTotal:
    """A cost summed over runs (rule 10): the sum of the known costs (None: no run was priced, not $0),
    how many runs had a price and how many runs it is over."""

    total: float | None
    priced: int
    runs: int

    @property
    def complete(self) -> bool:
        """Every run was priced (the total is the whole cost)."""
        return self.priced == self.runs


def priced_total(costs: Iterable[float | None]) -> PricedTotal:
    """The total of `costs` (one per run, None where no price is known): rule 10."""
    every = list(costs)
    priced = [c for c in every if c is not None]
    return PricedTotal(sum(priced) if priced else None, len(priced), len(every))


def priced_total_aggs(cost: str = "cost") -> tuple[Any, Any, Any]:
    """`priced_total` as polars aggregations over a group of runs (one row a run, `cost` its column):
    the group's `runs`, `priced` and `cost` (`PricedTotal`'s runs, priced and total: null when no run
    was priced), for the frames' totals (`report.replay_totals.totals_frame`). Rule 10 is written here
    twice, for rows and for frames; tests/replay/test_priced_totals.py holds the two to one answer."""
    import polars as pl

    c = pl.col(cost)
    return (pl.len().alias("runs"), c.is_not_null().sum().alias("priced"),
            pl.when(c.is_not_null().any()).then(c.sum()).alias(cost))


def priced_total_violations(total: PricedTotal, costs: Sequence[float | None]) -> list[str]:
    """Rule 10: what `total` breaks as the total of `costs` (empty: it says how many runs were priced,
    sums exactly the known costs, and is no number when none was known)."""
    known = [c for c in costs if c is not None]
    out = []
    if total.runs != len(costs) or total.priced != len(known):
        out.append(f"priced totals: {total.priced} of {total.runs} runs said priced, {len(known)} of {len(costs)} were")
    if not known and total.total is not None:
        out.append(f"priced totals: no run was priced and the total says {total.total}")
    if known and (total.total is None or abs(total.total - sum(known)) > 1e-9 * max(1.0, abs(sum(known)))):
        out.append(f"priced totals: the total {total.total} is not the sum of the known costs {sum(known)}")
    return out
