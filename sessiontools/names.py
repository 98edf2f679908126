"""Names and defaults shared by the layers and shown by the CLI's `--help`, in one light home.

This module imports nothing from the package (and nothing heavy), so declaring a command needs no
analysis code: `sessiontools --help` stays fast (issue 14). Each name has this one definition; the
layers that implement them (`policies`, `replay.registry`, `tokens.calibrated`, `analysis.estimate`,
`analysis.drift`) import it from here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


class PolicyName(StrEnum):
    """A compaction policy, by the agent (and version) whose rule it is."""

    PI_0 = "pi-0"
    PI_1 = "pi-1"
    CLAUDE_CODE = "claude-code"
    CLAUDE_CODE_REACTIVE = "claude-code-reactive"
    CODEX = "codex"


#: The policies replay implements, in the order `--policy` lists them (`replay.registry` is built in
#: this order).
POLICY_ORDER = (PolicyName.PI_0, PolicyName.PI_1, PolicyName.CODEX, PolicyName.CLAUDE_CODE,
                PolicyName.CLAUDE_CODE_REACTIVE)

#: The public API's names that live in an agent's homes, by the package that re-exports them: name ->
#: the module that defines it. `sessiontools` and `sessiontools.read` list only their neutral names
#: and import these from here on first use (their module `__getattr__`), so that `import
#: sessiontools.read.codex` loads no other agent's reader and the re-exporting modules name no agent.
#: Pi's reader, tree, context and compaction came first, so users' scripts import them from the top.
PUBLIC_API: dict[str, dict[str, str]] = {
    "sessiontools": {
        **dict.fromkeys(("CompactionSettings", "NoCompaction", "Preparation", "prepare_compaction"),
                        "sessiontools.policies.pi"),
        **dict.fromkeys(("Entry", "Session", "load_session", "read_bytes"), "sessiontools.read.pi"),
        **dict.fromkeys(("SessionTree", "build_context"), "sessiontools.transcript.pi"),
    },
    "sessiontools.read": dict.fromkeys(
        ("KNOWN_ENTRY_TYPES", "KNOWN_ROLES", "Entry", "Header", "Session", "detect_pi_version", "load_session",
         "read_bytes", "read_stream", "session_from_records", "v1_id"), "sessiontools.read.pi"),
    "sessiontools.replay": dict.fromkeys(("Workload", "build_workload"), "sessiontools.transcript.pi.workload"),
}


def public_attr(package: str, namespace: dict[str, Any], name: str, own: Mapping[str, str] | None = None) -> Any:
    """`package`'s re-exported `name` (a module `__getattr__`, PEP 562): imported from its home on first
    use (`own`, the package's neutral names, then `PUBLIC_API[package]`) and kept in `namespace`, the
    package's globals; AttributeError for any other name."""
    import importlib

    module = (own or {}).get(name) or PUBLIC_API[package].get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value

#: The version of its agent's rules a file is read as (`rule_version`; only Pi has two, 0.x and 1.x,
#: "0" and "1"): its option, and its key in the JSON of inspect and cut and in estimate-error's rows
#: (the key's name predates the other agents; it stays, for the output contract).
RULE_VERSION_OPTION = "--pi-version"
RULE_VERSION_HELP = "Read as Pi 0.x or 1.x (default: 1 if the file uses any 1.x-only feature, else 0)."
RULE_VERSION_KEY = "pi_version"

#: What the tool is for (the first line of `sessiontools --help`).
APP_HELP = "Analyse and replay Pi coding-agent session files: compaction, token estimates, summary drift."
#: `cut --reserve` (cut is Pi's `prepareCompaction` at chosen points: `policies.registry.CUTTERS`).
CUT_RESERVE_HELP = "reserveTokens (kept in the settings Pi passes)."
#: The label of a cut's tokens before, in cut's table.
CUT_TOKENS_BEFORE = "tokens before (Pi's view)"

#: The help of the options every command shares whose meaning is an agent's.
LEAF_HELP = "Analyse the path ending at this entry id (default: the last entry, as Pi resumes)."
PATHS_HELP = "Session files, directories (every *.jsonl below) or globs; default: Pi's session directory."

#: Pi's default `compaction.reserveTokens` and `compaction.keepRecentTokens` (settings.json).
DEFAULT_RESERVE_TOKENS = 16384
DEFAULT_KEEP_RECENT_TOKENS = 20000


class Tokenizer(StrEnum):
    """The counts a calibration (or a drift comparison) may be based on."""

    O200K = "o200k"
    CL100K = "cl100k"
    CHARS4 = "chars4"


#: estimate-error's name of each request's own estimate (the agent's own count at its check point,
#: whatever the agent: `analysis.estimate.Estimator.OWN`); the output's name, kept for compatibility.
OWN_ESTIMATOR = "pi"
#: What estimate-error's legend says chars4 is, and what an early decision means.
CHARS4_OWN_ESTIMATE = "Pi's estimateTokens"
EARLY_MEANS = "Pi would compact too soon"
ESTIMATORS_HELP = (f"Comma-separated: chars4,{OWN_ESTIMATOR},cl100k,o200k,model,calibrated,calibrated_hybrid,"
                   "calibrated_session (default: all; model = the model's own tokenizer, o200k where it has none).")

#: estimate-error's default thresholds: fractions of the largest A seen.
DEFAULT_THRESHOLD_GRID = "0.5,0.6,0.7,0.8,0.9"

#: diff-summaries' metrics a `--fail-if` gate can test, with what they mean (also in --help and docs).
DRIFT_METRICS: dict[str, str] = {
    "summaries": "number of summaries on the analysed paths",
    "pairs": "number of compared pairs",
    "dropped_items": "items dropped, summed over pairs",
    "added_items": "items added, summed over pairs",
    "changed_items": "items changed (fuzzy match), summed over pairs",
    "moved_items": "items moved to another section, summed over pairs",
    "dropped_literals": "literals (paths, identifiers, numbers, quoted errors) dropped, summed over pairs",
    "missing_sections": "Pi sections missing, summed over summaries",
    "resurrections": "items dropped and back later, or finished and reopened",
    "file_list_violations": "files missing from <read-files>/<modified-files> after an update, summed",
    "growth_tokens": "largest growth of a summary over the one it was written from, in tokens (0 without pairs)",
    "min_goal_similarity": "lowest goal similarity over pairs (0..1; 1 without goals to compare)",
    "min_literal_retention": "lowest share of literals kept over pairs (0..1; 1 without literals)",
    "retention.files": "share of the files in the compactions' spans that their summaries state (none: no files)",
    "retention.identifiers": "share of the spans' identifiers (ids, hashes, URLs, versions) the summaries state",
    "retention.errors": "share of the spans' error lines (failed tool results, error replies) the summaries state",
    "retention.constraints": "share of the user's constraining sentences in the spans that the summaries state",
    "lost_facts": "facts of the spans that their summaries do not state, summed over compactions",
}

#: Sections whose item retention `diff-summaries --compare` reports (metric `section.<key>`).
DRIFT_SECTION_KEYS: dict[str, str] = {
    "goal": "Goal",
    "constraints": "Constraints & Preferences",
    "done": "Progress/Done",
    "in_progress": "Progress/In Progress",
    "blocked": "Progress/Blocked",
    "decisions": "Key Decisions",
    "next_steps": "Next Steps",
    "critical_context": "Critical Context",
}
#: What each side of `diff-summaries --compare A B` measures (side metrics `a.M`, `b.M`).
COMPARE_SIDE_METRICS: dict[str, str] = {
    **{f"retention.{c}": DRIFT_METRICS[f"retention.{c}"] for c in ("files", "identifiers", "errors", "constraints")},
    **{f"section.{k}": f"share of the items of '{s}' a summary carries into the next one (kept, changed or moved), "
                       "pooled over pairs" for k, s in DRIFT_SECTION_KEYS.items()},
    "min_literal_retention": DRIFT_METRICS["min_literal_retention"],
    "lost_facts": DRIFT_METRICS["lost_facts"],
    "dropped_items": DRIFT_METRICS["dropped_items"],
    "summaries": DRIFT_METRICS["summaries"],
}
#: `diff-summaries --compare --fail-if` metrics: each side's value, and B against A.
COMPARE_METRICS: dict[str, str] = {
    **{f"a.{m}": f"A: {d}" for m, d in COMPARE_SIDE_METRICS.items()},
    **{f"b.{m}": f"B: {d}" for m, d in COMPARE_SIDE_METRICS.items()},
    **{f"compare.{m}": f"B / A of {m} (none when A is 0 or none)" for m in COMPARE_SIDE_METRICS},
    **{f"delta.{m}": f"B - A of {m}" for m in COMPARE_SIDE_METRICS},
}
#: `--group-by` of the folder answers (inspect, replay, estimate-error, diff-summaries): see `report.folder`.
GROUP_BY = ("agent", "model", "provider", "project", "day", "week", "month")


# The option help texts whose meaning is an agent's or a policy's (`replay`, `export`, `report` and
# `diff-summaries` build theirs from here, so a new agent or policy is one line here, not a search
# through the commands).

def choices(values: tuple[str, ...]) -> str:
    """`a, b or c`."""
    return f"{', '.join(values[:-1])} or {values[-1]}" if len(values) > 1 else "".join(values)


#: `--policy`'s values, in `POLICY_ORDER`.
POLICY_CHOICES = choices(tuple(POLICY_ORDER))
#: How an agent's own rule is chosen when no --policy is given (the agents for which that needs saying).
OWN_RULE_HELP: dict[str, str] = {
    "pi": "for Pi the version that wrote the file",
    "claude-code": "for Claude Code the recorded version's rule, reactive-only when the file compacted only reactively",
}
OWN_RULES_HELP = "; ".join(OWN_RULE_HELP.values())
#: Each policy-specific grid axis: the policies whose option it is and what the option's values are.
AXIS_HELP: dict[str, tuple[str, str]] = {
    "auto_compact_limit": ("codex", "model_auto_compact_token_limit value(s)"),
    "autocompact_pct": ("claude-code", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE value(s)"),
}
#: The default window, per agent, where the recorded model's catalogue entry is not the whole story.
WINDOW_DEFAULT_HELP = ("the recorded model's, from the bundled catalogue, Pi's models.json, OpenClaw's config; "
                       "Codex: the configured window, the rollout's model_context_window / 0.95; Claude Code: "
                       "the CLI's, 200k, 1M for [1m] models")
MAX_OUTPUT_HELP = ("claude-code: the model's max output tokens (default: the version's, 128000 for 2.1.332, "
                   "min(32000, the model's) before).")
CLI_VERSION_HELP = ("claude-code / codex: apply this CLI version's compaction rule and window instead of the "
                    "version each file records (README: Claude Code's rule per version).")
MODELS_HELP = ("A models.json in Pi's format (custom providers' windows and prices); repeatable. Pi's own "
               "$PI_CODING_AGENT_DIR/models.json is read when it exists.")
#: What `chars4` is: each agent's own chars/4 estimate (the truth model's), Pi's for summary lengths.
CHARS4_OWN_HELP = "each agent's own chars/4; Pi: estimateTokens"
CHARS4_SUMMARY_HELP = "Pi's ceil(chars/4)"


def policy_help(default: str) -> str:
    """The help of a --policy option; `default`: what it defaults to ("the agent's own")."""
    return f"The compaction rule: {POLICY_CHOICES} (default: {default})."


def axis_help(key: str, what: str = "", tail: str = "") -> str:
    """The help of a policy-specific grid option: `policy: values{what}, comma-separated{tail}`."""
    who, values = AXIS_HELP[key]
    return f"{who}: {values}{what}, comma-separated{tail}"


# `resummarize`'s options whose meaning is an agent's.

#: The policies whose compactions `resummarize` regenerates on a session of their agent (`--policy`).
RESUMMARIZE_POLICIES = (PolicyName.PI_0, PolicyName.PI_1)
RESUMMARIZE_HELP: dict[str, str] = {
    "prompt": "A file replacing Pi's SUMMARIZATION_PROMPT (the first summary of a chain).",
    "update_prompt": "A file replacing Pi's UPDATE_SUMMARIZATION_PROMPT (every later summary).",
    "policy": f"{choices(tuple(RESUMMARIZE_POLICIES))} (default: the version that wrote the file).",
    "auto_compact_limit": "Codex rollouts: model_auto_compact_token_limit value(s), comma-separated (default: "
                          "Codex's own, from the window).",
    "model_max_tokens": "The model's output limit (Pi 1.x asks for it, clamped to the window; default: the "
                        "catalogue's for --model, else 4096).",
}
