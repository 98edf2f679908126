"""Issue 12 on the replay side: what real sessions (harness-written, few requests, CJK, hook
summaries, several overflows) need so that replay at recorded settings invents nothing."""

from __future__ import annotations

import math

from sessiontools.read import Session
from sessiontools.replay import ReplaySettings, replay_source
from sessiontools.replay.metrics import run_metrics
from sessiontools.replay.records import CompactionReason
from sessiontools.testing import SessionBuilder
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.pi import SessionTree
from sessiontools.transcript.pi.workload import build_workload
from tests.replay.test_replay import OVERHEAD, RATIO
from tests.replay.walked import pi_truth, walk_run


def pseudo_reply(b: SessionBuilder, text: str = "sent to the channel", model: str = "delivery-mirror") -> None:
    """A harness's mirrored reply: all-zero usage and a model id that is no model."""
    b.assistant(text)
    b.entries[-1]["message"]["model"] = model
    b.entries[-1]["message"]["provider"] = "openclaw"


def with_pseudo_replies(runs: int = 8, calls: int = 2, size: int = 3000) -> Session:
    """A scripted session (prompt = OVERHEAD + RATIO * chars/4 of the context) where a harness mirrors
    every final reply with a pseudo-reply, which later contexts carry like any message."""
    b = SessionBuilder(model="claude-sonnet-4-5")
    ctx = 0

    def add() -> None:
        nonlocal ctx
        ctx += estimate_tokens(b.entries[-1]["message"], "0")

    for r in range(runs):
        b.user(f"run {r}: " + "please do the task " * 20)
        add()
        for c in range(calls + 1):
            prompt = OVERHEAD + math.ceil(RATIO * ctx)
            last = c == calls
            b.assistant("done" if last else f"step {c}", tool_calls=() if last else [("read", {"path": f"f{r}_{c}.py"})],
                        usage=b.usage(prompt, 50, cache_read=prompt // 2))
            add()
            if not last:
                b.tool_result("read", "x" * size)
                add()
        pseudo_reply(b)
        add()
    return b.session()


def _below_threshold(session: Session, reserve: int = 16384) -> tuple[int, int]:
    wl = build_workload(SessionTree(session).path().entries, session.pi_version)
    peak = max(r.recorded_prompt or 0 for r in wl.requests)
    return peak + reserve + 2000, reserve


def test_pseudo_replies_are_not_requests() -> None:
    """Zero-usage replies with a harness model id are neither fitted nor checked nor the model."""
    s = with_pseudo_replies()
    wl = build_workload(SessionTree(s).path().entries, "0")
    assert all((s_.message or {}).get("model") != "delivery-mirror" for s_ in
               (wl.base[r.base_index] for r in wl.requests))
    assert wl.model == "claude-sonnet-4-5" and wl.provider == "anthropic"
    tm = pi_truth(s)
    assert abs(tm.overhead - OVERHEAD) < 50 and abs(tm.ratio - RATIO) < 0.05


def test_pseudo_replies_invent_nothing_at_recorded_settings() -> None:
    """Replay at a window whose threshold the recorded prompts stay below: no compaction, no overflow;
    a file ending with a pseudo-reply still finds its model in the catalogue."""
    s = with_pseudo_replies()
    window, reserve = _below_threshold(s)
    run = walk_run(s, ReplaySettings(window, reserve, 20000, "pi-0"))
    m = run_metrics(run)
    assert m.compactions == 0 and m.overflows == 0 and m.late == 0
    (pr,) = replay_source(s, windows=None, reserves=[reserve], keeps=[20000], policy=None)
    assert pr.model_name == "anthropic/claude-sonnet-4-5"


def test_second_overflow_in_a_run_is_recovered_after_a_success() -> None:
    """Pi clears its overflow-recovery flag after any successful reply: one long run that outgrows a
    small window twice is recovered twice, not called a failed recovery."""
    from tests.replay.test_replay import scripted

    s = scripted(runs=1, calls=40).session()
    run = walk_run(s, ReplaySettings(20000, 0, 2000, "pi-0"))
    m = run_metrics(run)
    assert m.overflow_compactions >= 2
    assert m.failed_recoveries == 0


def test_a_retry_that_overflows_again_spends_the_recovery_until_the_next_user_message() -> None:
    """Pi (agent-session.js, 0.73.1 and 1.6.0): a retry that overflows again is an error message, so
    `_overflowRecoveryAttempted` stays set until the next user message. Keeping 12,000 tokens of a
    20,000 window, the first retry of the long run overflows again: every later request of that run that
    does not fit fails (an overflow, not billed) and no overflow compaction is made until the next run."""
    from tests.replay.test_replay import scripted

    s = scripted(runs=2, calls=20).session()
    wl = build_workload(SessionTree(s).path().entries, "0")
    run = walk_run(s, ReplaySettings(20000, 0, 12000, "pi-0"))
    second_run = next(r.base_index for r in wl.requests if r.first_in_run and r.base_index > 1)
    last_of_first = max(r.base_index for r in wl.requests if r.base_index < second_run)
    first_ovf = min(p.base_index for p in run.requests if p.overflow)
    assert [p.base_index for p in run.requests if p.overflow].count(first_ovf) == 2  # the attempt and its retry
    in_first = [c for c in run.compactions if first_ovf - 1 <= c.parent_base_index < second_run - 1]
    # The recovery compaction before the first overflow, then only the check after the run's final reply.
    assert [c.reason for c in in_first] == [CompactionReason.OVERFLOW, CompactionReason.THRESHOLD]
    assert in_first[1].parent_base_index == last_of_first
    failed = [p for p in run.requests if p.overflow]
    assert run.overflows == len(failed) and len(failed) > 10
    assert run.failed_recoveries == len(failed) - sum(1 for c in run.compactions if c.reason == CompactionReason.OVERFLOW)
    assert run.billed_input == sum(p.truth for p in run.requests if not p.overflow)  # failed: not billed
    # A user message re-arms it: the next run's overflow is compacted for again.
    assert any(c.reason == CompactionReason.OVERFLOW and c.parent_base_index >= second_run - 1 for c in run.compactions)


def two_overflows_1x() -> Session:
    """A 1.x run with two recorded overflows (the provider counts far more than Pi's chars/4, as with
    CJK text), each recovered by the compaction Pi's own port makes there, a successful retry between."""
    from sessiontools.policies.pi import CompactionSettings, prepare_compaction

    b = SessionBuilder()
    b.system("you are pi")
    for n in range(2):
        b.user(f"earlier work {n} " * 1000)
        b.assistant("noted", usage=b.usage(4000 * (n + 1)))
    b.user("go")
    b.assistant("a", tool_calls=[("read", {"path": "a.py"})], usage=b.usage(9000))
    b.tool_result("read", "x" * 4000)
    for k in range(2):
        failed = b.assistant(None, error=f"prompt is too long: {21000 + 500 * k} tokens > 20000 maximum")
        b.context_edit(failed, None)
        prep = prepare_compaction(SessionTree(b.session()).path().entries, CompactionSettings(True, 500, 2000), "1")
        b.compaction(f"summary {k}", prep.first_kept_entry_id, prep.tokens_before)
        b.assistant("b", tool_calls=[("read", {"path": f"b{k}.py"})], usage=b.usage(12000 + 1000 * k))
        b.tool_result("read", "y" * 4000)
    b.assistant("done", usage=b.usage(15000))
    return b.session()


def test_recorded_overflows_twice_in_one_run_1x() -> None:
    """Replay at the recorded settings reproduces both recoveries of one run."""
    s = two_overflows_1x()
    assert s.pi_version == "1"
    wl = build_workload(SessionTree(s).path().entries, "1")
    assert sum(r.failed_overflow for r in wl.requests) == 2
    assert len({r.run for r in wl.requests if r.failed_overflow}) == 1
    run = walk_run(s, ReplaySettings(20000, 500, 2000, "pi-1"))
    assert run.overflows == 2
    assert run.failed_recoveries == 0
    assert run.recorded_match.to_dict() == {"recorded": 2, "matched": 2, "missed": 0, "extra": 0}


def test_provider_counts_in_overflow_errors_are_the_truth() -> None:
    """'prompt is too long: N tokens > M maximum': N is the truth of the rejected request."""
    s = two_overflows_1x()
    run = walk_run(s, ReplaySettings(20000, 500, 2000, "pi-1"))
    rejected = [p for p in run.requests if p.overflow]
    assert [(p.truth, p.truth_source) for p in rejected] == [(21000.0, "provider"), (21500.0, "provider")]
    assert run_metrics(run).peak_truth_tokens == 21500


def test_a_rejection_below_the_window_is_a_provider_rejection_with_its_stated_limit() -> None:
    """The same recorded rejections replayed at W 30k, above what the provider counted: not overflows
    (their truth fits the window) but provider rejections, each with the limit its error stated
    ("> 20000 maximum"), which the run record carries (`provider_limits`)."""
    from sessiontools.replay.session import run_record

    s = two_overflows_1x()
    (pr,) = replay_source(s, windows=[30000], reserves=[500], keeps=[2000], policy="pi-1")
    rec = run_record(pr, pr.runs[0])
    assert (rec["metrics"]["overflows"], rec["metrics"]["provider_rejections"]) == (0, 2)
    assert rec["provider_limits"] == [20000] and rec["metrics"]["peak_truth_tokens"] == 21500


def one_request(prompt: int = 8000, reply_chars: int = 2000) -> Session:
    """One request whose prompt is mostly a hidden system prompt (its context is a few words)."""
    b = SessionBuilder()
    b.user("hi there")
    b.assistant("r" * reply_chars, usage=b.usage(prompt))
    return b.session()


def test_few_requests_fit_is_shrunk_and_bounded() -> None:
    """One request: the ratio stays physical, the overhead takes the hidden prompt, and the fit says
    the prior dominated."""
    s = one_request()
    tm = pi_truth(s)
    assert tm.fit is not None and tm.fit.n == 1 and tm.fit.prior_dominated
    assert 0.25 <= tm.ratio <= 4.0
    assert 0 <= tm.overhead <= 8000 and tm.overhead > 7000


def test_single_request_invents_nothing_at_recorded_settings() -> None:
    s = one_request()
    run = walk_run(s, ReplaySettings(32000, 16384, 20000, "pi-0"))
    m = run_metrics(run)
    assert m.compactions == 0 and m.overflows == 0 and m.late == 0


def grow(b: SessionBuilder, runs: int, start: int, step: int, text: str = "please continue the work ") -> None:
    for r in range(runs):
        b.user(text * 30)
        b.assistant("ok " * 200, usage=b.usage(start + step * r, 200))


def test_hook_summaries_are_replayed_as_recorded() -> None:
    """A compaction an extension wrote (fromHook) far below the threshold is the user's action: replay
    applies it where it was recorded, and invents nothing after it at recorded settings."""
    b = SessionBuilder()
    grow(b, 10, 5000, 3000)  # up to 32k
    keep_from = b.entries[-4]["id"]
    b.compaction("## Goal\nhook summary of the work so far", keep_from, 32000)
    b.entries[-1]["fromHook"] = True
    grow(b, 10, 6000, 3000)  # up to 33k again
    s = b.session()
    run = walk_run(s, ReplaySettings(64000, 16384, 20000, "pi-0"))
    m = run_metrics(run)
    assert m.compactions == 0 and m.overflows == 0 and m.late == 0
    assert m.user_compactions == 1
    assert all(p.truth_source == "recorded" for p in run.requests)


def test_cjk_session_invents_nothing_at_recorded_settings() -> None:
    """Chinese text: the provider counts about one token per character, four times chars/4. Prompts
    below the threshold: nothing is invented."""
    b = SessionBuilder()
    ctx = 0
    for _ in range(12):
        b.user("请继续完成这个任务，不要修改测试文件。" * 20)
        ctx += estimate_tokens(b.entries[-1]["message"], "0")
        b.assistant("好的，已经完成。" * 30, usage=b.usage(2000 + 4 * ctx, 240))
        ctx += estimate_tokens(b.entries[-1]["message"], "0")
    s = b.session()
    window, reserve = _below_threshold(s)
    m = run_metrics(walk_run(s, ReplaySettings(window, reserve, 20000, "pi-0")))
    assert m.compactions == 0 and m.overflows == 0 and m.late == 0


def _hook_at_policy_point(hook: bool) -> tuple[Session, ReplaySettings]:
    """A session that crosses the threshold once, with (or without) a fromHook compaction recorded at
    the point where the policy itself compacts, keeping what the policy keeps (Pi lets an extension
    write the summary of its own threshold compaction)."""
    settings = ReplaySettings(30000, 8000, 6000, "pi-0")

    def build(at: tuple[str, str, int] | None) -> Session:
        b = SessionBuilder()
        grow(b, 10, 5000, 2500)  # 5k .. 27.5k: over T = 22k from run 8
        if at is not None:
            parent, first_kept, tokens_before = at
            k = next(i for i, e in enumerate(b.entries) if e["id"] == parent)
            tail = b.entries[k + 1:]
            del b.entries[k + 1:]
            b.branch(parent)
            b.compaction("## Goal\nsummary written by an extension", first_kept, tokens_before)
            if hook:
                b.entries[-1]["fromHook"] = True
            prev = b.entries[-1]["id"]
            for e in tail:
                e["parentId"], prev = prev, e["id"]
            b.entries.extend(tail)
        return b.session()

    plain = build(None)
    first = walk_run(plain, settings).compactions[0]
    return build((first.parent_entry_id, first.first_kept_entry_id, first.tokens_before)), settings  # type: ignore[arg-type]


def test_hook_compaction_at_the_policys_point_is_one_compaction_reproduced() -> None:
    """Issue 12 (left over): where a hook compaction coincides with the policy's, the policy's
    compaction took the hook's summary and then the hook compaction was applied again (two
    compactions where the file has one), and the tally read "1/0" recorded reproduced. Issue 24: a
    hook's compaction is the user's at every setting (here too, where the policy also compacts), so
    the tally does not depend on the setting: 0/0 and one user compaction; Pi's own is reproduced 1/1."""
    for hook in (True, False):
        s, settings = _hook_at_policy_point(hook)
        run = walk_run(s, settings)
        rm = run.recorded_match
        at = [c for c in run.compactions if c.parent_entry_id == run.compactions[0].parent_entry_id]
        assert len(at) == 1, (hook, [c.reason for c in at])
        assert at[0].reason == (CompactionReason.USER if hook else CompactionReason.THRESHOLD)
        assert rm.matched <= rm.recorded and (rm.recorded, rm.matched) == ((0, 0) if hook else (1, 1)), (hook, rm)
