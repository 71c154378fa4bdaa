"""RFC 8785 (JSON Canonicalization Scheme) bytes and their SHA-256: every publication hash is one of these.

`canonical_bytes` / `canonical_hash` go through the `rfc8785` package, the reference. `parse_canonical`
gives the same bytes for one JSON text (a line of runs.jsonl) several times faster, which is what makes
an evidence root over 100,000 records affordable: msgspec's JSON writer, told to sort keys, already
writes RFC 8785 for every value except three, and each of the three is caught before it is written and
sent through the reference instead:

- a float written otherwise than ECMAScript writes it (`1.0` vs `1`, `1e16` vs `10000000000000000`):
  the parser hands every float literal to `_float`, which makes integral floats inside the
  exact-integer range ints (same bytes) and marks any other integral float, and any float outside
  [1e-4, 1e16), where the two notations part, as `_Unwritable`, which the writer refuses;
- an integer outside +-(2**53 - 1), which RFC 8785 refuses (the reference raises): a number literal
  of 16 or more digits sends the text to the reference;
- a character outside the Basic Multilingual Plane, since RFC 8785 sorts keys by UTF-16 code units and
  msgspec by code points, and the two orders differ only there.

String escaping is the same in both (`\\" \\\\ \\b \\f \\n \\r \\t`, other controls `\\u00xx`, nothing else);
both parsers refuse NaN, the infinities' names and lone surrogates.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, NamedTuple

import msgspec
import rfc8785
from pydantic import BaseModel

__all__ = [
    "Canonical",
    "CanonicalError",
    "canonical_bytes",
    "canonical_hash",
    "canonical_line",
    "model_bytes",
    "parse_canonical",
    "part_bytes",
    "sha256_hex",
]

_SAFE_INT = 2**53 - 1
_NON_BMP = re.compile(rb"[\xf0-\xf4]")  # the lead byte of a 4-byte UTF-8 sequence: outside the BMP
# Written compactly, a number follows `[`, `:` or `,`; mapped to `:` (digits to `0`, `-` kept, all else
# to `x`), one of 16 or more digits, which may exceed 2**53 - 1, shows as `:0000000000000000`. A string
# that looks so only costs the reference's time. (bytes.translate is ten times faster than a regex.)
_SHAPE_OF = {**dict.fromkeys(b"0123456789", ord("0")), **dict.fromkeys(b"[:,", ord(":")), ord("-"): ord("-")}
_NUMBER_SHAPE = bytes(_SHAPE_OF.get(b, ord("x")) for b in range(256))
_LONG_INTS = (b":" + b"0" * 16, b":-" + b"0" * 16)


class CanonicalError(ValueError):
    """A value RFC 8785 cannot represent (NaN, an infinity, a huge integer, a lone surrogate)."""


def canonical_bytes(obj: Any) -> bytes:
    try:
        return rfc8785.dumps(obj)
    except rfc8785.CanonicalizationError as exc:
        raise CanonicalError(str(exc)) from None


def canonical_hash(obj: Any) -> str:
    """SHA-256 (hex) of the RFC 8785 form of obj."""
    return hashlib.sha256(canonical_bytes(obj)).hexdigest()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Unwritable:
    """A float the fast writer would write otherwise than RFC 8785; msgspec refuses to encode it."""

    __slots__ = ()


_UNWRITABLE = _Unwritable()


def _float(literal: str) -> float | int | _Unwritable:
    x = float(literal)
    if x.is_integer():
        return int(x) if -_SAFE_INT <= x <= _SAFE_INT else _UNWRITABLE
    return x if 1e-4 <= abs(x) < 1e16 else _UNWRITABLE


def _plain_float(literal: str) -> float | int:
    x = float(literal)
    return int(x) if x.is_integer() and -_SAFE_INT <= x <= _SAFE_INT else x


_FAST_DECODER = msgspec.json.Decoder(float_hook=_float)
_PLAIN_DECODER = msgspec.json.Decoder(float_hook=_plain_float)
_ENCODER = msgspec.json.Encoder(order="sorted")


def parse_canonical(text: str | bytes) -> Canonical:
    """The RFC 8785 form of one JSON text, with its parsed value (integral floats as ints)."""
    try:
        value = _FAST_DECODER.decode(text)
        try:
            data = _ENCODER.encode(value)
        except TypeError:  # an _Unwritable float
            pass
        else:
            if _exact(data):
                return Canonical(data, value, True)
        value = _PLAIN_DECODER.decode(text)
    except RecursionError:
        raise CanonicalError("nested too deeply") from None
    return Canonical(canonical_bytes(value), value, False)


def _exact(data: bytes) -> bool:
    """Whether the fast writer's bytes are RFC 8785's: no integer that may be out of range, no character
    outside the BMP."""
    shape = data.translate(_NUMBER_SHAPE)
    if _LONG_INTS[0] in shape or _LONG_INTS[1] in shape:
        return False
    return data.isascii() or not _NON_BMP.search(data)


class Canonical(NamedTuple):
    data: bytes  # the RFC 8785 bytes
    value: Any  # the parsed value, integral floats as ints
    fast: bool  # whether every part of value also encodes exactly by the fast encoder (`part_bytes`)


def part_bytes(value: Any, fast: bool) -> bytes:
    """The RFC 8785 bytes of a part of a value `parse_canonical` returned (with its `fast`): what held for
    the whole holds for each part."""
    return _ENCODER.encode(value) if fast else canonical_bytes(value)


def model_bytes(model: BaseModel) -> bytes:
    """The RFC 8785 bytes of a pydantic model's JSON form (its model_dump_json, canonicalized): the
    reference encoder is pure Python, too slow for a scorecard that lists 100,000 runs."""
    return parse_canonical(model.model_dump_json()).data


def canonical_line(text: str | bytes) -> tuple[bytes, Any]:
    """The RFC 8785 bytes of one JSON text, and the parsed value (integral floats as ints)."""
    data, value, _ = parse_canonical(text)
    return data, value
