"""Typed values: how dump strings become comparable Python values, and back to canonical text.

Dumps store numeric as decimal strings, dates as ``YYYY-MM-DD`` and timestamps as ISO-8601 UTC
strings. The labeler converts lazily, only where an expression reads such a column.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

CENT = Decimal("0.01")
ZERO = Decimal("0.00")


def parse_timestamp(text: str) -> dt.datetime:
    """ISO-8601 with a time part; a naive timestamp is taken as UTC. Raises ValueError."""
    if "T" not in text and " " not in text:
        raise ValueError("a timestamp needs a time, e.g. 2026-01-02T03:04:05Z")
    value = dt.datetime.fromisoformat(text)
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


def format_timestamp(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def to_timestamp(v: Any) -> dt.datetime:
    return v if isinstance(v, dt.datetime) else parse_timestamp(v)


# Column kind -> converter from the dump's canonical form (strings); kinds absent here compare as
# stored. The C constructors are used directly: this runs once per column read in a hot loop.
CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "numeric": Decimal,
    "date": dt.date.fromisoformat,
    "timestamp": to_timestamp,
}


def money(value: Decimal | int | None) -> Decimal:
    """A price as dollars: rounded half-up to cents; null and negative prices count as $0.00."""
    if value is None:
        return ZERO
    amount = (value if isinstance(value, Decimal) else Decimal(value)).quantize(CENT, ROUND_HALF_UP)
    return amount if amount > 0 else ZERO


def format_money(value: Decimal) -> str:
    return f"{value.quantize(CENT, rounding=ROUND_HALF_UP):.2f}"
