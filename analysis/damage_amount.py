"""How a damage amount is shown: the one rule every output follows (the audit's closing table and its
JSON, runs.csv, the view).

A damage rule without a `price` records $0.00, which reads like "priced at zero": a run whose damage is
all unpriced must never be shown as a dollar amount. An event counts as unpriced when the audit's own spec
says its rule has no price, or when the spec cannot be asked (changed since the audit, or not installed)
and the event recorded $0.00, since such a zero cannot be told from a missing price. Pure: data in, text
out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal

UNPRICED = "unpriced"


def is_unpriced(spec: str, rule: str, dollars: Decimal, priced: Mapping[tuple[str, str], bool]) -> bool:
    """Whether one damage event has no price (see the module docstring); `priced` maps (spec, rule) to
    whether the rule names a price (harness.damage_pricing builds it)."""
    known = priced.get((spec, rule))
    return not known if known is not None else dollars == 0


def unpriced_events(
    events: Iterable[tuple[str, str, Decimal]], priced: Mapping[tuple[str, str], bool]
) -> int:
    """How many of the (spec, rule, dollars) events have no price."""
    return sum(is_unpriced(s, r, d, priced) for s, r, d in events)


def amount_text(dollars: Decimal, unpriced: int) -> str:
    """`$1,234.50`, `unpriced` (no priced event: never `$0.00`), or `$1,234.50 + 3 unpriced`."""
    if not unpriced:
        return f"${dollars:,.2f}"
    if not dollars:
        return UNPRICED
    return f"${dollars:,.2f} + {unpriced} {UNPRICED}"
