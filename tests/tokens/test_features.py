"""tokens/text.py (the one CJK definition), tokens/features.py (features, the calibrated hybrid) and
calibration files of schema 2."""

from __future__ import annotations

import pytest

from sessiontools.tokens.calibrated import (
    CalibrationError,
    FeatureCalibration,
    load_calibration,
    save_calibration,
)
from sessiontools.tokens.features import (
    FEATURES,
    FeatureModel,
    calibrated_hybrid,
    message_features,
    text_features,
)
from sessiontools.tokens.text import CJK_RANGES, CJK_RE, cjk_count, is_cjk, text_counts


def test_one_cjk_definition_three_views_agree() -> None:
    """The ranges, the regex and the vectorised count agree on every range edge and its neighbours."""
    probes = []
    for lo, hi in CJK_RANGES:
        probes += [lo - 1, lo, lo + 1, hi - 1, hi, hi + 1]
    for cp in probes:
        ch = chr(cp)
        assert is_cjk(ch) == bool(CJK_RE.fullmatch(ch)) == (cjk_count(ch) == 1), hex(cp)
    assert cjk_count("abc 中文テスト한국어！") == 2 + 3 + 3 + 1
    assert cjk_count("plain ascii") == 0


def test_text_classes_add_up() -> None:
    assert text_counts("ab 12\n中文") == (8, 8, 2, 2, 2)  # (2 other characters: a, b)
    assert text_counts("") == (0, 0, 0, 0, 0)


def test_text_classes_match_a_per_character_reference() -> None:
    """The class table (BMP), the astral ranges and the ASCII fast path count as `is_cjk` and
    `str.isdigit`-free ASCII rules do, on short and long, ASCII and mixed texts."""
    import random

    rng = random.Random(7)
    edges = [cp for lo, hi in CJK_RANGES for cp in (lo - 1, lo, hi, hi + 1)]
    pool = [chr(c) for c in (*range(0x80), *edges, 0xE9, 0x660, 0xFFFF, 0x1F600, 0x10FFFF)]
    for n in range(400):
        chars = pool if n % 2 else pool[:0x80]
        text = "".join(rng.choice(chars) for _ in range(rng.choice((1, 7, 300, 3000))))
        assert text_counts(text)[1:] == (
            len(text), sum(map(is_cjk, text)), sum(c in "0123456789" for c in text), sum(c in " \t\n\r" for c in text))


def test_text_counts_is_the_classes_and_the_utf16_length() -> None:
    """`text_counts` (one pass: BMP-only texts through UTF-16 units, others through code points) is
    the UTF-16 length plus the classes, lone surrogates and astral characters included."""
    import random

    rng = random.Random(3)
    pool = [chr(c) for c in (0x41, 0x31, 0x20, 0x0A, 0xE9, 0x4E2D, 0x3042, 0xFF10, 0xD800, 0xDFFF, 0x1F600, 0x20001)]
    for n in range(300):
        text = "".join(rng.choice(pool[: 9 if n % 3 else None]) for _ in range(rng.choice((1, 5, 200))))
        assert text_counts(text) == (
            len(text.encode("utf-16-le", "surrogatepass")) // 2, len(text), sum(map(is_cjk, text)),
            sum(c in "0123456789" for c in text), sum(c in " \t\n\r" for c in text))


def test_features_and_the_calibrated_hybrid() -> None:
    """Features split prose from code; the hybrid adds the trailing part without the overhead."""
    f = text_features([("hello 42", False), ('{"path":"a"}', True)], images=1, messages=2)
    assert dict(zip(FEATURES, f, strict=True)) == {"overhead": 1, "messages": 2, "cjk": 0, "prose": 5, "code": 12,
                                                   "digits": 2, "space": 1, "images": 1,
                                                   "o200k": 0, "cl100k": 0, "model": 0}
    model = FeatureModel((1000.0, 4.0, 1.0, 0.25, 0.3, 0.5, 0.1, 1200.0))
    assert model.predict(f) == pytest.approx(1000 + 8 + 1.25 + 3.6 + 1 + 0.1 + 1200)
    assert model.trailing(f) == pytest.approx(model.predict(f) - 1000)
    assert calibrated_hybrid(5000, f, f, model) == pytest.approx(5000 + model.trailing(f))
    assert calibrated_hybrid(None, f, f, model) == pytest.approx(model.predict(f))
    msgs = [{"role": "user", "content": "hi 1"}, {"role": "assistant", "content": [
        {"type": "toolCall", "name": "read", "arguments": {"path": "x"}}]}]
    pf = dict(zip(FEATURES, message_features(msgs, "0"), strict=True))
    assert pf["messages"] == 2 and pf["code"] == len("read") + len('{"path":"x"}') and pf["prose"] == 2


def test_feature_calibration_round_trip_and_lookup() -> None:
    cal = FeatureCalibration((100.0, 4, 1, 0.25, 0.3, 0.5, 0.1, 1200), {"anthropic": (50.0, 3, 1, 0.3, 0.3, 0.5, 0.1, 1200)},
                             {"anthropic/x": (10.0, 2, 1, 0.3, 0.3, 0.5, 0.1, 1200)})
    back = load_calibration(save_calibration(cal))
    assert isinstance(back, FeatureCalibration)
    assert back.lookup("anthropic", "x").coef[0] == 10.0
    assert back.lookup("anthropic", "y").coef[0] == 50.0
    assert back.lookup("openai", "y").coef[0] == 100.0
    doc = save_calibration(cal).replace(b'"overhead": 10.0', b'"overhead": -1.0')
    with pytest.raises(CalibrationError, match="negative"):
        load_calibration(doc)
