"""The rough-lab samples contain what their names promise, computed from the files with plain json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"
OVERFLOW = re.compile(r"maximum context length is \d+ tokens", re.I)
ROUGH = ("pi0-two-overflows", "pi1-two-overflows", "pi0-pseudo-mirror", "pi1-rough-pseudo", "pi0-rough-chinese",
         "pi1-few-pseudo", "pi0-few-pseudo")
USAGE = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def lines(name: str) -> list[dict]:
    path = SAMPLES / f"{name}.jsonl"
    if not path.exists():
        pytest.fail(f"{path} is missing: run python -m lab.generate --out sample_sessions --only {name}")
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def manifest() -> dict:
    return json.loads((SAMPLES / "manifest.json").read_text(encoding="utf-8"))


def assistants(entries: list[dict]) -> list[dict]:
    return [e["message"] for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"]


def is_pseudo(m: dict) -> bool:
    return m.get("stopReason") != "error" and all(not (m.get("usage") or {}).get(k) for k in USAGE)


def is_overflow(m: dict) -> bool:
    return m.get("role") == "assistant" and m.get("stopReason") == "error" and bool(
        OVERFLOW.search(m.get("errorMessage") or ""))


def runs(entries: list[dict]) -> list[list[dict]]:
    """Entries from each user message up to the next one."""
    out: list[list[dict]] = []
    for e in entries[1:]:
        if e["type"] == "message" and e["message"]["role"] == "user":
            out.append([])
        if out:
            out[-1].append(e)
    return out


@pytest.mark.parametrize("name", ROUGH)
def test_rough_samples_are_listed_with_their_settings(name: str) -> None:
    meta = manifest()[name]
    assert meta["tokenizer"] == "rough" and "ratio" not in meta
    assert meta["overhead"][0] < meta["overhead"][1]
    assert meta["facts"]["compactions"] == sum(1 for e in lines(name) if e["type"] == "compaction")
    assert meta["facts"]["pseudo_replies"] == sum(1 for m in assistants(lines(name)) if is_pseudo(m))


@pytest.mark.parametrize("name", [n for n in ROUGH if "pseudo" in n])
def test_pseudo_replies_have_zero_usage_and_harness_model_ids(name: str) -> None:
    entries = lines(name)
    pseudo = [m for m in assistants(entries) if is_pseudo(m)]
    assert len(pseudo) >= 1
    for m in pseudo:
        assert m["provider"] == "openclaw"
        assert m["model"] in ("lab-mirror", "lab-gateway")
        assert m["stopReason"] == "stop"
        assert all(v == 0 for v in m["usage"]["cost"].values())
    real = [m for m in assistants(entries) if not is_pseudo(m)]
    assert real and all(m["model"] == "lab-model" and m["provider"] == "lab" for m in real)
    # a pseudo-reply is never followed by a tool result: no model request made it
    by_parent = {e.get("parentId"): e for e in entries[1:]}
    ids = [e["id"] for e in entries[1:] if e["type"] == "message" and e["message"] in pseudo]
    for i in ids:
        nxt = by_parent.get(i)
        assert nxt is None or nxt["type"] != "message" or nxt["message"]["role"] != "toolResult"
    # a delivery mirror repeats the answer it mirrors
    mirrors = [m for m in pseudo if m["model"] == "lab-mirror"]
    finals = {m["content"][0]["text"] for m in real if m["stopReason"] == "stop" and m["content"]}
    assert all(m["content"][0]["text"] in finals for m in mirrors)


@pytest.mark.parametrize("name", ["pi0-two-overflows", "pi1-two-overflows"])
def test_two_overflows_and_two_recoveries_in_one_run(name: str) -> None:
    entries = lines(name)
    by_id = {e["id"]: e for e in entries[1:]}
    found = False
    for run in runs(entries):
        errors = [e for e in run if e["type"] == "message" and is_overflow(e["message"])]
        if len(errors) < 2:
            continue
        found = True
        # every overflow error is answered by a recovery compaction whose parent chain reaches it
        comps = [e for e in run if e["type"] == "compaction"]
        recovered = set()
        for c in comps:
            p = by_id.get(c["parentId"])
            while p is not None and p["type"] == "context_edit":
                p = by_id.get(p["parentId"])
            if p is not None and p["type"] == "message" and is_overflow(p["message"]):
                recovered.add(p["id"])
        assert {e["id"] for e in errors} <= recovered
        # a successful model reply lies between consecutive overflows
        pos = [run.index(e) for e in errors]
        for a, b in zip(pos, pos[1:], strict=False):
            between = [e["message"] for e in run[a + 1:b] if e["type"] == "message"]
            assert any(m["role"] == "assistant" and m["stopReason"] in ("toolUse", "stop") and not is_pseudo(m)
                       for m in between)
        # and the run ends with the model's final answer
        last = [e["message"] for e in run if e["type"] == "message" and e["message"]["role"] == "assistant"][-1]
        assert last["stopReason"] == "stop"
    assert found, "no run with two overflow errors"
    facts = manifest()[name]["facts"]
    assert facts["max_overflows_in_run"] >= 2 and facts["recovered_between_overflows"]


@pytest.mark.parametrize("name", ["pi1-few-pseudo", "pi0-few-pseudo"])
def test_few_requests(name: str) -> None:
    entries = lines(name)
    real = [m for m in assistants(entries) if not is_pseudo(m)]
    assert 1 <= len(real) <= 2
    assert all(m["stopReason"] == "stop" for m in real)
    assert sum(1 for m in assistants(entries) if is_pseudo(m)) >= 1
    assert not any(e["type"] == "compaction" for e in entries)


@pytest.mark.parametrize("name", ROUGH)
def test_final_answers_are_counted_by_the_rough_tokenizer(name: str) -> None:
    """A tool-free final answer's usage.output is the rough count of its text (the server's rule)."""
    from lab.rough import RoughTokenizer

    tok = RoughTokenizer()
    finals = [m for m in assistants(lines(name)) if not is_pseudo(m) and m["stopReason"] == "stop"
              and all(b["type"] == "text" for b in m["content"])]
    assert finals
    for m in finals:
        text = "".join(b["text"] for b in m["content"])
        assert m["usage"]["output"] == tok.count(text)


def test_rough_chinese_is_chinese_heavy() -> None:
    facts = manifest()["pi0-rough-chinese"]["facts"]
    assert facts["cjk_share"] >= 0.3 and facts["compactions"] >= 1


def test_new_samples_stay_small() -> None:
    total = sum((SAMPLES / f"{n}.jsonl").stat().st_size for n in ROUGH)
    assert total < 2 * 1024 * 1024
