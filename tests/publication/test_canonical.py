"""Known answers for the canonical form every publication hash is over, and the fast path's equality
with the reference on arbitrary JSON."""

import hashlib
import json
import math
import random
import struct

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrel.harness.protocol.canonical import (
    CanonicalError,
    canonical_bytes,
    canonical_hash,
    canonical_line,
    parse_canonical,
)

# RFC 8785 section 3.2.3's example, as the JSON text the RFC gives and the bytes it says it becomes.
RFC_INPUT = r"""{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"""
RFC_OUTPUT = (
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
    '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
).encode()

# RFC 8785 section 3.2.3: keys sorted by UTF-16 code units, so the emoji (a surrogate pair, D83D...)
# sorts before U+FB33, though its code point is larger.
RFC_SORT_INPUT = (
    '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh",'
    '"1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control",'
    '"\\u00f6":"Latin Small Letter O With Diaeresis"}'
)
RFC_SORT_KEYS = ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]

# RFC 8785 appendix B: IEEE 754 bit patterns and their serializations.
RFC_NUMBERS = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("41b3de4355555555", "333333333.3333333"),
    ("c06fe00000000000", "-255"),
]


def _float(bits: str) -> float:
    return struct.unpack(">d", bytes.fromhex(bits))[0]


def test_the_rfc_example_canonicalizes_to_its_published_bytes_by_both_paths():
    assert canonical_bytes(json.loads(RFC_INPUT)) == RFC_OUTPUT
    assert canonical_line(RFC_INPUT)[0] == RFC_OUTPUT


def test_keys_sort_by_utf16_code_units_by_both_paths():
    for out in (canonical_bytes(json.loads(RFC_SORT_INPUT)), canonical_line(RFC_SORT_INPUT)[0]):
        assert list(json.loads(out)) == RFC_SORT_KEYS


@pytest.mark.parametrize(("bits", "expected"), RFC_NUMBERS)
def test_rfc_number_vectors(bits, expected):
    value = _float(bits)
    assert canonical_bytes(value) == expected.encode()
    assert canonical_line(json.dumps(value))[0] == expected.encode()


def test_sha256_of_a_fixed_object_matches_bytes_written_by_hand():
    obj = {"c": {"e": None, "d": -0.5}, "b": [1, "x"], "a": True}
    by_hand = b'{"a":true,"b":[1,"x"],"c":{"d":-0.5,"e":null}}'
    assert canonical_bytes(obj) == by_hand
    assert canonical_hash(obj) == hashlib.sha256(by_hand).hexdigest()
    # computed once with coreutils: printf '%s' '<the bytes above>' | sha256sum
    assert canonical_hash(obj) == "1416d7b6cd02c2214bc106ebfc074b1cde206724d1b6a4802bdfa73aa13ea3e1"


@pytest.mark.parametrize("bad", [math.nan, math.inf, 2**53, {"n": -(2**60)}])
def test_what_rfc_8785_cannot_represent_is_refused(bad):
    with pytest.raises(CanonicalError):
        canonical_bytes(bad)


@pytest.mark.parametrize("text", ["NaN", '{"x": Infinity}', "1e400", "[12345678901234567890]", '"\\ud800"'])
def test_the_fast_path_refuses_the_same(text):
    with pytest.raises(ValueError):
        canonical_line(text)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(JSON)
def test_the_fast_path_equals_the_reference_on_any_json(value):
    try:
        expected = rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:  # a lone surrogate in a string
        with pytest.raises(ValueError):
            canonical_line(json.dumps(value))
        return
    assert canonical_line(json.dumps(value))[0] == expected
    assert canonical_line(json.dumps(value, ensure_ascii=False, indent=2))[0] == expected


def test_floats_across_the_fast_range_match_the_reference():
    """Where the fast writer is trusted (non-integral, 1e-4 <= |x| < 1e16) and at its edges."""
    rng = random.Random(8785)
    values = [math.copysign(10 ** rng.uniform(-4.5, 16.5), rng.random() - 0.5) for _ in range(20000)]
    values += [1e-4, math.nextafter(1e-4, 0), 1e16 - 2, 2**53 - 0.5, 0.1 + 0.2, 1 / 3]
    text = json.dumps(values)
    assert canonical_line(text)[0] == rfc8785.dumps(values)
    for v in values[:2000]:
        assert canonical_line(json.dumps([v]))[0] == rfc8785.dumps([v])


@pytest.mark.parametrize(
    ("value", "fast"),
    [
        ([1.0, -0.0, 3.0e14], True),  # integral floats in the exact range: written as the ints they are
        ([2.5e16, 1e-5, 1e21, 1e-7], False),  # where the two notations part
        ([1000000000000000, -(2**53) + 1, 2**53 - 1], False),  # 16 digits: may be past the exact range
        ({"note": "at :1234567890123456 and [-9999999999999999"}, False),  # shaped like one, in a string
        ({"\U0001f600": 1, "\ufb33": 2}, False),  # keys outside the BMP: UTF-16 order
        ({"digest": "12345678901234567890ab", "n": 12345}, True),  # digits in a string are no number
    ],
)
def test_the_fast_writer_is_trusted_exactly_where_it_writes_rfc_8785(value, fast):
    parsed = parse_canonical(json.dumps(value))
    assert parsed.data == rfc8785.dumps(value)
    assert parsed.fast is fast


@pytest.mark.parametrize("text", ["[-12345678901234567890]", '{"a": [1, {"b": 9007199254740992}]}'])
def test_an_integer_past_the_exact_range_is_refused_wherever_it_sits(text):
    with pytest.raises(CanonicalError):
        canonical_line(text)


def test_a_record_shaped_line_takes_the_fast_path():
    """The evidence root's speed rests on ordinary records never needing the reference."""
    record = {"run_id": "r1", "timings": {"agent_s": 1.3, "total_s": 0.004}, "cost_usd": 0.0042, "k": [1, 2]}
    assert parse_canonical(json.dumps(record)).fast
