"""An agent's name appears only in its reader, its transcript adapter, its policy and the registries
(issue 24: "adding an agent is one reader + one policy"). Checked on the syntax tree of every module of
`sessiontools/`: identifiers, attribute and argument names, imported module names, the module's own
path and string constants (help texts and messages included); docstrings and comments do not count.

A name is matched as a word token: identifiers and strings are split at `_`, `-`, `.`, spaces and
other punctuation, at case changes (`PiPolicy` -> pi, policy; `PI_0` -> pi, 0) and between letters
and digits (`pi0` -> pi, 0). So `pi_view`, `PiPolicy`, `"pi-1"` and `sessiontools.read.pi` name Pi,
and `pipeline`, `api` or `spin` do not; Claude Code is the pair `claude code` (`claude_code`,
`ClaudeCode`, `"claude-code"`), not a model id such as `claude-sonnet-4`.

Modules that still name an agent outside its homes are on `PENDING`, each group saying why it is
there and who owns it; the list only shrinks. A new module that names an agent fails here.
"""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "sessiontools"

#: Each agent's word tokens (consecutive, lower case).
AGENT_WORDS: dict[str, tuple[str, ...]] = {"pi": ("pi",), "codex": ("codex",), "claude-code": ("claude", "code")}

#: An agent's homes: its reader, its transcript adapter and its policy (paths under sessiontools/,
#: a trailing "/" is a package, anything else a module name prefix).
HOMES: dict[str, tuple[str, ...]] = {
    "pi": ("read/pi/", "transcript/pi/", "policies/pi/"),
    "codex": ("read/codex/", "transcript/codex", "policies/codex"),
    "claude-code": ("read/claude_code/", "transcript/claude", "policies/claude_code"),
}

#: The registries, where every agent has its line(s): the agent enum, the readers, the transcript
#: adapters, the policies (and their names, in `names.py`) and how replay runs them.
REGISTRIES = frozenset({
    "read/agents.py", "read/sources.py", "transcript/load.py", "names.py", "policies/registry.py",
    "replay/registry.py",
})

#: Model ids and the price catalogue name models (`gpt-5-codex`), not the agent.
MODEL_NAMES = frozenset({"transcript/prices.py"})

_A = ("pi", "codex", "claude-code")
#: Modules that still name an agent outside its homes: module -> the agents it names.
PENDING: dict[str, tuple[str, ...]] = {}

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def words(text: str) -> list[str]:
    """`text`'s word tokens, lower case (see the module docstring)."""
    return [w.lower() for part in re.split(r"[^A-Za-z0-9]+", text) for w in _WORD.findall(part)]


def agents_named(text: str) -> set[str]:
    """The agents whose name is a run of word tokens of `text`."""
    ws = words(text)
    return {a for a, name in AGENT_WORDS.items()
            if any(tuple(ws[i:i + len(name)]) == name for i in range(len(ws)))}


def _docstrings(tree: ast.AST) -> set[int]:
    """The string constants that are documentation: a module's, class's or function's first
    statement and any bare string statement (an attribute's docstring)."""
    return {id(n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)}


def _names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every identifier, attribute, argument, imported module and non-doc string."""
    docs = _docstrings(tree)
    out: list[tuple[int, str]] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            out.append((n.lineno, n.id))
        elif isinstance(n, ast.Attribute):
            out.append((n.lineno, n.attr))
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.append((n.lineno, n.name))
        elif isinstance(n, ast.arg):
            out.append((n.lineno, n.arg))
        elif isinstance(n, ast.keyword) and n.arg:
            out.append((n.value.lineno, n.arg))
        elif isinstance(n, ast.Import | ast.ImportFrom):
            if isinstance(n, ast.ImportFrom) and n.module:
                out.append((n.lineno, n.module))
            out += [(n.lineno, s) for a in n.names for s in (a.name, a.asname) if s]
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            out.append((n.lineno, n.value))
    return out


def names_in(rel: str, source: str) -> dict[str, list[str]]:
    """Agent -> the `line: text` places module `rel` (its path and its syntax tree) names it."""
    found: dict[str, list[str]] = {}
    for line, text in [(0, rel.removesuffix(".py")), *_names(ast.parse(source))]:
        for a in agents_named(text):
            found.setdefault(a, []).append(f"{rel}:{line}: {text[:60]!r}")
    return found


def allowed(rel: str, agent: str) -> bool:
    return rel in REGISTRIES or rel in MODEL_NAMES or any(rel.startswith(h) for h in HOMES[agent])


def _modules() -> dict[str, str]:
    return {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in sorted(ROOT.rglob("*.py"))}


def test_an_agent_is_named_only_in_its_homes_and_the_registries() -> None:
    bad = []
    for rel, source in _modules().items():
        for agent, places in sorted(names_in(rel, source).items()):
            if not allowed(rel, agent) and agent not in PENDING.get(rel, ()):
                bad += places[:3]
    assert not bad, "an agent named outside its reader, adapter, policy and registries:\n" + "\n".join(bad)


def test_pending_entries_still_name_their_agent() -> None:
    """A pending entry that no longer names its agent is left over (a warning, not a failure: the
    lead trims the list after merging the branches that fix them)."""
    modules = _modules()
    stale = [f"{rel} {a}" for rel, agents in PENDING.items() for a in agents
             if a not in names_in(rel, modules[rel]) if rel in modules] if modules else []
    stale += [rel for rel in PENDING if rel not in modules]
    if stale:
        warnings.warn("PENDING entries to remove: " + ", ".join(stale), stacklevel=1)
    assert all(a in AGENT_WORDS for agents in PENDING.values() for a in agents)
    assert not (set(PENDING) & REGISTRIES)


def test_the_matcher_takes_words_not_substrings() -> None:
    """The test above can fail: each spelling of a name is found, and look-alikes are not."""
    named = ["pi_view", "PiPolicy", '"pi"', "PI_0", "pi0-chinese", "sessiontools.read.pi", "pi-1",
             "codex_rollout", "CodexChain", "claude_code", "ClaudeCodePolicy", "claude-code-reactive"]
    assert all(agents_named(t) for t in named), [t for t in named if not agents_named(t)]
    unnamed = ["pipeline", "api", "spin", "epic", "claude-sonnet-4", "code", "PIPE", "typing"]
    assert not [t for t in unnamed if agents_named(t)]
    src = '"""Pi\'s docstring."""\n# pi comment\ndef f():\n    """codex docstring"""\n    return "claude-code"\n'
    assert set(names_in("x/y.py", src)) == {"claude-code"}
    assert set(names_in("replay/pi_thing.py", "x = 1\n")) == {"pi"}
