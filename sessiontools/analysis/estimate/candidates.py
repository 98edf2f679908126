"""The calibrated model's feature set: with a tokenizer's counts when the run has them.

A candidate is a subset of `tokens.features.FEATURES` and a root prior:

- `characters`: the character model (overhead, messages, CJK, prose, code, digits, whitespace,
  images); used when the run counts no tokenizer;
- `o200k` / `cl100k`: A = a * tokens + per-message + overhead (+ images), the tokenizer's count
  scaled, with the hidden overhead it cannot see; used when the run counts that tokenizer (o200k
  first). A character model cannot tell common words from rare ones, so on a provider that counts
  with a BPE vocabulary it loses to that raw tokenizer.

Measured out of sample (leave-one-session-out) on real Codex, Claude Code and Pi/OpenClaw files,
`o200k` had the lowest MAPE of the candidates on each corpus (14.1%, 35.2%, 17.0%; characters
19.3%, 58.2%, 17.6%). Tried and dropped, because they did worse on those files: o200k plus every
character feature (overfits: 67.7% on the Claude Code files); choosing the candidate per level by
a cross-validation that never sees the held-out session (nested folds: 19.5% on the Pi files at
~10x the time; two halves of the sessions: 55.9% on Claude Code, 18.0% on Pi).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sessiontools.analysis.estimate.hierarchy import Sums, Tree, Unit, fit_tree
from sessiontools.tokens.features import FEATURES, MODEL_FEATURE, PRIOR, TOKENIZER_FEATURES

CHARACTERS = "characters"


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str
    mask: tuple[bool, ...]
    prior: tuple[float, ...]

    def fit(self, units: Mapping[Unit, Sums]) -> Tree:
        """The hierarchy over `units` with this candidate's features, every level labelled."""
        return _label(fit_tree(dict(units), self.mask, self.prior), self.name)


def candidates(x: Any) -> list[Candidate]:
    """`characters`, then a candidate per tokenizer the design matrix has counts of."""
    out = [Candidate(CHARACTERS, tuple(n not in TOKENIZER_FEATURES for n in FEATURES),
                     tuple(0.0 if n in TOKENIZER_FEATURES else p for n, p in zip(FEATURES, PRIOR, strict=True)))]
    base = ("overhead", "messages", "images")
    for t in (MODEL_FEATURE, *(t for t in TOKENIZER_FEATURES if t != MODEL_FEATURE)):
        if not len(x) or not (x[:, FEATURES.index(t)] > 0).any():
            continue
        prior = tuple(1.0 if n == t else p if n in base else 0.0 for n, p in zip(FEATURES, PRIOR, strict=True))
        out.append(Candidate(t, tuple(n in base or n == t for n in FEATURES), prior))
    return out


def primary(cands: Sequence[Candidate]) -> Candidate:
    """The first tokenizer candidate (the model's own, then o200k, then cl100k), else `characters`."""
    return cands[1] if len(cands) > 1 else cands[0]


def _label(tree: Tree, name: str) -> Tree:
    def lab(level: dict[str, Any]) -> dict[str, Any]:
        return {k: replace(v, candidate=name) for k, v in level.items()}

    return Tree(replace(tree.corpus, candidate=name), lab(tree.provider), lab(tree.model), lab(tree.rules))
