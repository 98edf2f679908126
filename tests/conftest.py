"""Shared fixtures: where the real recorded sessions live (../shared/sessions), and the bundled samples."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_PI = ROOT.parent / "shared" / "sessions" / "pi"
SAMPLES = ROOT / "sample_sessions"
BAD = ROOT / "tests" / "fixtures" / "bad"


def shared_sessions() -> list[Path]:
    """The real Pi sessions beside the checkout; empty when ../shared is absent."""
    return sorted(SHARED_PI.glob("*.jsonl")) if SHARED_PI.is_dir() else []


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never touch the user's token cache: every run gets its own cache directory."""
    import os

    os.environ["SESSIONTOOLS_CACHE_DIR"] = str(tmp_path_factory.mktemp("sessiontools-cache"))


@pytest.fixture
def shared_pi() -> Path:
    if not SHARED_PI.is_dir():
        pytest.skip("../shared/sessions/pi is absent (real recorded sessions are not in this checkout)")
    return SHARED_PI


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    """Print how many (session, point, keep, version) cases the parity tests compared."""
    try:
        from tests.parity.test_parity import TOTALS
    except Exception:
        return
    if not TOTALS:
        return
    total = sum(t.cases for t in TOTALS.values())
    mism = sum(len(t.mismatches) for t in TOTALS.values())
    errs = sum(t.pi_errors for t in TOTALS.values())
    parts = ", ".join(f"{k}: {t.cases}" for k, t in sorted(TOTALS.items()))
    terminalreporter.write_line(
        f"parity: {total} cases compared with Pi's own code ({parts}); {mism} mismatches; "
        f"{errs} cases where Pi itself threw (not compared)"
    )
