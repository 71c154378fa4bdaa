"""Param coercion: strings from a CLI or YAML values become the declared type, or a clear error."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from agentrel.dsl.api import ParamError, parse_spec
from agentrel.dsl.params import ParamTypeError, coerce_literal, resolve_params


@pytest.mark.parametrize(
    ("type_name", "value", "expected"),
    [
        ("int", "42", 42),
        ("int", " -7 ", -7),
        ("int", 42, 42),
        ("numeric", "250.00", Decimal("250.00")),
        ("numeric", 250, Decimal(250)),
        ("numeric", 250.1, Decimal("250.1")),
        ("numeric", Decimal("1.5"), Decimal("1.5")),
        ("text", "open", "open"),
        ("bool", "true", True),
        ("bool", "No", False),
        ("bool", False, False),
        ("date", "2026-01-02", dt.date(2026, 1, 2)),
        ("date", dt.date(2026, 1, 2), dt.date(2026, 1, 2)),
        ("timestamp", "2026-01-02T03:04:05Z", dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)),
        ("timestamp", "2026-01-02T05:04:05+02:00", dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)),
        ("timestamp", dt.datetime(2026, 1, 2, 3, 4, 5), dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)),
    ],
)
def test_coercion(type_name: str, value: object, expected: object) -> None:
    got = coerce_literal(type_name, value)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    ("type_name", "value"),
    [
        ("int", "4.5"),
        ("int", True),
        ("int", 4.0),
        ("numeric", "NaN"),
        ("numeric", "lots"),
        ("numeric", True),
        ("text", 7),
        ("bool", "maybe"),
        ("bool", 1),
        ("date", "2026-02-30"),
        ("date", dt.datetime(2026, 1, 2)),
        ("timestamp", "2026-01-02"),
    ],
)
def test_ill_typed_values(type_name: str, value: object) -> None:
    with pytest.raises(ParamTypeError, match="expected"):
        coerce_literal(type_name, value)


def test_resolve_applies_defaults_then_overrides() -> None:
    spec = parse_spec('spec "p" version 1\nparam a: int = -3\nparam b: text = "x"\nparam c: date\n', "p.dmg")
    assert resolve_params(spec, {"c": "2026-01-01"}) == {"a": -3, "b": "x", "c": dt.date(2026, 1, 1)}
    assert resolve_params(spec, {"a": "5", "c": dt.date(2026, 1, 1)})["a"] == 5
    with pytest.raises(ParamError, match=r"p.dmg:4:1: param 'c' has no default"):
        resolve_params(spec, None)
    with pytest.raises(ParamError, match=r"spec 'p' \(p.dmg\) has no param d, e; declared: a, b, c"):
        resolve_params(spec, {"d": 1, "e": 2, "c": "2026-01-01"})
