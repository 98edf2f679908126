"""Parity cannot vanish: without npm, `make pi-env` fails and the Pi tests fail, unless opted out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Two parity tests (a fixture-based one and the real-session one), each under Pi 0.x and 1.x.
PI_TESTS = ["tests/parity/test_oracle.py", "tests/parity/test_parity.py",
            "-k", "test_user_message_of_40_chars_is_10_tokens or (test_real_sessions and pi0-overflow)"]
BANNER_LINE = "Pi parity and real-Pi tests NOT RUN (SESSIONTOOLS_SKIP_PI=1)"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An environment where the npm registry cannot be reached and no Pi is installed yet."""
    env = {k: v for k, v in os.environ.items() if k != "SESSIONTOOLS_SKIP_PI"}
    env.update({
        "npm_config_registry": "http://127.0.0.1:9/",  # discard port: connection refused
        "npm_config_fetch_retries": "0",
        "npm_config_cache": str(tmp_path / "npm-cache"),
        "SESSIONTOOLS_PI_CACHE": str(tmp_path / "pi"),
        **extra,
    })
    return env


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_pi_env_fails_when_the_registry_cannot_be_reached(tmp_path: Path) -> None:
    """The exit code is not 0 and the message says what failed and how to opt out."""
    proc = _run(["-m", "lab.pi_env"], _env(tmp_path))
    assert proc.returncode != 0, proc.stderr
    assert "could not install @mariozechner/pi-coding-agent@0.73.1" in proc.stderr
    assert "ECONNREFUSED" in proc.stderr
    assert "could not be installed" in proc.stderr and "SESSIONTOOLS_SKIP_PI=1" in proc.stderr
    assert not (tmp_path / "pi" / "0" / ".installed-0.73.1").exists()


def test_pi_env_opt_out_exits_0_with_a_banner(tmp_path: Path) -> None:
    proc = _run(["-m", "lab.pi_env"], _env(tmp_path, SESSIONTOOLS_SKIP_PI="1"))
    assert proc.returncode == 0, proc.stderr
    assert "SESSIONTOOLS_SKIP_PI=1: Pi is NOT installed" in proc.stderr
    assert "will NOT RUN" in proc.stderr
    assert not (tmp_path / "pi").exists()  # nothing was attempted


def test_parity_tests_fail_not_skip_when_pi_is_unavailable(tmp_path: Path) -> None:
    """A parity test run where Pi cannot be installed FAILS (the old behaviour was a quiet skip)."""
    proc = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", *PI_TESTS], _env(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "2 failed" in out and "2 errors" in out, out  # a fixture's failure is reported as an error
    assert "skipped" not in out, out
    assert "is required and cannot be installed" in out
    assert BANNER_LINE not in out


def test_opt_out_skips_pi_tests_and_says_so_in_the_summary(tmp_path: Path) -> None:
    proc = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", *PI_TESTS], _env(tmp_path, SESSIONTOOLS_SKIP_PI="1"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "4 skipped" in out
    assert BANNER_LINE in out
