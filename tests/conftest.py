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


def require_pi(major: str):  # type: ignore[no-untyped-def]
    """The installed Pi release `major`; the test FAILS (never skips) when Pi cannot be installed.

    Only the explicit opt-out `SESSIONTOOLS_SKIP_PI=1` turns that into a skip, and the summary
    then says that the Pi tests did not run.
    """
    from lab.pi_env import SKIP_ENV, PiUnavailable, ensure_pi, skip_requested

    if skip_requested():
        pytest.skip(f"{SKIP_ENV}=1: Pi parity and real-Pi tests NOT RUN")
    try:
        return ensure_pi(major)
    except PiUnavailable as exc:
        reason = str(exc)
    pytest.fail(f"Pi {major}.x is required and cannot be installed: {reason}\n"
                f"(set {SKIP_ENV}=1 to run the suite without Pi, knowingly)", pytrace=False)


PI_MARKERS = ("parity", "e2e")
_NOT_RUN: list[str] = []


def pytest_collection_modifyitems(config, items) -> None:  # type: ignore[no-untyped-def]
    """With SESSIONTOOLS_SKIP_PI=1, every parity/e2e test is skipped, and counted for the summary."""
    from lab.pi_env import SKIP_ENV, skip_requested

    if not skip_requested():
        return
    mark = pytest.mark.skip(reason=f"{SKIP_ENV}=1: Pi parity and real-Pi tests NOT RUN")
    for item in items:
        if any(item.get_closest_marker(m) for m in PI_MARKERS):
            item.add_marker(mark)
            _NOT_RUN.append(item.nodeid)


@pytest.fixture
def shared_pi() -> Path:
    if not SHARED_PI.is_dir():
        pytest.skip("../shared/sessions/pi is absent (real recorded sessions are not in this checkout)")
    return SHARED_PI


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    """Say loudly when the Pi tests were opted out; print how many cases the parity tests compared."""
    from lab.pi_env import skip_requested

    if skip_requested():
        bar = "!" * 78
        terminalreporter.write_line(bar, red=True, bold=True)
        terminalreporter.write_line(
            f"Pi parity and real-Pi tests NOT RUN (SESSIONTOOLS_SKIP_PI=1): {len(_NOT_RUN)} tests skipped",
            red=True, bold=True)
        terminalreporter.write_line(bar, red=True, bold=True)
    try:
        from tests.parity.oracle import STDERR_LINES
        from tests.parity.test_parity import TOTALS
        from tests.parity.test_strategies import PI_THROWS_ON_GENERATED
    except Exception:
        return
    if PI_THROWS_ON_GENERATED:
        per = ", ".join(f"{k}: {n}" for k, n in sorted(PI_THROWS_ON_GENERATED.items()) if n)
        terminalreporter.write_line(f"oracle on generated bad sessions: {sum(PI_THROWS_ON_GENERATED.values())} "
                                    f"queries where Pi's own code threw, as expected ({per})")
    if not TOTALS:
        return
    total = sum(t.cases for t in TOTALS.values())
    mism = sum(len(t.mismatches) for t in TOTALS.values())
    helper = sum(len(t.helper_failures) for t in TOTALS.values())
    throws = [x for t in TOTALS.values() for x in t.pi_throws]
    parts = ", ".join(f"{k}: {t.cases}" for k, t in sorted(TOTALS.items()))
    terminalreporter.write_line(
        f"parity: {total} cases compared with Pi's own code ({parts}); {mism} mismatches; "
        f"{helper} oracle harness failures; {len(throws)} fields where Pi itself threw (listed below, not compared); "
        f"{len(STDERR_LINES)} lines of oracle stderr captured"
    )
    if throws:  # every case, with Pi's error text, for whoever wants the full list
        listing = ROOT / ".cache" / "parity-pi-throws.txt"
        listing.parent.mkdir(parents=True, exist_ok=True)
        listing.write_text("\n".join(throws) + "\n", encoding="utf-8", errors="replace")
        terminalreporter.write_line(f"  every case where Pi threw, with its error: {listing}")
    by_error: dict[str, list[str]] = {}
    for line in throws:
        case, _, message = line.partition(": ")
        by_error.setdefault(message, []).append(case)
    for message, cases in sorted(by_error.items(), key=lambda kv: -len(kv[1])):
        more = f" (+{len(cases) - 3} more)" if len(cases) > 3 else ""
        terminalreporter.write_line(f"  Pi threw x{len(cases)}: {message[:160]} -- e.g. {'; '.join(cases[:3])}{more}")
