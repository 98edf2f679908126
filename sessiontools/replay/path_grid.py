"""What every setting of a grid needs of one path under one policy and one truth model, computed once
(`PathGrid`) and shared by the walks of the grid (`replay.walk`): the workload's positions, the
recorded compactions' places, the requests in order and where runs start, each message's truth and
the policy's (chars, bytes) of it, where the recording shows the agent's threshold compaction
switched off (`Policy.threshold_off_from`) and the recorded summaries' sizes (`Policy.summary_tokens`).

None of it depends on a setting: a 25-setting grid of a Codex or Claude Code session measured each
message 25 times (Codex's item serialisation is most of a walk), and ran the off-switch pass over the
recording per setting.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from functools import reduce
from itertools import accumulate
from operator import add, le, lt
from typing import Any

from sessiontools.policies.base import Candidate, Policy
from sessiontools.replay.neutral import TURN_START_ROLES, NeutralTruth
from sessiontools.transcript.model import Overflow, Request, Role, TranscriptPath, Trigger, UnusableReply

#: A module constant: in Python 3.11 each `Role.ASSISTANT` is a class attribute lookup through the enum
#: machinery, and `reply_end` asks it for every event.
_ASSISTANT = Role.ASSISTANT


class PathGrid:
    """One path's setting-independent facts for the walks of a grid (see the module docstring)."""

    def __init__(self, path: TranscriptPath, policy: Policy, truth: NeutralTruth, settings: Sequence[Any] = ()) -> None:
        self.path, self.policy, self.truth = path, policy, truth
        #: The grid's settings (`ReplaySettings`) when the caller knows them all (`replay.walk_bulk`).
        self.settings = tuple(settings)
        # A compaction's own messages (its summary; Pi 1.x: also the system message it carries).
        # Codex: also the replacement history written on the compaction's own line (copies of kept items).
        # A compaction with an id owns the messages of that id only, whatever line they share (a Pi file
        # may glue a compaction onto its reply's or a tool result's line); one without (Codex's) owns
        # its line, but never a model call's own message.
        ids = {c.id for c in path.compactions if c.id is not None}
        lines = {c.line for c in path.compactions if c.id is None}
        summaries = {c.index for c in path.compactions}
        if ids or lines:  # (a path without compactions owns no such message: no pass over its messages)
            calls = {e.index for e in (*path.requests, *path.overflows, *path.unusable)}
            summaries |= {m.index for m in path.messages if m.id in ids or (m.line in lines and m.index not in calls)}
        self.work = work = [m.index for m in path.messages if m.index not in summaries]
        self.pos_of = dict(zip(work, range(len(work)), strict=True))  # {ix: k for k, ix in enumerate(work)}
        #: The last workload message before each recorded compaction.
        self.recorded = _last_before(work, [c.index for c in path.compactions])
        # A compaction before the workload's first message (a file that starts with the summary of an
        # earlier file's compaction, Claude Code 1.x) happened before the recording: nothing to match.
        self.before_start = frozenset(k for k, r in enumerate(self.recorded)
                                      if r < 0 and path.compactions[k].index == 0)
        # Compactions the user or an extension made: applied where recorded, not the policy's to match
        # (and those the file records as automatic where the rule has no check point: the user's).
        users = policy.user_compactions(path)
        self.by_user = [k for k, c in enumerate(path.compactions)
                        if c.trigger == Trigger.MANUAL or c.writer == "hook" or k in users]
        self.by_user_set = frozenset(self.by_user)
        # The model calls in path order: answered, rejected, and those without a usage the agent trusts.
        self.events: list[Request | Overflow | UnusableReply] = sorted(
            [*path.requests, *path.overflows, *path.unusable], key=lambda e: e.index)
        at = [e.index for e in self.events]
        self.starts = set(at)
        self.run_starts = _run_starts(path, self.events, self.work, at)
        #: ends[j]: the last message of event j (a request's whole reply, `reply_end`; a rejection's own).
        self.ends = _ends(path.messages, self.events, self.starts)
        #: ends_run[j]: event j ends its run: the next event starts one, or the agent's loop ends after
        #: its reply (`Policy.reply_ends_run`, whose run-end check comes after it).
        self.ends_run = _ends_run(policy, self.events, self.run_starts)
        self.off_from = policy.threshold_off_from(path)  # message index where auto-compact was off
        msgs = path.messages
        self._candidates: list[Candidate | None] = [None] * len(msgs)
        self._sizer = policy.sizer(path)  # the policy's (chars, bytes) of a message on this path
        #: By work position: the truth and the (chars, bytes) of each workload message.
        work_msgs = list(map(msgs.__getitem__, work))
        # One call for all of them where the truth and the sizer have one (`TruthModel.units_tokens`,
        # `PiPolicy.sizer`'s `many`): the same values as one call a message, without a call each.
        many_tokens = getattr(truth, "units_tokens", None)
        self.work_tokens = many_tokens(work_msgs) if many_tokens is not None else list(map(truth.message_tokens, work_msgs))
        many_sizes = getattr(self._sizer, "many", None)
        self.work_sizes = many_sizes(work_msgs) if many_sizes is not None else list(map(self._sizer, work_msgs))
        # Each message's truth and policy size by message index (`tokens_of`, `size_of`): every check
        # point of every setting sums a context of them. The workload's are measured above; another
        # (a recorded summary) when first asked.
        # Made on first use: a walk without a compaction asks for none (1.7M instructions of s0049's
        # grid, with `pos_of` and `history`, were these two dicts).
        self._tokens: dict[int, float] | None = None
        self._sizes: dict[int, tuple[int, int]] | None = None
        #: history[k]: the truth of work positions [0, k), added in order (as `sum` adds them).
        self.history: list[float] = list(accumulate(self.work_tokens, initial=0.0))
        self._summary_points: list[tuple[float, float]] | None = None
        #: What the grid's walks compute once for all its settings (`replay.walk_bulk`).
        self.shared: dict[str, Any] = {}

    def fits(self, path: TranscriptPath, policy: Policy, truth: NeutralTruth) -> bool:
        """Whether this grid is the one of (`path`, `policy`, `truth`)."""
        return self.path is path and self.policy is policy and self.truth is truth

    def reply_end(self, index: int) -> int:
        """The last message of the reply that starts at `index` (Codex writes one response as several
        items: reasoning, text, tool calls; the count's trailing items are those after all of them)."""
        msgs, starts = self.path.messages, self.starts
        while index + 1 < len(msgs) and msgs[index + 1].role == _ASSISTANT and index + 1 not in starts:
            index += 1
        return index

    def tokens_of(self, i: int) -> float:
        known = self._tokens
        if known is None:
            known = self._tokens = dict(zip(self.work, self.work_tokens, strict=True))
        got = known.get(i)
        if got is None:
            got = known[i] = self.truth.message_tokens(self.path.messages[i])
        return got

    def size_of(self, i: int) -> tuple[int, int]:
        known = self._sizes
        if known is None:
            known = self._sizes = dict(zip(self.work, self.work_sizes, strict=True))
        got = known.get(i)
        if got is None:
            got = known[i] = self._sizer(self.path.messages[i])
        return got

    def candidates(self, ctx: Sequence[int]) -> list[Candidate]:
        """The `Candidate` of each message of a context, made once per message for the grid."""
        made, msgs, tokens_of = self._candidates, self.path.messages, self.tokens_of
        out = []
        for i in ctx:
            c = made[i]
            if c is None:
                m = msgs[i]
                c = made[i] = Candidate(i, m.role.value, m.role in TURN_START_ROLES, tokens_of(i), m)
            out.append(c)
        return out

    def work_sum(self, lo: int, hi: int, start: float = 0.0) -> float:
        """`start` plus the truth of work positions [lo, hi), added in order (`sum`'s result exactly)."""
        return reduce(add, self.work_tokens[lo:hi], start)

    def summary_points(self) -> list[tuple[float, float]]:
        """(workload truth before it, its summary's truth) of each recorded compaction the policy made
        (not the user's), ascending: what `Policy.summary_tokens` interpolates between."""
        if self._summary_points is None:
            msgs = self.path.messages
            self._summary_points = sorted(
                (self.history[bisect_right(self.work, rec)], self.truth.text_tokens(len(msgs[c.index].text)))
                for k, (c, rec) in enumerate(zip(self.path.compactions, self.recorded, strict=True))
                if k not in self.by_user_set and c.index < len(msgs))
        return self._summary_points


def _last_before(work: Sequence[int], places: Sequence[int]) -> list[int]:
    """The largest of `work` below each of `places` (-1: none): a bisect each where `work` ascends (a
    path's message indices do), else a pass over it each."""
    if not places:
        return []
    if all(map(lt, work, work[1:])):
        return [work[k - 1] if (k := bisect_left(work, c)) else -1 for c in places]
    return [max((i for i in work if i < c), default=-1) for c in places]


def _ends(msgs: Sequence[Any], events: Sequence[Request | Overflow | UnusableReply], starts: set[int]) -> list[int]:
    """The last message of each event (`PathGrid.reply_end` of a request; a rejection's own), inlined:
    one a request, and the loop rarely moves (Pi: never)."""
    n, out = len(msgs), []
    for e in events:
        i = e.index
        if isinstance(e, Request):
            while i + 1 < n and msgs[i + 1].role == _ASSISTANT and i + 1 not in starts:
                i += 1
        out.append(i)
    return out


def _ends_run(policy: Policy, events: Sequence[Request | Overflow | UnusableReply], starts: Sequence[bool]) -> list[bool]:
    """Whether each event ends its run: the last, or the next starts one, else `Policy.reply_ends_run`."""
    ends, out = policy.reply_ends_run, []
    for e, nxt in zip(events, [*starts[1:], True] if events else [], strict=True):
        if nxt:
            out.append(nxt)
        else:
            rejected = isinstance(e, Overflow)
            out.append(ends(None if rejected else e.stop_reason, rejected))
    return out


def _run_starts(path: TranscriptPath, reqs: Sequence[Request | Overflow | UnusableReply], work: Sequence[int],
                at: Sequence[int] | None = None) -> list[bool]:
    """Whether each request starts a run (a user message of the workload since the previous request;
    a compaction's own messages, such as the user messages Codex copies into its new history, are not).
    `work`: the workload's message indices, ascending; `reqs` in path order (`at`: their indices)."""
    msgs, user = path.messages, Role.USER
    users = [i for i in work if msgs[i].role == user]  # ascending: one lies in (prev, r) iff two bisects differ
    at = [r.index for r in reqs] if at is None else at
    prev, out = -1, []
    if all(map(lt, users, users[1:])) and all(map(le, at, at[1:])):
        # One merge of the two ascending lists (a `bisect` call cost ~2k instructions, two a request):
        # users[k] is the first user after `prev`, so one lies in (prev, r) iff it comes before r.
        k, n = 0, len(users)
        for r in at:
            while k < n and users[k] <= prev:
                k += 1
            out.append(prev < 0 or (k < n and users[k] < r))
            prev = r
        return out
    for r in at:
        out.append(prev < 0 or bisect_right(users, prev) < bisect_left(users, r))
        prev = r
    return out
