"""Every command's JSON over the samples and the shared real sessions, byte for byte as committed.

A change to any of these outputs must be deliberate: regenerate with
`python -m tests.golden.cases --write NAME` and give the reason in the issue's closing note.
"""

from __future__ import annotations

import pytest

from tests.golden.cases import CASES, GOLDEN, SHARED, SHARED_CASES, run_case


def _check(name: str, argv: list[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    code, out = run_case(argv, str(tmp_path))
    want = (GOLDEN / f"{name}.json").read_bytes()
    want_code = int((GOLDEN / f"{name}.exit").read_text())
    assert code == want_code, f"{name}: exit {code}, golden {want_code}"
    if out != want:
        got, exp = out.decode(errors="replace").splitlines(), want.decode(errors="replace").splitlines()
        first = next((i for i, (a, b) in enumerate(zip(got, exp, strict=False)) if a != b), min(len(got), len(exp)))
        pytest.fail(f"{name}: output differs from tests/golden/out/{name}.json at line {first + 1}:\n"
                    f"  got:    {got[first][:300] if first < len(got) else '<end>'}\n"
                    f"  golden: {exp[first][:300] if first < len(exp) else '<end>'}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_samples(name: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The command's JSON over sample_sessions/ is byte-identical to the committed golden file."""
    _check(name, CASES[name], tmp_path)


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/sessions/pi is absent")
@pytest.mark.parametrize("name", sorted(SHARED_CASES))
def test_golden_shared(name: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The command's JSON over ../shared/sessions/pi is byte-identical to the committed golden file."""
    _check(name, SHARED_CASES[name], tmp_path)
