"""Pure port of Pi's compaction (0.73.1 and 1.6.0), selected by `pi_version`. No I/O."""

from sessiontools.policies.pi.cut import CutPoint, find_cut_point_v0, find_projected_cut_point
from sessiontools.policies.pi.prepare import CompactionResult, NoCompaction, Preparation, prepare_compaction
from sessiontools.policies.pi.serialize import (
    FileOps,
    compute_file_lists,
    convert_to_llm,
    extract_file_ops,
    format_file_operations,
    serialize_conversation,
)
from sessiontools.policies.pi.settings import CompactionSettings, should_compact, threshold
from sessiontools.policies.pi.usage import (
    ContextEstimate,
    current_system_message,
    estimate_context_tokens,
    estimate_pi_view,
    estimate_projected_context_tokens,
)
from sessiontools.transcript.pi.overflow import is_context_overflow
from sessiontools.transcript.pi.usage import assistant_usage, calculate_context_tokens, prompt_tokens

__all__ = [
    "CompactionResult",
    "CompactionSettings",
    "ContextEstimate",
    "CutPoint",
    "FileOps",
    "NoCompaction",
    "Preparation",
    "assistant_usage",
    "calculate_context_tokens",
    "compute_file_lists",
    "convert_to_llm",
    "current_system_message",
    "estimate_context_tokens",
    "estimate_pi_view",
    "estimate_projected_context_tokens",
    "extract_file_ops",
    "find_cut_point_v0",
    "find_projected_cut_point",
    "format_file_operations",
    "is_context_overflow",
    "prepare_compaction",
    "prompt_tokens",
    "serialize_conversation",
    "should_compact",
    "threshold",
]
