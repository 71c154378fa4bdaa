"""The seeded company, built through proteus (Tryton's own client library) in the build's process.

Run by `launch seed` after the modules are activated: every record goes through Tryton's own models and
workflow (create, quote, confirm, post, pay), so what the template holds is what Tryton itself wrote.
Deterministic: one `random.Random` seeded by the seed text drives every choice, the business date is
pinned (launch.pin_clock), and the build normalizes bookkeeping stamps afterwards (build.py).

The company, Harbor Office Supply, sells office goods and services (in USD) to a few hundred customers,
buys from suppliers, and has invoices in every state (draft, posted, paid), sales in every state (draft,
quotation, confirmed, processed), supplier payments and a few open complaints. The named records the
tasks rest on (`FIXTURES`) are made after the bulk, so the bulk's volume does not move their values.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import sys
from decimal import Decimal
from typing import Any

FIRST = (
    "Ada", "Ben", "Carla", "Dmitri", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Keiko", "Liam",
    "Maya", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tara", "Umar", "Vera", "Wes", "Yara",
)  # fmt: skip
LAST = (
    "Abbott", "Brennan", "Castillo", "Dubois", "Eriksen", "Fontaine", "Garcia", "Hale", "Iqbal", "Jensen",
    "Kowalski", "Lindqvist", "Moreau", "Novak", "Okafor", "Petrov", "Quinn", "Rossi", "Sato", "Tanaka",
)  # fmt: skip
FIRM = (
    "Alder", "Birch", "Cedar", "Delta", "Elm", "Falcon", "Granite", "Harbor", "Iris", "Juniper", "Kestrel",
    "Lumen", "Maple", "Nimbus", "Oak", "Pine", "Quarry", "Ridge", "Summit", "Tidal",
)  # fmt: skip
KIND = ("Dental", "Logistics", "Legal", "Studio", "Bakery", "Clinic", "Consulting", "Architects", "Labs")
GOODS = (
    ("Copy paper A4 (box)", "38.50"), ("Toner cartridge black", "89.00"), ("Toner cartridge color", "129.00"),
    ("Desk chair ergonomic", "329.00"), ("Standing desk frame", "449.00"), ("Monitor arm", "74.90"),
    ("Whiteboard 120x90", "139.00"), ("Label printer", "219.00"), ("Shredder cross-cut", "189.00"),
    ("Notebook pack (10)", "24.00"), ("Stapler heavy duty", "32.50"), ("Filing cabinet 3 drawer", "265.00"),
    ("Desk lamp LED", "58.00"), ("Headset wireless", "119.00"), ("Webcam HD", "79.00"),
    ("Printer paper A3 (box)", "54.00"), ("Envelope pack C4", "18.90"), ("Archive boxes (20)", "41.00"),
)  # fmt: skip
SERVICES = (
    ("On-site printer service (hour)", "95.00"), ("Office move (half day)", "640.00"),
    ("Furniture assembly (hour)", "65.00"), ("Managed print (month)", "420.00"),
)  # fmt: skip


def rng_for(seed_text: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(seed_text.encode()).digest()[:8], "big"))


def _progress(text: str) -> None:
    print(f"tryton seed: {text}", file=sys.stderr, flush=True)


def run(config_path: str, db: str, seed_text: str, scale: int) -> None:
    from proteus import Model, Wizard
    from proteus import config as pconfig

    from agentrel.sandbox.environments.tryton import settings

    today = settings.PINNED_DATE
    cfg = pconfig.set_trytond(database=db, user="admin", config_file=config_path)
    rng = rng_for(seed_text)

    from trytond.modules.account.tests.tools import create_chart, create_fiscalyear, get_accounts
    from trytond.modules.account_invoice.tests.tools import (
        create_payment_term,
        set_fiscalyear_invoice_sequences,
    )
    from trytond.modules.company.tests.tools import create_company, get_company
    from trytond.modules.currency.tests.tools import get_currency

    _progress("company, chart of accounts, fiscal year")
    Party = Model.get("party.party")
    company_party = Party(name="Harbor Office Supply")
    company_party.save()
    create_company(party=company_party, currency=get_currency("USD"))
    company = get_company()
    # The seed's past-dated postings are intended: proteus answers Tryton's warnings about them yes.
    cfg.skip_warning = True
    create_chart(company)
    fiscalyear = set_fiscalyear_invoice_sequences(create_fiscalyear(company, today=today))
    fiscalyear.click("create_period")
    accounts = get_accounts(company)
    payment_term = create_payment_term()
    payment_term.save()

    Journal = Model.get("account.journal")
    (cash_journal,) = Journal.find([("type", "=", "cash")])
    PaymentMethod = Model.get("account.invoice.payment.method")
    bank_transfer = PaymentMethod(
        name="Bank transfer", journal=cash_journal,
        credit_account=accounts["cash"], debit_account=accounts["cash"],
    )  # fmt: skip
    bank_transfer.save()

    Category = Model.get("product.category")
    category = Category(name="Office supplies", accounting=True)
    category.account_revenue = accounts["revenue"]
    category.account_expense = accounts["expense"]
    category.save()
    Uom = Model.get("product.uom")
    (unit,) = Uom.find([("name", "=", "Unit")])
    Template = Model.get("product.template")
    products = []
    for name, price in (*GOODS, *SERVICES):
        template = Template(name=name, default_uom=unit, salable=True, list_price=Decimal(price))
        template.type = "service"  # nothing ships: sales invoice on confirmation, no stock moves
        template.account_category = category
        template.save()
        products.append(template.products[0])

    _progress("parties")
    customers = []
    for i in range(120 * scale):
        if i % 3 == 0:
            name = f"{rng.choice(FIRM)} {rng.choice(KIND)} {'LLC' if i % 2 else 'Inc.'}"
        else:
            name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        customers.append(Party(name=name, code=f"C{i + 1:04d}"))
    Party.save(customers)  # one create for all: the per-record cost is Tryton's alone
    suppliers = [
        Party(name=f"{rng.choice(FIRM)} {rng.choice(('Paper', 'Freight', 'Print', 'Furnish'))} Co.",
              code=f"S{i + 1:04d}")
        for i in range(40 * scale)
    ]  # fmt: skip
    Party.save(suppliers)

    Invoice = Model.get("account.invoice")

    def invoice(party: Any, kind: str, day: dt.date, lines: list[tuple[Any, int]]) -> Any:
        inv = Invoice(type=kind, party=party, invoice_date=day, payment_term=payment_term)
        for product, qty in lines:
            line = inv.lines.new()
            if kind == "out":
                line.product = product
                line.unit_price = product.template.list_price
            else:
                line.account = accounts["expense"]
                line.description = product.template.name
                line.unit_price = product.template.list_price * Decimal("0.6")
            line.quantity = qty
        return inv

    def day_in_window() -> dt.date:
        # January: Tryton numbers invoices in date order, and the tasks' posted invoices come later.
        return dt.date(2026, 1, 5) + dt.timedelta(days=rng.randrange(0, 24))

    _progress("customer and supplier invoices")
    invoices, fates = [], []
    for i in range(90 * scale):
        kind = "out" if i % 5 else "in"
        party = rng.choice(customers if kind == "out" else suppliers)
        lines = [(rng.choice(products), rng.randint(1, 6)) for _ in range(rng.randint(1, 3))]
        invoices.append(invoice(party, kind, day_in_window(), lines))
        fates.append(rng.random())
    Invoice.save(invoices)
    Invoice.click([inv for inv, fate in zip(invoices, fates, strict=True) if fate >= 0.25], "post")
    _progress("payments of invoices")
    for inv, fate in zip(invoices, fates, strict=True):
        if fate > 0.75:
            inv.reload()
            pay = Wizard("account.invoice.pay", [inv])
            pay.form.payment_method = bank_transfer
            pay.form.date = inv.invoice_date + dt.timedelta(days=rng.randint(3, 20))
            pay.execute("choice")

    _progress("sales")
    Sale = Model.get("sale.sale")
    sales, fates = [], []
    for _ in range(40 * scale):
        sale = Sale(party=rng.choice(customers), payment_term=payment_term, sale_date=day_in_window())
        sale.invoice_method = "order"
        for _ in range(rng.randint(1, 3)):
            line = sale.lines.new()
            line.product = rng.choice(products)
            line.quantity = rng.randint(1, 8)
        sales.append(sale)
        fates.append(rng.random())
    Sale.save(sales)
    Sale.click([s for s, f in zip(sales, fates, strict=True) if f >= 0.3], "quote")
    # confirmed sales are processed in this process (no queue worker is configured)
    Sale.click([s for s, f in zip(sales, fates, strict=True) if f >= 0.5], "confirm")

    _progress("supplier payments")
    PaymentJournal = Model.get("account.payment.journal")
    payment_journal = PaymentJournal(name="Manual", process_method="manual", currency=company.currency)
    payment_journal.save()

    _progress("complaint types")
    ComplaintType = Model.get("sale.complaint.type")
    IrModel = Model.get("ir.model")
    for name, model in (("Invoice", "account.invoice"), ("Sale", "sale.sale")):
        ctype = ComplaintType(name=name)
        (ctype.origin,) = IrModel.find([("name", "=", model)])
        ctype.save()

    _progress("the back-office clerk")
    make_clerk(db, company)

    from agentrel.sandbox.environments.tryton import fixtures

    _progress("the tasks' records")
    fixtures.make()
    _progress("done")


def make_clerk(db: str, company: Any) -> None:
    """The agent's Tryton user: a back-office clerk in the Account, Sales and Payment groups (no
    administration, no accounting administration, no payment approval)."""
    from proteus import Model
    from trytond.pool import Pool
    from trytond.transaction import Transaction

    with Transaction().start(db, 0, readonly=True):  # ir.model.data is not readable over RPC
        data = Pool().get("ir.model.data")
        group_ids = [
            data.get_id(module, fs_id)
            for module, fs_id in (("account", "group_account"), ("sale", "group_sale"),
                                  ("account_payment", "group_payment"))
        ]  # fmt: skip
    User = Model.get("res.user")
    Group = Model.get("res.group")
    clerk = User(name="Back-office clerk", login="clerk")
    for group_id in group_ids:
        clerk.groups.append(Group(group_id))
    clerk.companies.append(company)
    clerk.company = company
    clerk.save()
