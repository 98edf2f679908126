"""Candidate calibrated models, and the choice between them per level by cross-validation.

A candidate is a subset of `tokens.features.FEATURES` and a root prior:

- `characters`: the character model (overhead, messages, CJK, prose, code, digits, whitespace,
  images); the only candidate when the run counts no tokenizer;
- `<tokenizer>` (o200k, cl100k; when the run counts it): A = a * tokens + per-message + overhead
  (+ images), the model of a provider that counts with that tokenizer;
- `<tokenizer>+mix`: the tokenizer's count with the character features as corrections (a provider
  whose tokenizer prices CJK, code or digits differently from it).

Each candidate's hierarchy is fitted as `hierarchy` says. Which one a level (corpus, provider,
model, rules) uses is chosen by cross-validation over sessions: the candidate with the lowest MAPE
on that level's requests, each request predicted by trees fitted without its session; a level with
fewer than `MIN_OOS` such predictions inherits its parent's choice (the corpus: `characters`). For a
held-out session the choice comes from an inner cross-validation over the other sessions
(`INNER_FOLDS` folds of whole sessions): the held-out session's own data never choose anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sessiontools.analysis.estimate.hierarchy import MIN_OOS, Sums, Tree, Unit, fit_tree
from sessiontools.tokens.features import FEATURES, PRIOR, TOKENIZER_FEATURES

INNER_FOLDS = 4
DEFAULT = "characters"


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str
    mask: tuple[bool, ...]
    prior: tuple[float, ...]

    def fit(self, units: Mapping[Unit, Sums]) -> Tree:
        return _label(fit_tree(dict(units), self.mask, self.prior), self.name)


def candidates(x: Any) -> list[Candidate]:
    """The candidates a design matrix supports (a tokenizer only when the run counted it)."""
    out = [Candidate(DEFAULT, tuple(n not in TOKENIZER_FEATURES for n in FEATURES),
                     tuple(0.0 if n in TOKENIZER_FEATURES else p for n, p in zip(FEATURES, PRIOR, strict=True)))]
    base = ("overhead", "messages", "images")
    for t in TOKENIZER_FEATURES:
        if not len(x) or not (x[:, FEATURES.index(t)] > 0).any():
            continue
        prior = tuple(1.0 if n == t else p if n in base else 0.0 for n, p in zip(FEATURES, PRIOR, strict=True))
        out.append(Candidate(t, tuple(n in base or n == t for n in FEATURES), prior))
        out.append(Candidate(f"{t}+mix", tuple(n == t or n not in TOKENIZER_FEATURES for n in FEATURES), prior))
    return out


def _label(tree: Tree, name: str) -> Tree:
    def lab(level: dict[str, Any]) -> dict[str, Any]:
        return {k: replace(v, candidate=name) for k, v in level.items()}

    return Tree(replace(tree.corpus, candidate=name), lab(tree.provider), lab(tree.model), lab(tree.rules))


@dataclass(slots=True)
class Rows:
    """The request rows of a design: X, y, and each row's (provider, model, rules) keys."""

    x: Any
    y: Any
    rows: Mapping[Unit, Sequence[int]]
    prov: Any
    model: Any
    rules: Any

    def errors(self, tree: Tree, units: Iterable[Unit], out: Any) -> None:
        """|E - A| / A of the rows of `units` predicted by `tree` into `out` (NaN where A <= 0)."""
        import numpy as np

        for u in units:
            idx = np.asarray(self.rows[u], dtype=np.int64)
            pred = np.maximum(self.x[idx] @ np.asarray(tree.coef_for(u[1], u[2], u[3])), 0.0)
            y = self.y[idx]
            with np.errstate(divide="ignore", invalid="ignore"):
                out[idx] = np.where(y > 0, np.abs(pred - y) / y, np.nan)


def compose(trees: Mapping[str, Tree], err: Mapping[str, Any], data: Rows) -> Tree:
    """Per level, the candidate with the lowest cross-validated MAPE on the level's rows (see the
    module doc); `err`: each candidate's per-row relative errors, NaN where not predicted."""
    import numpy as np

    names = list(trees)
    if len(names) == 1:
        return trees[names[0]]
    ok = np.logical_and.reduce([~np.isnan(err[c]) for c in names])

    def pick(sel: Any, parent: str) -> str:
        m = sel & ok
        if int(m.sum()) < MIN_OOS:
            return parent
        return min(names, key=lambda c: float(err[c][m].mean()))

    every = np.ones(len(ok), dtype=bool)
    top = pick(every, DEFAULT if DEFAULT in trees else names[0])
    first = trees[names[0]]
    out = Tree(trees[top].corpus)
    prov_choice = {}
    for p in first.provider:
        prov_choice[p] = pick(data.prov == p, top)
        out.provider[p] = trees[prov_choice[p]].provider[p]
    model_choice = {}
    for mk in first.model:
        sel = data.model == mk
        parent = prov_choice.get(str(data.prov[sel][0]), top) if sel.any() else top
        model_choice[mk] = pick(sel, parent)
        out.model[mk] = trees[model_choice[mk]].model[mk]
    for r in first.rules:
        sel = data.rules == r
        parent = model_choice.get(str(data.model[sel][0]), top) if sel.any() else top
        out.rules[r] = trees[pick(sel, parent)].rules[r]
    return out


def cross_validated(cands: Sequence[Candidate], units: Mapping[Unit, Sums], data: Rows,
                    folds: Sequence[set[str]]) -> dict[str, Any]:
    """Each candidate's per-row relative errors, every row of a fold predicted by the candidate's
    tree fitted on the other folds (NaN: rows outside `units`)."""
    import numpy as np

    err = {c.name: np.full(len(data.y), np.nan) for c in cands}
    for fold in folds:
        train = {u: s for u, s in units.items() if u[0] not in fold}
        held = [u for u in units if u[0] in fold]
        if not train or not held:
            continue
        for c in cands:
            data.errors(c.fit(train), held, err[c.name])
    return err


def session_folds(names: Sequence[str], k: int) -> list[set[str]]:
    """`names` dealt round-robin into min(k, len(names)) folds."""
    n = min(k, len(names))
    return [set(names[i::n]) for i in range(n)] if n else []


def chosen_tree(cands: Sequence[Candidate], units: Mapping[Unit, Sums], data: Rows) -> tuple[Tree, dict[str, Tree]]:
    """The composed tree over `units`, each level's candidate chosen by an inner cross-validation
    over the sessions of `units` (a single session or a single candidate: `characters`), and every
    candidate's own tree."""
    trees = {c.name: c.fit(units) for c in cands}
    names = list(dict.fromkeys(u[0] for u in units))
    if len(cands) < 2 or len(names) < 2:
        return trees[cands[0].name], trees
    return compose(trees, cross_validated(cands, units, data, session_folds(names, INNER_FOLDS)), data), trees
