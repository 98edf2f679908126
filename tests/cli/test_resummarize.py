"""`sessiontools resummarize` against the lab server on 127.0.0.1 (no other network).

The proof of the request: at the recorded settings, the lab's seeded summariser answering our
requests over HTTP regenerates, chained, every summary the real Pi CLI recorded in the bundled
samples, byte for byte. Then: a second run sends nothing, a grid writes one file per setting, the
files are read back by the other commands, the input is never touched, and the endpoint's failure
modes (retries, a refused request, both wire formats, streaming) behave as documented.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest

from lab.server import LabServer, ServerConfig
from lab.workload import build_workload
from sessiontools.cli import main
from sessiontools.read import load_session
from sessiontools.transcript.pi.tree import SessionTree
from tests.conftest import SAMPLES

MANIFEST = json.loads((SAMPLES / "manifest.json").read_text(encoding="utf-8"))
WITH_COMPACTIONS = {n: m for n, m in MANIFEST.items() if m["facts"]["compactions"]}


def lab(seed: int) -> LabServer:
    return LabServer(ServerConfig(workload=build_workload(seed, 1), window=10**9))


def summary_requests(server: LabServer) -> int:
    return sum(1 for r in server.model.log if r.kind in ("initial", "update", "turn_prefix"))


def resum(args: list[str], capsys, tmp_path: Path) -> tuple[int, dict | None, str]:  # type: ignore[no-untyped-def]
    code = main(["resummarize", *args, "--cache-dir", str(tmp_path / "cache"), "--format", "json"])
    out, err = capsys.readouterr()
    return code, (orjson.loads(out) if out.strip() else None), err


def _settings(m: dict) -> list[str]:
    return ["--context-window", str(m["window"]), "--reserve", str(m["reserve"]), "--keep-recent", str(m["keep"])]


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", sorted(WITH_COMPACTIONS))
def test_recorded_settings_regenerate_the_recorded_summaries(name: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Every Pi sample (0.73.1 and 1.6.0, split turns and repeated compactions): the regenerated
    summaries, chained, equal those the real Pi CLI recorded, byte for byte."""
    m = WITH_COMPACTIONS[name]
    src = SAMPLES / m["facts"]["file"]
    before = _digest(src)
    tree = SessionTree(load_session(src))
    # the branch with the most compactions (pi1-branches compacted on a branch it left)
    path = max((tree.path(leaf) for leaf in tree.leaves),
               key=lambda p: sum(e.type == "compaction" for e in p.entries))
    with lab(m["seed"]) as srv:
        code, report, err = resum([str(src), "--endpoint", srv.base_url, "--model", "lab/lab-model", *_settings(m),
                                   "--leaf", str(path.leaf_id), "-o", str(tmp_path / "out")], capsys, tmp_path)
    assert code == 0, err
    assert _digest(src) == before, "the input was modified"
    (out,) = report["outputs"]
    assert out["error"] is None and all(c["regenerated"] for c in out["compactions"])
    recorded = [e.data for e in path.entries if e.type == "compaction"]
    assert len(recorded) >= 1
    written = load_session(out["output"])
    assert written.skipped == [] and written.recovered == []
    regenerated = [e.data for e in written.entries if e.type == "compaction"]
    assert [r["summary"] for r in regenerated] == [r["summary"] for r in recorded]
    assert [(r["firstKeptEntryId"], r["tokensBefore"], r["details"]) for r in regenerated] == [
        (r["firstKeptEntryId"], r["tokensBefore"], r["details"]) for r in recorded]
    assert all(c["requests"] and not c["requests"][0]["cache_hit"] for c in out["compactions"])


def test_second_run_sends_nothing_and_a_grid_writes_one_file_per_setting(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    m = MANIFEST["pi0-threshold-5x"]
    src = SAMPLES / m["facts"]["file"]
    args = [str(src), "--model", "lab/lab-model", "--context-window", "16000", "--reserve", "3000",
            "--keep-recent", "2000,4000,6000", "-o", str(tmp_path / "out")]
    with lab(m["seed"]) as srv:
        code, first, err = resum([*args, "--endpoint", srv.base_url], capsys, tmp_path)
        assert code == 0, err
        sent = summary_requests(srv)
        # the settings share their first compactions: each distinct request is sent once
        assert sent == sum(not r["cache_hit"] for o in first["outputs"] for c in o["compactions"]
                           for r in c["requests"]) > 0
        assert sent < sum(o["totals"]["requests"] for o in first["outputs"])
        files = sorted(p.name for p in (tmp_path / "out").iterdir())
        assert files == [f"pi0-threshold-5x.w16000-r3000-k{k}-pi-0.jsonl" for k in (2000, 4000, 6000)]
        code, second, err = resum([*args, "--endpoint", srv.base_url], capsys, tmp_path)
        assert code == 0, err
        assert summary_requests(srv) == sent, "the second run sent requests"
        assert "0 request(s) sent" in err
        assert all(r["cache_hit"] for o in second["outputs"] for c in o["compactions"] for r in c["requests"])
        # the cached run writes the same files and the same summaries
        assert [o["compactions"] for o in second["outputs"]] == [
            [{**c, "requests": [{**r, "cache_hit": True} for r in c["requests"]]} for c in o["compactions"]]
            for o in first["outputs"]]
        # --no-cache sends them all again
        code, _, err = resum([*args, "--endpoint", srv.base_url, "--no-cache"], capsys, tmp_path)
        assert code == 0 and summary_requests(srv) == 2 * sent
    # settings that differ from the recorded ones: compactions the recording never had, chained
    k2 = load_session(tmp_path / "out" / files[0])
    summaries = [e.data["summary"] for e in k2.entries if e.type == "compaction"]
    assert len(summaries) >= 2 and len(set(summaries)) == len(summaries)
    assert all(f"- Summary generation: {g}" in s for g, s in enumerate(summaries, 1)), "not chained"


def test_outputs_are_read_by_every_command(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    m = MANIFEST["pi1-threshold-5x"]
    with lab(m["seed"]) as srv:
        code, report, err = resum([str(SAMPLES / m["facts"]["file"]), "--endpoint", srv.base_url,
                                   "--model", "lab/lab-model", "--context-window", "16000", "--reserve", "3000",
                                   "--keep-recent", "2500", "-o", str(tmp_path / "out")], capsys, tmp_path)
    assert code == 0, err
    out = report["outputs"][0]["output"]
    s = load_session(out)
    assert s.pi_version == "1" and s.diagnostics == []
    comps = [e for e in s.entries if e.type == "compaction"]
    assert comps and all("systemMessage" in e.data and e.data["usage"]["input"] > 0 for e in comps)
    for cmd in (["inspect", out, "--format", "json"], ["diff-summaries", out, "--format", "json"],
                ["replay", out, "--context-window", "16000", "--reserve", "3000", "--keep-recent", "2500",
                 "--format", "json"]):
        assert main(cmd) == 0, cmd
        body = orjson.loads(capsys.readouterr().out)
        assert body["schema_version"] == (2 if cmd[0] == "replay" else 1)
    # the JSON lists each request with its sizes
    req = report["outputs"][0]["compactions"][0]["requests"][0]
    assert req["request_tokens_endpoint"] > 0 and req["request_tokens_estimated"] > 0
    assert req["output_tokens_endpoint"] > 0 and req["max_tokens"] == 4096 and req["cache_hit"] is False


@pytest.mark.parametrize("variant", ["anthropic", "stream"])
def test_wire_formats(variant: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Anthropic messages and streamed chat completions give the same summaries."""
    m = MANIFEST["pi0-tiny"]
    extra = ["--api", "anthropic-messages"] if variant == "anthropic" else ["--stream"]
    with lab(m["seed"]) as srv:
        code, report, err = resum([str(SAMPLES / m["facts"]["file"]), "--endpoint", srv.base_url, "--model",
                                   "lab/lab-model", *_settings(m), "-o", str(tmp_path / "out"), *extra],
                                  capsys, tmp_path)
        assert summary_requests(srv) == 4
    assert code == 0, err
    recorded = [e.data["summary"] for e in load_session(SAMPLES / m["facts"]["file"]).entries if e.type == "compaction"]
    written = [e.data["summary"] for e in load_session(report["outputs"][0]["output"]).entries
               if e.type == "compaction"]
    assert written == recorded


def test_custom_prompts_are_sent(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    m = MANIFEST["pi0-tiny"]
    (tmp_path / "p.md").write_text("Summarise. Keep every file path.\n")
    (tmp_path / "u.md").write_text("Update the summary. Keep every file path.\n")
    with lab(m["seed"]) as srv:
        code, report, err = resum([str(SAMPLES / m["facts"]["file"]), "--endpoint", srv.base_url, "--model",
                                   "lab/lab-model", *_settings(m), "-o", str(tmp_path / "out"), "--prompt",
                                   str(tmp_path / "p.md"), "--update-prompt", str(tmp_path / "u.md")],
                                  capsys, tmp_path)
        bodies = [r.body for r in srv.model.log if r.body is not None]
    assert code == 0, err
    users = [b["messages"][-1]["content"] for b in bodies]
    assert any(u.endswith("</conversation>\n\nSummarise. Keep every file path.") for u in users)
    assert any(u.endswith("</previous-summary>\n\nUpdate the summary. Keep every file path.") for u in users)


class _Flaky(BaseHTTPRequestHandler):
    """503 for the first `fail` requests, then one fixed non-streamed answer; or always 400."""

    calls = 0
    fail = 2
    status = 503

    def log_message(self, *a) -> None:  # type: ignore[no-untyped-def]
        pass

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).calls += 1
        if type(self).calls <= type(self).fail:
            body, code = b'{"error": {"message": "try later"}}', type(self).status
        else:
            body, code = json.dumps({"choices": [{"message": {"content": "## Goal\n- x"}, "finish_reason": "stop"}],
                                     "usage": {"prompt_tokens": 10, "completion_tokens": 3}}).encode(), 200
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if code == 503:
            self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(body)


def _serve(handler: type) -> ThreadingHTTPServer:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


@pytest.mark.parametrize(("status", "fail", "expect"), [(503, 2, 0), (400, 10**6, 3), (503, 10**6, 3)])
def test_retries_and_refusals(status: int, fail: int, expect: int, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """503 is retried (Retry-After: 0); a 400, or a 503 past the retries, stops the chain: no file,
    one `error:` line, exit 3."""
    handler = type("H", (_Flaky,), {"calls": 0, "fail": fail, "status": status})
    httpd = _serve(handler)
    try:
        m = MANIFEST["pi0-tiny"]
        code, report, err = resum([str(SAMPLES / m["facts"]["file"]), "--endpoint",
                                   f"http://127.0.0.1:{httpd.server_address[1]}/v1", "--model", "x/y", *_settings(m),
                                   "-o", str(tmp_path / "out"), "--retries", "2"], capsys, tmp_path)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert code == expect, err
    (out,) = report["outputs"]
    if expect == 0:
        assert out["error"] is None and Path(out["output"]).is_file()
        assert "Traceback" not in err
    else:
        assert out["output"] is None and "HTTP" in out["error"]
        assert "error:" in err and "Traceback" not in err
        assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
        assert handler.calls == (1 if status == 400 else 3)


def test_usage_errors(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    src = str(SAMPLES / "pi0-tiny.jsonl")
    assert main(["resummarize", src, "--endpoint", "http://127.0.0.1:9/v1", "--model", "nomodel",
                 "-o", str(tmp_path)]) == 2
    assert "PROVIDER/ID" in capsys.readouterr().err
    # writing into the input's own directory under the input's name is refused
    assert main(["resummarize", src, "--endpoint", "http://127.0.0.1:9/v1", "--model", "a/b", "-o", src]) == 2


def test_compare_two_settings_of_a_recorded_sample(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The CI recipe: resummarize at the recorded keep (A, = the recorded summaries) and at a smaller
    one (B), then `diff-summaries --compare A B` pairs them by session and gates on the difference."""
    m = MANIFEST["pi0-threshold-5x"]
    src = str(SAMPLES / m["facts"]["file"])
    outs = {}
    with lab(m["seed"]) as srv:
        for side, keep in (("a", "4000"), ("b", "6000")):
            code, report, err = resum([src, "--endpoint", srv.base_url, "--model", "lab/lab-model",
                                       "--context-window", "16000", "--reserve", "3000", "--keep-recent", keep,
                                       "-o", str(tmp_path / side)], capsys, tmp_path)
            assert code == 0, err
            outs[side] = report["outputs"][0]
    assert len(outs["b"]["compactions"]) > len(outs["a"]["compactions"])
    code = main(["diff-summaries", "--compare", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "json",
                 "--fail-if", "delta.summaries<0"])
    body = orjson.loads(capsys.readouterr().out)
    assert code == 0
    cmp = body["compare"]
    assert len(cmp["pairs"]) == 1 and cmp["unpaired"] == []
    assert cmp["metrics"]["delta.summaries"] == len(outs["b"]["compactions"]) - len(outs["a"]["compactions"])
    # the lab's summariser drops a previous Done item at every update: both sides lose some
    assert 0 < cmp["metrics"]["a.section.done"] < 1 and 0 < cmp["metrics"]["b.section.done"] < 1
    assert cmp["metrics"]["compare.section.done"] == round(cmp["metrics"]["b.section.done"]
                                                            / cmp["metrics"]["a.section.done"], 4)
    assert main(["diff-summaries", "--compare", str(tmp_path / "a"), str(tmp_path / "b"),
                 "--fail-if", "delta.summaries>0"]) == 1
    assert "gate delta.summaries>0 tripped" in capsys.readouterr().err
