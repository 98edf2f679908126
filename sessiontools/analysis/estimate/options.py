"""What estimate-error computes: estimators, groupings, thresholds, options (no CLI names here).

Errors are `OptionError`s that name the option's field (`estimators`, `thresholds`, ...); the
CLI maps a field to its flag.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from sessiontools.errors import UsageError
from sessiontools.names import DEFAULT_THRESHOLD_GRID, OWN_ESTIMATOR
from sessiontools.read.values import number_text
from sessiontools.tokens.calibrated import Calibration, FeatureCalibration, Tokenizer


class OptionError(UsageError):
    """An estimate-error option with a value that does not make sense; `field` names the option."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field = field_name


class Estimator(StrEnum):
    """Estimators, in output order."""

    CHARS4 = "chars4"
    OWN = OWN_ESTIMATOR  # the agent's own check-point estimate, whatever the agent (its output name: `names`)
    CL100K = "cl100k"
    O200K = "o200k"
    MODEL = "model"
    CALIBRATED = "calibrated"
    CALIBRATED_HYBRID = "calibrated_hybrid"
    CALIBRATED_SESSION = "calibrated_session"


#: The request frame's column of the agent's own estimate.
OWN_COLUMN = f"est_{OWN_ESTIMATOR}"
#: Estimators reported when none are named.
DEFAULT_ESTIMATORS: tuple[str, ...] = tuple(e.value for e in Estimator)
ESTIMATORS: tuple[str, ...] = tuple(e.value for e in Estimator)
#: tiktoken encodings behind the tokenizer estimators.
TOKENIZERS = {"cl100k": "cl100k_base", "o200k": "o200k_base"}
#: The estimator counting each request's context with its model's own tokenizer (`tokens.registry`).
MODEL = "model"
#: Estimators that need the calibration fitted (or loaded).
CALIBRATED = ("calibrated", "calibrated_hybrid", "calibrated_session")


class Judged(StrEnum):
    """How a fit was judged out of sample (the per-model lines' and the feature tree's)."""

    LOSO = "leave-one-session-out"
    TIME_SPLIT = "time-split"
    NONE = "none"


class Grouping(StrEnum):
    """`by` choices."""

    MODEL = "model"
    PROVIDER = "provider"
    CONTENT = "content"
    SIZE = "size"


GROUPINGS = tuple(g.value for g in Grouping)
#: Default x of the calibrated estimator.
DEFAULT_CALIBRATION_X = Tokenizer.O200K.value


@dataclass(frozen=True, slots=True)
class ThresholdSpec:
    """One threshold: a fraction of the largest A (<= 1) or a token count."""

    text: str
    fraction: float | None = None
    tokens: int | None = None

    def resolve(self, max_actual: int) -> int:
        """The threshold in tokens."""
        if self.tokens is not None:
            return self.tokens
        assert self.fraction is not None
        return int(round(self.fraction * max_actual))


def parse_estimators(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """`chars4,pi,...` -> estimator names in canonical order."""
    if text is None:
        return DEFAULT_ESTIMATORS
    parts = text.split(",") if isinstance(text, str) else [p for t in text for p in t.split(",")]
    names = [p.strip() for p in parts if p.strip()]
    unknown = [n for n in names if n not in ESTIMATORS]
    if unknown:
        raise OptionError("estimators", f"unknown {', '.join(unknown)} (choose from {', '.join(ESTIMATORS)})")
    if not names:
        raise OptionError("estimators", "give at least one estimator")
    return tuple(e for e in ESTIMATORS if e in names)


def parse_threshold_grid(text: str | None) -> tuple[ThresholdSpec, ...]:
    """`0.7,0.8` (fractions of the largest A) and/or `100000,150000` (tokens; `150k` works too)."""
    text = DEFAULT_THRESHOLD_GRID if text is None else text
    specs: list[ThresholdSpec] = []
    for raw in text.split(","):
        s = raw.strip().lower().replace("_", "")
        if not s:
            continue
        mult = 1
        if s.endswith("k"):
            s, mult = s[:-1], 1000
        v = number_text(s, float)
        if v is None:
            raise OptionError("thresholds", f"{raw.strip()!r} is not a number")
        v *= mult
        if not math.isfinite(v) or v <= 0:
            raise OptionError("thresholds", f"{raw.strip()!r} must be positive")
        if v <= 1 and mult == 1:
            specs.append(ThresholdSpec(raw.strip(), fraction=v))
        else:
            specs.append(ThresholdSpec(raw.strip(), tokens=int(round(v))))
    if not specs:
        raise OptionError("thresholds", "give at least one threshold")
    return tuple(specs)


@dataclass(frozen=True, slots=True)
class EstimateErrorOptions:
    """What to compute. `calibration` (loaded from a file) replaces the fitted coefficients for E."""

    estimators: tuple[str, ...] = DEFAULT_ESTIMATORS
    by: str = Grouping.MODEL.value
    thresholds: tuple[ThresholdSpec, ...] = field(default_factory=lambda: parse_threshold_grid(None))
    leaf: str | None = None
    all_leaves: bool = False
    rule_version: str | None = None
    calibration: Calibration | FeatureCalibration | None = None
    calibration_x: str = DEFAULT_CALIBRATION_X
    fit: bool = False  # fit the calibration even when no calibrated estimator is reported

    def __post_init__(self) -> None:
        if self.by not in GROUPINGS:
            raise OptionError("by", f"unknown grouping {self.by!r} (choose from {', '.join(GROUPINGS)})")
        if self.calibration_x not in tuple(t.value for t in Tokenizer):
            raise OptionError("calibration_x", f"{self.calibration_x!r} (choose from o200k, cl100k, chars4)")
        if self.leaf and self.all_leaves:
            raise OptionError("leaf", "a leaf and all leaves cannot be asked for together")

    @property
    def calibrate(self) -> bool:
        return self.fit or any(e in CALIBRATED for e in self.estimators)


def needed_encodings(options: EstimateErrorOptions) -> set[str]:
    """The tiktoken encodings the estimators (and the calibration's x) of `options` need."""
    need: set[str] = {TOKENIZERS[e] for e in options.estimators if e in TOKENIZERS}
    if options.calibrate:
        xs_needed = {options.calibration_x, "chars4"}
        if isinstance(options.calibration, Calibration):
            xs_needed |= {f.x for f in options.calibration.models.values()}
        elif isinstance(options.calibration, FeatureCalibration):
            xs_needed |= set(options.calibration.tokenizers)
        need |= {TOKENIZERS[x] for x in xs_needed if x in TOKENIZERS}
        if needs_model_tokenizer(options):  # the calibrated `model` feature of some families is o200k's
            need.add(TOKENIZERS["o200k"])  # (`tokens.registry.NOT_CALIBRATION_FEATURE`)
    return need


def needs_model_tokenizer(options: EstimateErrorOptions) -> bool:
    """Whether contexts are counted with their model's own tokenizer: for the `model` estimator, and
    for the calibrated model (its main feature), fitted or loaded with a `model` coefficient."""
    if MODEL in options.estimators:
        return True
    if not options.calibrate:
        return False
    if isinstance(options.calibration, FeatureCalibration):
        return MODEL in options.calibration.tokenizers
    return options.calibration is None and options.calibration_x == DEFAULT_CALIBRATION_X
