"""`estimate-error`: how far token estimators are from the prompt size providers recorded.

For every request on the analysed path(s) of a transcript (any agent), the truth is its actual
prompt tokens A = input + cache read + cache write, and each estimator gives E over the context
of that request (the messages the agent sent):

- `chars4`: chars/4 per message (for Pi, exactly Pi's `estimateTokens`);
- `pi`: the agent's own check-point estimate (last usage + trailing messages): its own policy's
  `Policy.checkpoint` (`policies.registry.own_policy`), the count replay walks with (named `pi` for
  compatibility of the output);
- `cl100k`, `o200k`: tiktoken over the same text units (an image counts 1200 tokens);
- `model`: the request's own model tokenizer over the same units (`tokens.registry`: DeepSeek,
  Qwen), o200k for a model without one (the column `model_tokenizer` says which);
- `calibrated`: A ~ a + b * x per provider/model, judged out of sample.

The error is e = E - A (negative: underestimate). Modules: `options` (what to compute), `source`
(a loaded file as a transcript), `measure` (each message once), `rows` (the request frame),
`stats` (polars statistics), `calibration` (fits), `summary` (everything over all files), `run`.
"""

from sessiontools.analysis.estimate.calibration import (
    CalibrationOutcome,
    Judged,
    TokenizerProfile,
    fit_calibration,
    fit_tokenizer_profile,
)
from sessiontools.analysis.estimate.measure import CHAR_COLUMNS, ROLE_COLUMNS, MessageMeasurer
from sessiontools.analysis.estimate.options import (
    DEFAULT_CALIBRATION_X,
    DEFAULT_ESTIMATORS,
    DEFAULT_THRESHOLD_GRID,
    ESTIMATORS,
    GROUPINGS,
    TOKENIZERS,
    EstimateErrorOptions,
    Estimator,
    Grouping,
    OptionError,
    ThresholdSpec,
    needed_encodings,
    parse_estimators,
    parse_threshold_grid,
)
from sessiontools.analysis.estimate.rows import SessionRows
from sessiontools.analysis.estimate.run import (
    SessionWorker,
    estimate_error,
    make_measurer,
    package_hash,
    session_requests,
    summarize_requests,
)
from sessiontools.analysis.estimate.stats import (
    content_group,
    decision_stats,
    error_stats,
    estimator_stats,
    mape,
    size_group,
    stats_dict,
)
from sessiontools.analysis.estimate.summary import EstimateErrorReport
from sessiontools.names import RULE_VERSION_KEY


def requests_columns(estimators: tuple[str, ...] | list[str]) -> list[str]:
    """Column order of the per-request table (CSV/Parquet)."""
    base = [
        "session", RULE_VERSION_KEY, "entry_id", "kind", "index", "line", "timestamp", "provider", "model", "model_key",
        "actual", "input", "cache_read", "cache_write", "output", "messages", "images", "chars_total",
        "text_chars", "cjk_chars", *CHAR_COLUMNS, "cjk_share", "tool_share",
    ]
    if "model" in estimators:
        base.append("model_tokenizer")
    for est in estimators:
        base += [f"est_{est}", f"err_{est}", f"rel_err_{est}"]
    return base


__all__ = [
    "CHAR_COLUMNS", "DEFAULT_CALIBRATION_X", "DEFAULT_ESTIMATORS", "DEFAULT_THRESHOLD_GRID", "ESTIMATORS",
    "GROUPINGS", "ROLE_COLUMNS", "TOKENIZERS", "CalibrationOutcome", "EstimateErrorOptions", "EstimateErrorReport",
    "Estimator", "Grouping", "Judged", "MessageMeasurer", "OptionError", "SessionRows", "SessionWorker",
    "ThresholdSpec", "TokenizerProfile", "content_group", "decision_stats", "error_stats", "estimate_error",
    "estimator_stats", "fit_calibration", "fit_tokenizer_profile", "make_measurer", "mape", "needed_encodings",
    "package_hash", "parse_estimators", "parse_threshold_grid", "requests_columns", "session_requests",
    "size_group", "stats_dict", "summarize_requests",
]
