"""Shapes the real Claude Code transcripts of the JS releases (2.0.x - 2.1.63) show around their
compactions, written here as small synthetic files (what the real ones taught, no text from them):

- auto-compact off (`autoCompactEnabled` false): the count passes T, the API answers "Prompt is too
  long" (a synthetic reply), the user runs `/compact`. The JS releases never compact reactively, so
  the replay applies the manual compaction and adds none of its own;
- the evidence that auto-compact was off is the release's own count (usage + its estimate of the
  messages after the newest reply) at or above T before a request that was sent, not the usage alone;
- a threshold compaction written right before a request the provider failed for another reason
  (a rate limit: "You've hit your limit"), the file's last request.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from sessiontools.policies.base import PolicyName
from sessiontools.policies.claude_code import claude_code_policy
from sessiontools.policies.claude_code_recorded import default_policy, recorded_counts
from sessiontools.policies.claude_code_rules import NEWEST, RULES, rule_for
from sessiontools.read.claude_code import parse_bytes
from sessiontools.replay.session import run_record
from sessiontools.replay.transcripts import replay_transcript
from sessiontools.transcript.claude_code import claude_transcript
from sessiontools.transcript.model import Trigger
from tests.read.test_claude_code import _asst, _bytes, _line, _result, _summary_text, _tool_use, _user

MODEL = "claude-opus-4-5-20251101"


def _v(lines: list, version: str) -> list:
    return [{**x, "version": version} if "uuid" in x else x for x in lines]


def _synthetic(uuid: str, parent: str, text: str) -> dict:
    return _line(uuid, parent, "assistant", isApiErrorMessage=True,
                 message={"id": f"syn-{uuid}", "role": "assistant", "model": "<synthetic>",
                          "content": [{"type": "text", "text": text}],
                          "usage": {"input_tokens": 0, "output_tokens": 0}})


def _work(prefix: str, parent: str | None, cache_read: int, result_chars: int) -> list:
    """A prompt, a response at `cache_read` (+ 10 in, 100 out) with a tool call, its result of
    `result_chars` characters."""
    return [
        _user(f"{prefix}u", parent, f"task {prefix}"),
        _asst(f"{prefix}a", f"{prefix}u", f"msg_{prefix}", [_tool_use(f"t{prefix}", file_path="/w/a.py")],
              usage=(10, cache_read, 0, 100), model=MODEL),
        _user(f"{prefix}r", f"{prefix}a", _result(f"t{prefix}", "x" * result_chars)),
    ]


def _manual_after_too_long(version: str) -> list:
    """150,110 tokens of usage, then a 32,000-character tool result (8,000 estimated): the count is
    158,110 >= 155,000; the request is rejected, the user compacts by hand, then works on."""
    lines = [*_work("1", None, 150_000, 32_000), _synthetic("e1", "1r", "Prompt is too long"),
             _line("b1", None, "system", subtype="compact_boundary", logicalParentUuid="e1",
                   compactMetadata={"trigger": "manual", "preTokens": 158110}),
             _user("s1", "b1", _summary_text("## Goal\n- task 1"), isCompactSummary=True),
             *_work("2", "s1", 20_000, 400),
             _asst("2z", "2r", "msg_2z", [{"type": "text", "text": "done"}], usage=(10, 20_500, 0, 50), model=MODEL)]
    return _v(lines, version)


def _replay(lines: list, version: str | None = None) -> dict:
    t = claude_transcript(parse_bytes(_bytes(lines), "x.jsonl"))
    (rec,) = [run_record(tr, run) for tr in replay_transcript(t, windows=None, reserves=[0], keeps=[0], policy=None,
                                                               version=version) for run in tr.runs]
    return rec


def test_only_the_newest_release_compacts_reactively() -> None:
    assert NEWEST.reactive and not any(r.reactive for r in RULES if r is not NEWEST)
    assert not claude_code_policy("claude-code", "2.1.63").recovery().may_retry()
    assert claude_code_policy("claude-code", "2.1.332").recovery().may_retry()


@pytest.mark.parametrize("version", ["2.0.76", "2.1.12", "2.1.19"])
def test_prompt_too_long_then_manual_compact_adds_no_compaction(version: str) -> None:
    """Auto-compact was off (the count passed T before a request that was sent): the default policy is
    the reactive one, which in a JS release never compacts itself (and under `claude-code` the
    rejected request does not make it compact either); the user's /compact is applied,
    nothing extra; the rejected request is a failed one."""
    lines = _manual_after_too_long(version)
    t = claude_transcript(parse_bytes(_bytes(lines), "x.jsonl"))
    assert [c.trigger for c in t.main.compactions] == [Trigger.MANUAL] and len(t.main.overflows) == 1
    # 2.0.76 counts the usage alone (150,110 < T): no evidence, `claude-code` (below)
    want = PolicyName.CLAUDE_CODE if version == "2.0.76" else PolicyName.CLAUDE_CODE_REACTIVE
    assert default_policy(t) == want
    rec = _replay(lines)
    assert rec["recorded_match"] == {"recorded": 0, "matched": 0, "missed": 0, "extra": 0}
    assert rec["metrics"]["user_compactions"] == 1
    assert [c["reason"] for c in rec["compactions"]] == ["user"]


def test_auto_compact_off_needs_the_releases_count() -> None:
    """2.1.12 adds its estimate of the tool result (8,000) to the usage (150,110): 158,110 >= T. 2.0.76
    counts the usage alone (150,110 < T): nothing shows auto-compact off, so `claude-code` it is, which
    (its count never reaching T) adds no compaction either."""
    new, old = _manual_after_too_long("2.1.12"), _manual_after_too_long("2.0.76")
    t_new = claude_transcript(parse_bytes(_bytes(new), "x.jsonl"))
    pol = claude_code_policy("claude-code", "2.1.12", MODEL)
    counts = dict(recorded_counts(t_new.main, pol))
    assert counts[t_new.main.overflows[0].index] == 150_110 + 32_000 / 4
    assert dict(recorded_counts(t_new.main))[t_new.main.overflows[0].index] == 150_110  # usage alone
    t_old = claude_transcript(parse_bytes(_bytes(old), "x.jsonl"))
    assert default_policy(t_old) == PolicyName.CLAUDE_CODE
    assert _replay(old)["recorded_match"]["extra"] == 0


def test_under_its_own_rule_the_newest_release_would_have_compacted() -> None:
    """The same 2.1.12 file replayed as 2.1.332 (`--cli-version`): that release compacts reactively,
    so the rejected request is retried after a compaction (no failed recovery; under 2.1.12's own
    rule it is one). It compacts where the user compacted by hand: the user's compaction is applied
    there once, not the release's with the user's on top (the walk's rule for a user compaction at
    the policy's own point, `test_a_user_compaction_where_the_policy_compacts_is_applied_once`).
    Before that rule the replay made both: an overflow compaction summarising 21,993 tokens ($0.11,
    more than the agent's own $0.10) counted as an extra, then the user's at the same point."""
    lines = _manual_after_too_long("2.1.12")
    new, own = _replay(lines, version="2.1.332"), _replay(lines)
    assert new["metrics"]["user_compactions"] == 1 and new["recorded_match"]["extra"] == 0
    assert new["metrics"]["failed_recoveries"] == 0 and own["metrics"]["failed_recoveries"] == 1
    assert [c["reason"] for c in new["compactions"]] == ["user"]


def _threshold_before_rate_limit() -> list:
    """2.0.76: a response at 150,110 + a result of 24,000 chars; the next response at 156,110 (>= T);
    its tool result; the CLI compacts (auto, preTokens 156,210) before the next request, which the
    provider fails with a rate limit (a synthetic reply, no usage): the file ends there."""
    lines = [*_work("1", None, 150_000, 24_000),
             _asst("1b", "1r", "msg_1b", [_tool_use("t1b", file_path="/w/b.py")], usage=(10, 156_000, 0, 200),
                   model=MODEL),
             _user("1s", "1b", _result("t1b", "ok")),
             _line("b1", None, "system", subtype="compact_boundary", logicalParentUuid="1s",
                   compactMetadata={"trigger": "auto", "preTokens": 156210}),
             _user("s1", "b1", _summary_text("## Goal\n- task 1"), isCompactSummary=True),
             _synthetic("e1", "s1", "You've hit your limit · resets 9pm")]
    return _v(lines, "2.0.76")


def test_threshold_compaction_before_a_failed_request_is_reproduced() -> None:
    """A threshold compaction recorded right before a request the provider failed (a rate limit) is
    reproduced: the walk's check point before an agent's own recorded compaction (2 of 14 automatic
    compactions on real 2.0.74 files were missed before)."""
    rec = _replay(_threshold_before_rate_limit())
    assert rec["recorded_match"] == {"recorded": 1, "matched": 1, "missed": 0, "extra": 0}


def test_rule_lookup_for_the_real_versions() -> None:
    assert not rule_for("2.0.74").reactive and not rule_for("2.1.19").reactive


def _cand(i: int, role: str, tokens: float, raw: dict | None = None):  # type: ignore[no-untyped-def]
    from sessiontools.policies.base import Candidate
    from sessiontools.transcript.model import Message, Role

    msg = Message(i, f"m{i}", i, Role.TOOL if role == "tool" else Role(role), (), raw=raw)
    return Candidate(i, role, role == "user", tokens, msg)


def _read(i: int, path: str, tokens: float, num: int = 10, total: int = 10):  # type: ignore[no-untyped-def]
    raw = {"type": "user", "version": "2.1.12", "message": {"content": [{"type": "tool_result", "tool_use_id": f"t{i}"}]},
           "toolUseResult": {"type": "text", "file": {"filePath": path, "numLines": num, "totalLines": total}}}
    return _cand(i, "tool", tokens, raw)


def test_restored_files_are_the_five_newest_reads_within_the_limits() -> None:
    """cli.js 2.0.2 - 2.1.63: the 5 files read most recently, each at most 5,000 tokens (a larger one
    fails to re-read), newest first while the total fits 50,000; a file read twice counts once, at
    its newest read; a partial read stands for the whole file (totalLines / numLines)."""
    from sessiontools.policies.claude_code import restored_files

    cands = [_cand(0, "user", 10), _read(1, "/a", 100), _read(2, "/b", 200), _read(3, "/c", 4000, num=10, total=20),
             _read(4, "/d", 300), _read(5, "/a", 120), _read(6, "/e", 5001), _read(7, "/f", 400), _read(8, "/g", 500),
             _read(9, "/h", 600)]
    # newest first: /h 9, /g 8, /f 7, /e 6 (too big), /a 5 -> the five newest files are h g f e a
    assert restored_files(cands) == (5, 7, 8, 9)
    assert restored_files(cands[:5]) == (1, 2, 4)  # /c: 4000 x 20/10 lines > 5000
    big = [_read(i, f"/{i}", 4900) for i in range(1, 12)]
    assert restored_files(big) == (7, 8, 9, 10, 11)  # only five files, 24,500 tokens
    pol = claude_code_policy("claude-code", "2.1.12")
    kept = pol.keep(cands, None)  # type: ignore[arg-type]
    assert kept.indices == (5, 7, 8, 9) and kept.until_next_prompt
    assert claude_code_policy("claude-code", "2.1.332").keep(cands, None).until_next_prompt is False  # type: ignore[arg-type]


def test_restored_files_leave_at_a_print_mode_prompt_only() -> None:
    from sessiontools.policies.claude_code import print_mode_prompt
    from sessiontools.transcript.model import Message, Role

    pol = claude_code_policy("claude-code", "2.1.12")
    printed = {"type": "user", "version": "2.1.12", "message": {"content": "Task 2"}}
    repl = {**printed, "thinkingMetadata": {"level": "none"}, "todos": []}
    assert print_mode_prompt(Message(0, "u", 0, Role.USER, (), raw=printed))
    assert not pol.new_process(Message(0, "u", 0, Role.USER, (), raw=repl))
    assert not pol.new_process(Message(0, "u", 0, Role.USER, (), raw={"type": "message"}))  # another agent's


PAIRS = [("claude-2.1.20", "claude-2.1.21"), ("claude-2.1.21", "claude-2.1.20"), ("claude-2.1.12", "claude-2.1.20"),
         ("claude-2.1.20", "claude-2.1.12"), ("claude-2.1.21", "claude-2.1.63"), ("claude-2.1.63", "claude-2.1.21"),
         ("claude-2.1.150", "claude-2.1.150-15"), ("claude-2.1.150-15", "claude-2.1.150")]


#: Probe recordings of the pairs kept out of sample_sessions (tests/fixtures/claude_probes; recorded as
#: `claude-2.1.150` with `pct=15`: `lab.claude_driver.ClaudeRecording("claude-2.1.150-15", seed=3,
#: prompts=6, profile="heavy", pct=15, server_window=400000, version="2.1.150", model="claude-sonnet-4-5")`)
PROBE_PAIRS = {"claude-2.1.150-15": {"pct": 15, "version": "2.1.150"}}


def _pair_file(name: str, d: Path, tmp_path: Path) -> Path:
    if name not in PROBE_PAIRS:
        return d / f"{name}.jsonl"
    out = tmp_path / f"{name}.jsonl"
    probes = Path(__file__).resolve().parents[1] / "fixtures" / "claude_probes"
    out.write_bytes(gzip.decompress((probes / f"{name}.jsonl.gz").read_bytes()))
    return out


@pytest.mark.parametrize(("name", "other"), PAIRS)
def test_what_if_pairs_predict_each_other(name: str, other: str, tmp_path: Path) -> None:
    """A lab recording replayed under the other release's rule (same workload, same percentage, one
    rule apart; or the same release at the other's percentage) predicts the other's compaction count
    and agent prompt tokens within 3%. Measured: 2.1.20 as 2.1.21 -2.3%, 2.1.21 as 2.1.20 -2.3%
    (before the restored files: -9.4%, -4.8%); 2.1.12 / 2.1.20 -1.6%, +1.6%; 2.1.21 / 2.1.63 +0.2%,
    -0.2%; within the 2.1.140 - 2.1.152 row, 2.1.150 at 14% / at 15% -0.3%, +0.3%. The counts are
    equal in each."""
    import json

    from sessiontools.transcript.claude_code import load_claude_transcript

    d = Path(__file__).resolve().parents[2] / "sample_sessions" / "claude-code"
    manifest = {**json.loads((d / "manifest.json").read_text()), **PROBE_PAIRS}
    if not {name, other} <= set(manifest):
        pytest.skip("multi-version samples missing")
    t = load_claude_transcript(_pair_file(name, d, tmp_path))
    (tr,) = replay_transcript(t, windows=None, reserves=[0], keeps=[0], policy=None,
                              claude={"autocompact_pcts": [manifest[other]["pct"]]}, version=manifest[other]["version"])
    run = tr.runs[0]
    want = load_claude_transcript(_pair_file(other, d, tmp_path)).main
    assert len(run.compactions) == len(want.compactions)
    prompt = sum(r.usage.prompt for r in want.requests)
    assert abs(run.billed_input / prompt - 1) <= 0.03, run.billed_input / prompt - 1


def test_rows_after_2_1_63_read_from_cli_js() -> None:
    """2.1.74: the estimate counts tool calls (name + JSON input) and thinking, an image or document
    2000; 2.1.75: CLAUDE_CODE_AUTO_COMPACT_WINDOW (at least 100000); 2.1.98: the estimate starts after
    the newest response's first line."""
    from sessiontools.policies.base import CountView, PolicySettings
    from sessiontools.policies.claude_code_rules import threshold
    from sessiontools.transcript.model import Message, Role

    raw = {"type": "assistant", "message": {"content": [
        {"type": "text", "text": "abcdef"},  # round(6/4) = 2
        {"type": "tool_use", "id": "t", "name": "Read", "input": {"file_path": "/w/a.py"}},  # 4 + 22 chars: 7
        {"type": "thinking", "thinking": "zzzz"},  # 1
        {"type": "image", "source": {}}]}}  # 2000
    m = Message(0, "u", 1, Role.ASSISTANT, (), raw=raw)
    assert claude_code_policy("claude-code", "2.1.73").size(m)[0] == 4 * (2 + 1334)  # text and image only
    assert claude_code_policy("claude-code", "2.1.74").size(m)[0] == 4 * (2 + 7 + 1 + 2000)
    assert claude_code_policy("claude-code", "2.1.74").count(CountView(1000, [(40, 40)])) == 1010
    assert threshold(rule_for("2.1.74"), 50_000, "claude-sonnet-4-5") == 50_000 - 20_000 - 13_000
    assert threshold(rule_for("2.1.75"), 50_000, "claude-sonnet-4-5") == 100_000 - 20_000 - 13_000
    assert threshold(rule_for("2.1.75"), 200_000, "claude-sonnet-4-5", 14) == 25_200
    assert not claude_code_policy("claude-code", "2.1.97").counts_own_reply
    assert claude_code_policy("claude-code", "2.1.98").counts_own_reply
    pol = claude_code_policy("claude-code", "2.1.112", "claude-opus-4-5-20251101")
    assert pol.threshold(PolicySettings(200_000)) == 167_000 and not pol.reactive


def test_truth_after_the_restored_files_leave_is_not_the_prompt_that_held_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """claude-2.1.20 under its own rule (all 3 compactions reproduced): at a print-mode prompt the
    restored files leave the simulated context, as they left the recorded one. The truth at the check
    point before the next request is then not the previous recorded prompt (which held them) plus the
    messages since: before the anchor was dropped there it was 21,738 against that request's recorded
    9,318 (T 23,520); now 8,790 (-5.7%), and 8,682 against 9,513 (-8.7%) after the third."""
    import json
    from itertools import pairwise
    from pathlib import Path

    import sessiontools.replay.walk as walk_mod
    from sessiontools.transcript.claude_code import load_claude_transcript

    d = Path(__file__).resolve().parents[2] / "sample_sessions" / "claude-code"
    manifest = json.loads((d / "manifest.json").read_text())
    if "claude-2.1.20" not in manifest:
        pytest.skip("multi-version samples missing")
    t = load_claude_transcript(d / "claude-2.1.20.jsonl")
    seen: list[tuple[int | None, float, bool, bool]] = []  # (next message, truth, prefix before, after)
    real = walk_mod._Walk.check

    def spy(self: walk_mod._Walk, upto: int, *args: Any, **kwargs: Any) -> float:
        before, truth = bool(self.prefix), self.truth_at(upto)
        out = real(self, upto, *args, **kwargs)
        seen.append((self.work[upto] if upto < len(self.work) else None, truth, before, bool(self.prefix)))
        return out

    monkeypatch.setattr(walk_mod._Walk, "check", spy)
    (tr,) = replay_transcript(t, windows=None, reserves=[0], keeps=[0], policy=None,
                              claude={"autocompact_pcts": [manifest["claude-2.1.20"]["pct"]]})
    rm = tr.runs[0].recorded_match
    assert rm.recorded == rm.matched == 3 and rm.extra == 0
    prompt = {r.index: r.usage.prompt for r in t.main.requests}
    left = [(nxt, truth) for (_, _, _, had), (nxt, truth, now, _) in pairwise(seen) if had and not now]
    assert len(left) == 2
    for nxt, truth in left:
        assert abs(truth / prompt[nxt] - 1) <= 0.1, (nxt, truth, prompt[nxt])
