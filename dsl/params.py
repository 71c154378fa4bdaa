"""Typed spec params: declared defaults and overrides (strings from a CLI or YAML values) coerced once.

Values after coercion: int -> int, numeric -> Decimal, text -> str, bool -> bool, date -> date,
timestamp -> UTC-aware datetime. Floats (a YAML ``250.00``) become the Decimal of their shortest repr,
so 250.1 is exactly 250.1, never 250.099999...
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from agentrel.dsl import ast
from agentrel.dsl.errors import ParamError
from agentrel.dsl.values import parse_timestamp


class ParamTypeError(ValueError):
    """A value that does not fit a param type; the message says what was expected."""


_BOOL_WORDS = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}


def coerce_literal(type_name: str, value: Any) -> Any:
    """Coerce a spec literal or an override value to ``type_name``; raise ParamTypeError."""
    if isinstance(value, str):
        return _from_text(type_name, value)
    if type_name == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if type_name == "numeric" and isinstance(value, int | Decimal) and not isinstance(value, bool):
        return Decimal(value)
    if type_name == "numeric" and isinstance(value, float):
        return Decimal(repr(value))
    if type_name == "bool" and isinstance(value, bool):
        return value
    if type_name == "timestamp" and isinstance(value, dt.datetime):
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
    if type_name == "date" and isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value
    raise ParamTypeError(f"expected {_describe(type_name)}, got {_show(value)}")


def _from_text(type_name: str, text: str) -> Any:
    try:
        if type_name == "text":
            return text
        if type_name == "int":
            return int(text.strip())
        if type_name == "numeric":
            value = Decimal(text.strip())
            if not value.is_finite():
                raise InvalidOperation
            return value
        if type_name == "bool":
            return _BOOL_WORDS[text.strip().lower()]
        if type_name == "date":
            return dt.date.fromisoformat(text.strip())
        if type_name == "timestamp":
            return parse_timestamp(text.strip())
    except (ValueError, KeyError, InvalidOperation):
        pass
    raise ParamTypeError(f"expected {_describe(type_name)}, got {_show(text)}")


def _describe(type_name: str) -> str:
    return {
        "int": "an integer",
        "numeric": "a decimal number such as 250.00",
        "text": "a string",
        "bool": "true or false",
        "date": "a date YYYY-MM-DD",
        "timestamp": "a timestamp such as 2026-01-02T03:04:05Z",
    }[type_name]


def _show(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def resolve_params(spec: ast.Spec, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """Declared defaults with ``overrides`` applied, every value coerced to its declared type.

    Raises ParamError for an override naming no declared param, an ill-typed value, or a param that
    has no default and was not given.
    """
    declared = {p.name: p for p in spec.params}
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(declared))
    if unknown:
        names = ", ".join(sorted(declared)) or "none"
        raise ParamError(
            f"spec '{spec.name}' ({spec.file}) has no param {', '.join(unknown)}; declared: {names}"
        )
    values: dict[str, Any] = {}
    for name, param in declared.items():
        if name in overrides:
            try:
                values[name] = coerce_literal(param.type, overrides[name])
            except ParamTypeError as err:
                raise ParamError(f"param '{name}' of spec '{spec.name}' is {param.type}: {err}") from None
        elif param.default is not None:
            values[name] = coerce_literal(param.type, ast.literal_value(param.default))
        else:
            raise ParamError(
                f"{param.span}: param '{name}' has no default; give it a value (e.g. --param {name}=VALUE)"
            )
    return values
