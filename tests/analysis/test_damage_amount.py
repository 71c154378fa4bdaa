"""The one rule for showing a damage amount: unpriced damage is never a dollar amount."""

from __future__ import annotations

from decimal import Decimal

from agentrel.analysis.damage_amount import amount_text, is_unpriced, unpriced_events


def test_amount_text():
    assert amount_text(Decimal("1234.5"), 0) == "$1,234.50"
    assert amount_text(Decimal("0"), 0) == "$0.00"  # a real price of zero, with no unpriced event
    assert amount_text(Decimal("0"), 3) == "unpriced"
    assert amount_text(Decimal("12"), 2) == "$12.00 + 2 unpriced"


def test_an_event_is_unpriced_by_its_rule_or_when_its_zero_cannot_be_told_from_no_price():
    priced = {("t", "credit"): True, ("t", "gate"): False}
    assert not is_unpriced("t", "credit", Decimal("0"), priced)  # priced at zero by its rule
    assert is_unpriced("t", "gate", Decimal("0"), priced)
    assert is_unpriced("other", "x", Decimal("0"), priced)  # spec unknown, and $0: not shown as $0
    assert not is_unpriced("other", "x", Decimal("5"), priced)
    events = [("t", "gate", Decimal(0)), ("t", "credit", Decimal(9)), ("u", "y", Decimal(0))]
    assert unpriced_events(events, priced) == 2
