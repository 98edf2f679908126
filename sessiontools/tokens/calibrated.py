"""The `calibrated` estimator: actual prompt tokens A ~ a + b * x per provider/model.

x is another estimator's count of the same context (`o200k` by default, or `chars4`, `cl100k`).
Coefficients come from ordinary least squares over recorded requests (see
`analysis.estimate`) and travel as a small JSON document so that other commands (`replay`)
can use them:

    {"schema_version": 1, "kind": "calibration",
     "models": {"anthropic/claude-opus-4-5": {"x": "o200k", "a": 2710.4, "b": 1.21, "n": 480,
                                              "mape_in_sample": 0.031, "mape_out_of_sample": 0.035},
                "*": {...}}}

The key is `<provider>/<model>`; `*` is the fit over every model, used for models without a fit
of their own. Everything here is pure: `save_calibration` returns bytes, `load_calibration` takes
bytes, text or a parsed dict; the CLI does the file I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from sessiontools.errors import InputError
from sessiontools.names import Tokenizer
from sessiontools.read.values import finite

SCHEMA_VERSION = 1
KIND = "calibration"
#: Key of the fit over all models, used when a model has no fit of its own.
ANY_MODEL = "*"


#: Estimators a calibration may be based on.
X_ESTIMATORS = tuple(t.value for t in Tokenizer)


class CalibrationError(InputError):
    """A calibration document is not valid JSON or does not have the documented shape."""


def model_key(provider: Any, model: Any) -> str:
    """`<provider>/<model>` as used for calibration keys and `--by model` groups."""
    return f"{provider if isinstance(provider, str) and provider else '?'}/{model if isinstance(model, str) and model else '?'}"


@dataclass(frozen=True, slots=True)
class Fit:
    """A = a + b * x for one provider/model, with how well it did (fractions, None = not judged)."""

    x: str
    a: float
    b: float
    n: int
    mape_in_sample: float | None = None
    mape_out_of_sample: float | None = None

    def predict(self, x: float) -> float:
        """The calibrated estimate for an x count; never negative."""
        return max(0.0, self.a + self.b * x)

    def to_dict(self) -> dict[str, Any]:
        return {
            "x": self.x,
            "a": _round(self.a),
            "b": _round(self.b),
            "n": self.n,
            "mape_in_sample": _round(self.mape_in_sample),
            "mape_out_of_sample": _round(self.mape_out_of_sample),
        }


@dataclass(frozen=True, slots=True)
class Calibration:
    """Fits by `<provider>/<model>` key (and `*` for any model)."""

    models: Mapping[str, Fit] = field(default_factory=dict)

    def lookup(self, provider: Any, model: Any) -> Fit | None:
        """The fit for this provider/model, else the any-model fit, else None."""
        return self.models.get(model_key(provider, model)) or self.models.get(ANY_MODEL)

    def to_dict(self) -> dict[str, Any]:
        """The documented JSON shape (models sorted by key, `*` last)."""
        keys = sorted(k for k in self.models if k != ANY_MODEL) + ([ANY_MODEL] if ANY_MODEL in self.models else [])
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": KIND,
            "models": {k: self.models[k].to_dict() for k in keys},
        }


def _round(v: float | None, digits: int = 6) -> float | None:
    return None if v is None else round(float(v), digits)


def _sum(v: Any) -> float | int:
    """`sum(v)` of a numpy vector, to the bit: exact for integers, left to right for floats (numpy's
    own sum adds pairwise, which rounds differently)."""
    import numpy as np

    if v.dtype.kind in "iub":
        return int(v.sum())
    return float(np.add.accumulate(v)[-1]) if len(v) else 0


def fit_line(xs: Sequence[float] | Any, ys: Sequence[float] | Any) -> tuple[float, float]:
    """Least squares (a, b) for y = a + b * x (through `tokens.fit.least_squares`); lists or numpy
    vectors.

    With one distinct x (or a single point) the line goes through the origin and the mean point
    (b = mean y / mean x, a = 0); with no x at all it is the mean of y. Raises ValueError when empty.
    """
    import numpy as np

    from sessiontools.tokens.fit import least_squares

    xv, yv = np.asarray(xs), np.asarray(ys)
    n = len(xv)
    if n == 0 or n != len(yv):
        raise ValueError("fit_line needs as many x as y values, at least one")
    mx = _sum(xv) / n
    my = _sum(yv) / n
    dx = xv.astype(np.float64) - mx
    sxx = _sum(dx * dx)
    if sxx <= 1e-12 * max(1.0, mx * mx):
        if mx > 0:
            return 0.0, my / mx
        return my, 0.0
    # centred, so that the intercept column does not make the problem ill-conditioned
    (b,) = least_squares(dx[:, None], yv.astype(np.float64) - my).coef
    return my - b * mx, b


@dataclass(frozen=True, slots=True)
class FeatureCalibration:
    """Schema 2: the hierarchical feature model's coefficients by level (`tokens.features`).

        {"schema_version": 2, "kind": "calibration", "model": "features", "features": [...],
         "corpus": {"overhead": ..., ...}, "providers": {"anthropic": {...}}, "models": {"anthropic/x": {...}}}

    A model without coefficients of its own uses its provider's, else the corpus's.
    """

    corpus: tuple[float, ...]
    providers: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    models: Mapping[str, tuple[float, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from sessiontools.tokens.features import full_coef

        object.__setattr__(self, "corpus", full_coef(self.corpus))
        object.__setattr__(self, "providers", {k: full_coef(v) for k, v in self.providers.items()})
        object.__setattr__(self, "models", {k: full_coef(v) for k, v in self.models.items()})

    def lookup(self, provider: Any, model: Any) -> Any:
        """The `FeatureModel` for this provider/model (model, else provider, else corpus)."""
        from sessiontools.tokens.features import FeatureModel

        key = model_key(provider, model)
        prov = provider if isinstance(provider, str) and provider else "?"
        return FeatureModel(self.models.get(key) or self.providers.get(prov) or self.corpus)

    @property
    def tokenizers(self) -> tuple[str, ...]:
        """The tokenizer features some level uses (their counts are needed to apply it)."""
        from sessiontools.tokens.features import FeatureModel

        levels = (self.corpus, *self.providers.values(), *self.models.values())
        return tuple(sorted({t for c in levels for t in FeatureModel(c).tokenizers}))

    def to_dict(self) -> dict[str, Any]:
        from sessiontools.tokens.features import FEATURES

        def coef(c: Sequence[float]) -> dict[str, float | None]:
            return {n: _round(v) for n, v in zip(FEATURES, c, strict=True)}

        return {"schema_version": 2, "kind": KIND, "model": "features", "features": list(FEATURES),
                "corpus": coef(self.corpus), "providers": {k: coef(self.providers[k]) for k in sorted(self.providers)},
                "models": {k: coef(self.models[k]) for k in sorted(self.models)}}


def save_calibration(calibration: Calibration | FeatureCalibration) -> bytes:
    """The calibration as deterministic JSON bytes (the file format documented above)."""
    return orjson.dumps(calibration.to_dict(), option=orjson.OPT_INDENT_2) + b"\n"


def _load_features(doc: Mapping[str, Any]) -> FeatureCalibration:
    from sessiontools.tokens.features import FEATURES, TOKENIZER_FEATURES

    def coef(m: Any, what: str) -> tuple[float, ...]:
        if not isinstance(m, Mapping):
            raise CalibrationError(f"calibration: {what} must be an object of coefficients")
        # a tokenizer feature absent from a document (written before they existed) is not used: 0
        out = tuple(_number(m.get(n, 0.0 if n in TOKENIZER_FEATURES else None), f"{what}.{n}") for n in FEATURES)
        if any(v < 0 for v in out):
            raise CalibrationError(f"calibration: {what} has a negative coefficient")
        return out

    levels = {}
    for level in ("providers", "models"):
        d = doc.get(level, {})
        if not isinstance(d, Mapping):
            raise CalibrationError(f"calibration: \"{level}\" must be an object")
        levels[level] = {str(k): coef(v, f"{level}[{k!r}]") for k, v in d.items()}
    return FeatureCalibration(coef(doc.get("corpus"), "corpus"), levels["providers"], levels["models"])


def _number(v: Any, what: str) -> float:
    f = finite(v)
    if f is None:
        raise CalibrationError(f"calibration: {what} must be a finite number, not {v!r}")
    return f


def _optional_number(v: Any, what: str) -> float | None:
    return None if v is None else _number(v, what)


def load_calibration(data: bytes | str | Mapping[str, Any]) -> Calibration | FeatureCalibration:
    """Parse and check a calibration document (bytes, text or an already parsed dict): schema 1
    (A ~ a + b * x per model) or schema 2 (the hierarchical feature model)."""
    if isinstance(data, bytes | str):
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise CalibrationError(f"calibration: not valid JSON ({exc})") from exc
    else:
        doc = data
    if not isinstance(doc, Mapping):
        raise CalibrationError("calibration: the document must be a JSON object")
    if doc.get("kind") != KIND:
        raise CalibrationError(f"calibration: \"kind\" must be {KIND!r}, not {doc.get('kind')!r}")
    if doc.get("schema_version") == 2:
        return _load_features(doc)
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise CalibrationError(f"calibration: unsupported schema_version {doc.get('schema_version')!r} (expected 1 or 2)")
    models = doc.get("models")
    if not isinstance(models, Mapping):
        raise CalibrationError("calibration: \"models\" must be an object keyed by <provider>/<model>")
    fits: dict[str, Fit] = {}
    for key, m in models.items():
        if not isinstance(m, Mapping):
            raise CalibrationError(f"calibration: models[{key!r}] must be an object")
        x = m.get("x", "o200k")
        if x not in X_ESTIMATORS:
            raise CalibrationError(f"calibration: models[{key!r}].x must be one of {', '.join(X_ESTIMATORS)}, not {x!r}")
        n = m.get("n", 0)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise CalibrationError(f"calibration: models[{key!r}].n must be a non-negative integer")
        fits[str(key)] = Fit(
            x=x,
            a=_number(m.get("a"), f"models[{key!r}].a"),
            b=_number(m.get("b"), f"models[{key!r}].b"),
            n=n,
            mape_in_sample=_optional_number(m.get("mape_in_sample"), f"models[{key!r}].mape_in_sample"),
            mape_out_of_sample=_optional_number(m.get("mape_out_of_sample"), f"models[{key!r}].mape_out_of_sample"),
        )
    return Calibration(fits)
