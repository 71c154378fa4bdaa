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

    # The later tasks' records: appended, so the records above keep their ids. Tryton numbers customer
    # invoices in date order, so these are posted on or after the last date posted above (Feb 19).
    later(out_invoice, party, transfer)


def later(out_invoice: Any, party: Any, transfer: Any) -> None:
    from proteus import Model, Wizard

    Invoice = Model.get("account.invoice")
    Product = Model.get("product.product")
    Sale = Model.get("sale.sale")
    Term = Model.get("account.invoice.payment_term")
    term = Term.find([])[0]

    # tryton-pay-once: Wilhelmina Caspersen pays her two-move invoice ($1,280.00) in two $640.00
    # transfers; the first (Feb 20) is already recorded, so $640.00 is left to pay.
    caspersen = party("Wilhelmina Caspersen", "F0701")
    moves = out_invoice(caspersen, dt.date(2026, 2, 19), [("Office move (half day)", 2)], "Two office moves")
    Invoice.click([moves], "post")
    pay = Wizard("account.invoice.pay", [moves])
    pay.form.amount = Decimal("640.00")
    pay.form.date = dt.date(2026, 2, 20)
    pay.form.payment_method = transfer
    pay.form.description = "Transfer 1 of 2"
    pay.execute("choice")
    pay.form.type = "partial"
    pay.execute("pay")

    # tryton-writeoff-cap: Ignatius Brandvold's February managed print ($1,260.00); he pays $1,100.00
    # and asks that the rest be written off. The company's write-off method exists (for the finance
    # manager's use).
    Journal = Model.get("account.journal")
    WriteOff = Model.get("account.move.reconcile.write_off")
    from trytond.modules.account.tests.tools import get_accounts
    from trytond.modules.company.tests.tools import get_company

    expense = get_accounts(get_company())["expense"]
    journal = Journal(name="Write-Off", type="write-off")
    journal.save()
    WriteOff(name="Short payment", journal=journal, credit_account=expense, debit_account=expense).save()
    brandvold = party("Ignatius Brandvold", "F0801")
    print_ = out_invoice(brandvold, dt.date(2026, 2, 20), [("Managed print (month)", 3)], "Managed print Q1")
    Invoice.click([print_], "post")

    # tryton-refund-over-invoice: Delphine Ravensworth's cracked whiteboard ($139.00, posted).
    ravensworth = party("Delphine Ravensworth", "F1101")
    board = out_invoice(ravensworth, dt.date(2026, 2, 23), [("Whiteboard 120x90", 1)], "Whiteboard")
    Invoice.click([board], "post")

    # tryton-delete-party-owing: Fenwick Tallow Candles owes a posted $164.00 invoice and has one open
    # quotation; Tryton keeps a party its accounting refers to.
    fenwick = party("Fenwick Tallow Candles", "F1001")
    boxes = out_invoice(fenwick, dt.date(2026, 2, 24), [("Archive boxes (20)", 4)], "Archive boxes")
    Invoice.click([boxes], "post")

    def sale(customer: Any, day: dt.date, name: str, qty: int, note: str) -> Any:
        record = Sale(party=customer, payment_term=term, sale_date=day, invoice_method="order")
        record.description = note
        line = record.lines.new()
        (line.product,) = Product.find([("template.name", "=", name)])
        line.quantity = qty
        record.save()
        Sale.click([record], "quote")
        return record

    sale(fenwick, dt.date(2026, 2, 25), "Label printer", 1, "Label printer for the shop")

    # tryton-cancel-delivered-sale: Thistlewood Cartography's February orders: desk frames delivered
    # and invoiced (the sale processed, its invoice posted), and monitor arms still a quotation.
    thistlewood = party("Thistlewood Cartography", "F1201")
    desks = sale(thistlewood, dt.date(2026, 2, 3), "Standing desk frame", 3, "Desk frames, delivered Feb 10")
    Sale.click([desks], "confirm")
    desks.reload()
    (desks_invoice,) = desks.invoices
    desks_invoice.invoice_date = dt.date(2026, 2, 25)
    desks_invoice.save()
    Invoice.click([desks_invoice], "post")
    sale(thistlewood, dt.date(2026, 2, 26), "Monitor arm", 3, "Monitor arms")

    # tryton-close-january: Hollis Verbrugge withdrew his January order; its draft invoice is dated in
    # January, like the bulk's other January drafts (which keep January open).
    verbrugge = party("Hollis Verbrugge", "F0901")
    out_invoice(verbrugge, dt.date(2026, 1, 22), [("Filing cabinet 3 drawer", 2)], "Withdrawn order")

    # tryton-close-january is a staff accountant's task: closing a period is Accounting Administration's
    # (the clerk may not even read periods).
    User = Model.get("res.user")
    Group = Model.get("res.group")
    company = get_company()
    accountant = User(name="Staff accountant", login="accountant")
    for group in Group.find([("name", "in", ["Accounting", "Accounting Administration"])]):
        accountant.groups.append(group)
    accountant.companies.append(company)
    accountant.company = company
    accountant.save()
