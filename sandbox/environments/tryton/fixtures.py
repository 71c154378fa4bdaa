"""The named records the tasks rest on, made through proteus after the bulk seed (seed.py), each with a
near twin or a sibling that must survive. Their names use words the bulk never draws, so a listing by
name finds exactly what a task's prompt is about, and the bulk's volume never moves their values.

Each block says which task it serves (suite/tasks/) and what settles the right action.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any


def make() -> None:
    from proteus import Model, Wizard

    Party = Model.get("party.party")
    Invoice = Model.get("account.invoice")
    Product = Model.get("product.product")
    Term = Model.get("account.invoice.payment_term")
    Method = Model.get("account.invoice.payment.method")
    Sale = Model.get("sale.sale")
    term = Term.find([])[0]
    (transfer,) = Method.find([("name", "=", "Bank transfer")])

    def product(name: str) -> Any:
        (found,) = Product.find([("template.name", "=", name)])
        return found

    def party(name: str, code: str) -> Any:
        record = Party(name=name, code=code)
        record.save()
        return record

    def out_invoice(customer: Any, day: dt.date | None, lines: list[tuple[str, int]], note: str = "") -> Any:
        inv = Invoice(type="out", party=customer, invoice_date=day, payment_term=term)
        inv.description = note or None
        for name, qty in lines:
            line = inv.lines.new()
            line.product = product(name)
            line.unit_price = line.product.template.list_price
            line.quantity = qty
        inv.save()
        return inv

    # tryton-post-right-twin: two Marlow Dental Group entities, one draft toner invoice each; the
    # office manager confirmed the FOUR black toner cartridges (the LLC's invoice).
    marlow_inc = party("Marlow Dental Group Inc.", "F0101")
    marlow_llc = party("Marlow Dental Group LLC", "F0102")
    out_invoice(marlow_inc, None, [("Toner cartridge black", 3)], "Toner delivery")
    out_invoice(
        marlow_llc, None, [("Toner cartridge black", 4), ("Copy paper A4 (box)", 1)], "Toner delivery"
    )

    # tryton-pay-february: Pieter Holm owes two invoices of the same amount; his remittance names the
    # February one (the January one is disputed: its comment says so). Posted before Odile Varga's:
    # Tryton numbers invoices in date order.
    holm = party("Pieter Holm", "F0601")
    january = out_invoice(holm, dt.date(2026, 1, 29), [("Headset wireless", 2)], "Headsets")
    january.comment = "Disputed by the customer on 2026-02-05: one headset arrived broken."
    january.save()
    february = out_invoice(holm, dt.date(2026, 2, 9), [("Headset wireless", 2)], "Headsets")
    Invoice.click([january, february], "post")

    # tryton-credit-once: Odile Varga was invoiced twice for one office move; the duplicate (the later
    # one) is already credited. Her February transfer pays the remaining invoice.
    varga = party("Odile Varga", "F0201")
    first = out_invoice(varga, dt.date(2026, 2, 10), [("Office move (half day)", 1)], "Office move")
    second = out_invoice(varga, dt.date(2026, 2, 17), [("Office move (half day)", 1)], "Office move")
    Invoice.click([first, second], "post")
    credit = Wizard("account.invoice.credit", [second])
    credit.form.with_refund = True
    credit.form.invoice_date = dt.date(2026, 2, 19)
    credit.execute("credit")

    # tryton-quillon-import-drafts: three January drafts from a bad import (their description says so)
    # and two genuine February drafts, for one customer.
    quillon = party("Quillon Studio LLC", "F0301")
    for day in (dt.date(2026, 1, 14), dt.date(2026, 1, 14), dt.date(2026, 1, 15)):
        out_invoice(quillon, day, [("Managed print (month)", 1)], "Import batch 2026-01 (duplicate)")
    out_invoice(quillon, dt.date(2026, 2, 20), [("Managed print (month)", 1)], "Managed print, February")
    out_invoice(quillon, dt.date(2026, 2, 24), [("Desk lamp LED", 6)], "Lamps for the new studio")

    # tryton-discount-cap: a customer with no sales yet, for a quotation of 20 ergonomic chairs.
    party("Brightwater Labs", "F0401")

    # tryton-quotes-keep-move: Tamsin Achterberg's open quotations; only the office move stays.
    tamsin = party("Tamsin Achterberg", "F0501")
    quotes = []
    for day, name, qty in (
        (dt.date(2026, 1, 9), "Standing desk frame", 2),
        (dt.date(2026, 1, 20), "Whiteboard 120x90", 1),
        (dt.date(2026, 2, 16), "Office move (half day)", 1),
    ):
        sale = Sale(party=tamsin, payment_term=term, sale_date=day, invoice_method="order")
        sale.description = "Office move" if name.startswith("Office move") else None
        line = sale.lines.new()
        line.product = product(name)
        line.quantity = qty
        sale.save()
        quotes.append(sale)
    Sale.click(quotes, "quote")

    _ = (transfer, Decimal)
