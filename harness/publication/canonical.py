"""RFC 8785 (JSON Canonicalization Scheme) bytes and their SHA-256: every publication hash is one of these.

`canonical_bytes` / `canonical_hash` go through the `rfc8785` package, the reference. `parse_canonical`
gives the same bytes for one JSON text (a line of runs.jsonl) several times faster, which is what makes
an evidence root over 100,000 records affordable: pydantic-core's JSON writer, given objects with sorted
keys, already writes RFC 8785 for every value except three, and the one pass that sorts the keys also
catches all three and sends that text through the reference instead:

- a float written otherwise than ECMAScript writes it (`1.0` vs `1`, `1e-5` vs `0.00001`, `1e16` vs
  `10000000000000000`): integral floats inside the exact-integer range become ints (same bytes); any
  other integral float, and any float outside [1e-4, 1e16), where the two notations part, marks the
  text;
- an integer outside +-(2**53 - 1), which RFC 8785 refuses (the reference raises);
- a character outside the Basic Multilingual Plane, since RFC 8785 sorts keys by UTF-16 code units and
  Python by code points, and the two orders differ only there.

String escaping is the same in both (`\\" \\\\ \\b \\f \\n \\r \\t`, other controls `\\u00xx`, nothing else).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, NamedTuple

import pydantic_core
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


def _float(x: float) -> tuple[float | int, bool]:
    """A float as the fast writer should get it (integral ones in the exact-integer range as ints), and
    whether it then writes it as RFC 8785 does (outside [1e-4, 1e16) the two notations part)."""
    if x.is_integer():
        return (int(x), True) if -_SAFE_INT <= x <= _SAFE_INT else (x, False)
    return x, 1e-4 <= abs(x) < 1e16


def _sorted_normal(node: dict[str, Any] | list[Any]) -> tuple[Any, bool]:
    """A copy of a parsed JSON object or array with every object's keys sorted and every float as
    `_float` makes it; and whether all of it writes as RFC 8785 does.

    The hot loop of the evidence root (a record has a few dozen values): strings, booleans, None,
    exact-range ints and empty containers cost no call, so both loops spell the same tests out."""
    exact = True
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key in sorted(node):
            x = node[key]
            kind = type(x)
            if kind is int:
                if not -_SAFE_INT <= x <= _SAFE_INT:
                    exact = False
            elif kind is float:
                x, ok = _float(x)
                exact = exact and ok
            elif (kind is dict or kind is list) and x:
                x, ok = _sorted_normal(x)
                exact = exact and ok
            out[key] = x
        return out, exact
    items = []
    for x in node:
        kind = type(x)
        if kind is int:
            if not -_SAFE_INT <= x <= _SAFE_INT:
                exact = False
        elif kind is float:
            x, ok = _float(x)
            exact = exact and ok
        elif (kind is dict or kind is list) and x:
            x, ok = _sorted_normal(x)
            exact = exact and ok
        items.append(x)
    return items, exact


def parse_canonical(text: str | bytes) -> Canonical:
    """The RFC 8785 form of one JSON text, with its parsed value (keys sorted, integral floats as ints).

    Parsed and written by pydantic-core (in Rust, several times faster than the json module here); its
    parser refuses NaN, the infinities and lone surrogates as RFC 8785 does, and its writer escapes
    strings and writes shortest-digit floats as ECMAScript does."""
    try:
        parsed: list[Any] = [pydantic_core.from_json(text, allow_inf_nan=False)]
        (value,), exact = _sorted_normal(parsed)
    except RecursionError:
        raise CanonicalError("nested too deeply") from None
    if exact:
        data = pydantic_core.to_json(value)
        if data.isascii() or not _NON_BMP.search(data):
            return Canonical(data, value, True)
    return Canonical(canonical_bytes(value), value, False)


class Canonical(NamedTuple):
    data: bytes  # the RFC 8785 bytes
    value: Any  # the parsed value, integral floats as ints
    fast: bool  # whether every part of value also encodes exactly by the fast encoder (`part_bytes`)


def part_bytes(value: Any, fast: bool) -> bytes:
    """The RFC 8785 bytes of a part of a value `parse_canonical` returned (with its `fast`): what held for
    the whole holds for each part."""
    return pydantic_core.to_json(value) if fast else canonical_bytes(value)


def model_bytes(model: BaseModel) -> bytes:
    """The RFC 8785 bytes of a pydantic model's JSON form (its model_dump_json, canonicalized): the
    reference encoder is pure Python, too slow for a scorecard that lists 100,000 runs."""
    return parse_canonical(model.model_dump_json()).data


def canonical_line(text: str | bytes) -> tuple[bytes, Any]:
    """The RFC 8785 bytes of one JSON text, and the parsed value (integral floats as ints)."""
    data, value, _ = parse_canonical(text)
    return data, value
