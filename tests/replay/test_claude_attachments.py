"""Claude Code's attachment lines: the text it sends for a file the user edited (`edited_text_file`) is a
message of the path, and the releases whose estimate counts attachments (2.1.45 - 2.1.152, read in
cli.js and the native binaries' JS) count it before their next request.

The shape is that of a real 2.1.132 file (no text from it): a response near T, the user edits a file
and sends a prompt; the attachment's snippet pushes the count past T, so the CLI compacts at that
prompt. Without the attachment the count stays below T and the replay compacts one request later.
"""

from __future__ import annotations

import pytest

from sessiontools.policies.claude_code_rules import rule_for
from sessiontools.read.claude_code import parse_bytes
from sessiontools.transcript.claude_attachments import attachment_text, system_reminder
from sessiontools.transcript.claude_code import claude_transcript
from sessiontools.transcript.model import Role
from tests.read.test_claude_code import _asst, _bytes, _line, _result, _summary_text, _tool_use, _user
from tests.replay.test_claude_code_real_shapes import _replay, _v

MODEL = "claude-opus-4-6"
SNIPPET = "1\t<odoo>\n" + "2\t    <field name='x'/>\n" * 320  # 7,689 characters
#: The count at the prompt (and the recorded preTokens).
COUNT = 168_026


def _edited(uuid: str, parent: str, snippet: str = SNIPPET) -> dict:
    return _line(uuid, parent, "attachment", attachment={"type": "edited_text_file", "filename": "/w/v.xml",
                                                         "snippet": snippet})


def test_edited_file_is_rendered_as_claude_code_sends_it() -> None:
    text = attachment_text(_edited("a", "p", "1\tx"))
    assert text == system_reminder(
        "Note: /w/v.xml was modified, either by the user or by a linter. This change was intentional, so make "
        "sure to take it into account as you proceed (ie. don't revert it unless the user asks you to). Don't "
        "tell the user this, since they are already aware. Here are the relevant changes (shown with line "
        "numbers):\n1\tx")
    assert text.startswith("<system-reminder>\nNote: ") and text.endswith("\n1\tx\n</system-reminder>")
    assert "snippet budget" in (attachment_text(_edited("a", "p", "")) or "")  # 2.1.132's omitted diff
    assert attachment_text(_line("a", "p", "attachment", attachment={"type": "date", "date": "x"})) is None
    assert attachment_text(_line("a", "p", "attachment", attachment={"type": "edited_text_file"})) is None
    assert attachment_text(_user("u", None, "hi")) is None


def _file(version: str = "2.1.132") -> list:
    """A response at 165,640 (+ a 1,500-char answer on its second line), the user edits a file and
    prompts: 165,640 + 375 + 2 + round(len(attachment) / 4) = `COUNT` >= 167,000; without the
    attachment 166,017. The recorded compaction is at that prompt, its `preTokens` the count."""
    lines = [
        _user("1u", None, "task 1"),
        _asst("1a", "1u", "msg_1", [_tool_use("t1", file_path="/w/v.xml")], usage=(10, 150_000, 0, 100), model=MODEL),
        _user("1r", "1a", _result("t1", "x" * 20_000)),
        _asst("2a", "1r", "msg_2", [{"type": "thinking", "thinking": "t", "signature": ""}],
              usage=(8, 164_926, 149, 557), model=MODEL),
        _asst("2b", "2a", "msg_2", [{"type": "text", "text": "y" * 1_500}], usage=(8, 164_926, 149, 557), model=MODEL),
        _user("3u", "2b", "now fix!"),
        _edited("3e", "3u"),
        _line("b1", None, "system", subtype="compact_boundary", logicalParentUuid="3e",
              compactMetadata={"trigger": "auto", "preTokens": COUNT}),
        _user("s1", "b1", _summary_text("## Goal\n- task 1"), isCompactSummary=True),
        _asst("4a", "s1", "msg_4", [{"type": "text", "text": "done"}], usage=(10, 20_000, 0, 50), model=MODEL),
    ]
    return _v(lines, version)


def _queued(prompt, **kw) -> dict:  # type: ignore[no-untyped-def]
    return _line("q", "p", "attachment", attachment={"type": "queued_command", "prompt": prompt,
                                                     "commandMode": "prompt", **kw})


def test_a_queued_prompt_is_rendered_as_claude_code_sends_it() -> None:
    want = system_reminder("The user sent a new message while you were working:\nfix it too\n\nIMPORTANT: After "
                           "completing your current task, you MUST address the user's message above. Do not ignore it.")
    assert attachment_text(_queued("fix it too")) == want
    assert attachment_text(_queued([{"type": "text", "text": "fix it"}, {"type": "image", "source": {}},
                                    {"type": "text", "text": "too"}])) == want.replace("fix it too", "fix it\ntoo")
    assert attachment_text(_queued("x", origin={"kind": "human"})) == want.replace("fix it too", "x")
    # other origins have other templates: not rendered
    assert attachment_text(_queued("x", origin={"kind": "coordinator"})) is None
    assert attachment_text(_queued("x", commandMode="task-notification")) is None
    assert attachment_text(_queued(None)) is None


def test_the_attachment_is_a_message_on_the_path() -> None:
    t = claude_transcript(parse_bytes(_bytes(_file()), "x.jsonl"))
    (att,) = [m for m in t.main.messages if isinstance(m.raw, dict) and m.raw.get("type") == "attachment"]
    assert att.role is Role.OTHER and att.text.endswith(SNIPPET + "\n</system-reminder>")
    dated = [_user("u", None, "hi"), _line("d", "u", "attachment", attachment={"type": "date", "date": "x"}),
             _asst("a", "d", "m", [{"type": "text", "text": "ok"}])]
    assert [m.role for m in claude_transcript(parse_bytes(_bytes(dated), "x.jsonl")).main.messages] == [
        Role.USER, Role.ASSISTANT]  # an attachment not rendered is no message, as before


def test_releases_from_2_1_45_count_it() -> None:
    assert not rule_for("2.1.44").counts_attachments and rule_for("2.1.45").counts_attachments
    assert rule_for("2.1.152").counts_attachments and not rule_for("2.1.153").counts_attachments
    att = len(attachment_text(_edited("3e", "3u")) or "")
    assert COUNT == 165_640 + 375 + 2 + (2 * att + 4) // 8  # usage + Math.round(len / 4) per message
    rec = _replay(_file())
    assert rec["recorded_match"] == {"recorded": 1, "matched": 1, "missed": 0, "extra": 0}
    assert [c["tokens_before"] for c in rec["compactions"]] == [COUNT]


def test_a_release_that_does_not_count_it_compacts_later() -> None:
    """The same file under 2.1.44's rule (`--cli-version`), whose estimate leaves attachments out: the
    count at the prompt stays below T (usage + the prompt: 2.1.44 counts after the response's last line),
    so the recorded compaction is not reproduced there."""
    rec = _replay(_file(), version="2.1.44")
    assert rec["recorded_match"]["matched"] == 0


@pytest.mark.parametrize("value", [[], ["edited_text_file"], {}, {"a": 1}, 7, None, True, "\ud800"])
def test_an_attachment_type_of_any_json_value_is_not_rendered(value: object) -> None:
    """The value fuzzing's find: a list or an object where the type stands was used as a key."""
    assert attachment_text({"type": "attachment", "attachment": {"type": value, "prompt": "p"}}) is None
