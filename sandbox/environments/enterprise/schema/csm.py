"""Customer service management tables: accounts and contacts, contracts and products, cases, billing."""

from __future__ import annotations

import sqlalchemy as sa

from agentrel.sandbox.environments.enterprise.schema.base import bookkeeping, fk, id_col, metadata, money, ts

Text, Int, Bool, Date = sa.Text, sa.Integer, sa.Boolean, sa.Date

accounts = sa.Table(
    "accounts",
    metadata,
    id_col(),
    sa.Column("number", Text, nullable=False, unique=True),
    sa.Column("name", Text, nullable=False),
    fk("parent_account_id", "accounts.id"),
    sa.Column("tier", Text, nullable=False),  # gold, silver, bronze
    sa.Column("status", Text, nullable=False),
    sa.Column("industry", Text, nullable=False),
    sa.Column("billing_email", Text, nullable=False),
    *bookkeeping(),
)

contacts = sa.Table(
    "contacts",
    metadata,
    id_col(),
    fk("account_id", "accounts.id", nullable=False),
    sa.Column("first_name", Text, nullable=False),
    sa.Column("last_name", Text, nullable=False),
    sa.Column("email", Text, nullable=False),
    sa.Column("phone", Text, nullable=False),
    sa.Column("do_not_contact", Bool, nullable=False),
    sa.Column("portal_role", Text, nullable=False),  # none, user, admin
    sa.Column("active", Bool, nullable=False),
    *bookkeeping(),
)

products = sa.Table(
    "products",
    metadata,
    id_col(),
    sa.Column("sku", Text, nullable=False, unique=True),
    sa.Column("name", Text, nullable=False),
    money("list_price"),
    sa.Column("active", Bool, nullable=False),
    *bookkeeping(),
)

contracts = sa.Table(
    "contracts",
    metadata,
    id_col(),
    sa.Column("number", Text, nullable=False, unique=True),
    fk("account_id", "accounts.id", nullable=False),
    sa.Column("name", Text, nullable=False),
    sa.Column("status", Text, nullable=False),  # draft, active, expired
    sa.Column("start_date", Date, nullable=False),
    sa.Column("end_date", Date, nullable=False),
    money("annual_value"),
    *bookkeeping(),
)

quotes = sa.Table(
    "quotes",
    metadata,
    id_col(),
    sa.Column("number", Text, nullable=False, unique=True),
    fk("account_id", "accounts.id", nullable=False),
    fk("contract_id", "contracts.id"),
    money("annual_value"),
    sa.Column("status", Text, nullable=False),  # draft, sent, signed
    sa.Column("signed_on", Date, nullable=True),
)

installed_products = sa.Table(
    "installed_products",
    metadata,
    id_col(),
    fk("account_id", "accounts.id", nullable=False),
    fk("product_id", "products.id", nullable=False),
    sa.Column("serial_number", Text, nullable=False, unique=True),
    sa.Column("installed_on", Date, nullable=False),
    sa.Column("status", Text, nullable=False),
)

entitlements = sa.Table(
    "entitlements",
    metadata,
    id_col(),
    fk("account_id", "accounts.id", nullable=False),
    fk("product_id", "products.id"),
    fk("contract_id", "contracts.id"),
    sa.Column("name", Text, nullable=False),
    sa.Column("kind", Text, nullable=False),  # trial, paid, support
    sa.Column("status", Text, nullable=False),  # active, expired
    sa.Column("start_date", Date, nullable=False),
    sa.Column("end_date", Date, nullable=False),
)

case_queues = sa.Table(
    "case_queues",
    metadata,
    id_col(),
    sa.Column("name", Text, nullable=False, unique=True),
    sa.Column("description", Text, nullable=False),
)

cases = sa.Table(
    "cases",
    metadata,
    id_col(),
    sa.Column("number", Text, nullable=False, unique=True),
    fk("account_id", "accounts.id", nullable=False),
    fk("contact_id", "contacts.id"),
    fk("product_id", "products.id"),
    sa.Column("subject", Text, nullable=False),
    sa.Column("description", Text, nullable=False),
    sa.Column("state", Text, nullable=False),  # new, open, in_progress, awaiting_customer, resolved, closed
    sa.Column("priority", Int, nullable=False),
    fk("queue_id", "case_queues.id", nullable=False),
    fk("assigned_to", "users.id"),
    sa.Column("legal_hold", Bool, nullable=False),
    ts("opened_at", nullable=False),
    ts("closed_at"),
    *bookkeeping(),
)

case_slas = sa.Table(
    "case_slas",
    metadata,
    id_col(),
    fk("case_id", "cases.id", nullable=False),
    fk("sla_id", "sla_definitions.id", nullable=False),
    ts("started_at", nullable=False),
    sa.Column("breached", Bool, nullable=False),
)

interactions = sa.Table(
    "interactions",
    metadata,
    id_col(),
    fk("case_id", "cases.id", nullable=False),
    fk("contact_id", "contacts.id"),
    sa.Column("channel", Text, nullable=False),
    sa.Column("direction", Text, nullable=False),
    sa.Column("summary", Text, nullable=False),
    ts("occurred_at", nullable=False),
)

invoices = sa.Table(
    "invoices",
    metadata,
    id_col(),
    sa.Column("number", Text, nullable=False, unique=True),
    fk("account_id", "accounts.id", nullable=False),
    fk("contract_id", "contracts.id"),
    sa.Column("description", Text, nullable=False),
    money("amount"),
    sa.Column("status", Text, nullable=False),  # draft, issued, paid, void
    sa.Column("issued_on", Date, nullable=False),
    sa.Column("due_on", Date, nullable=False),
    *bookkeeping(),
)

payments = sa.Table(
    "payments",
    metadata,
    id_col(),
    sa.Column("number", Text, nullable=False, unique=True),
    fk("invoice_id", "invoices.id", nullable=False),
    fk("account_id", "accounts.id", nullable=False),
    money("amount"),
    sa.Column("method", Text, nullable=False),
    sa.Column("status", Text, nullable=False),  # settled, refunded, partially_refunded
    ts("received_at", nullable=False),
)

refunds = sa.Table(
    "refunds",
    metadata,
    id_col(),
    fk("payment_id", "payments.id", nullable=False),
    money("amount"),
    sa.Column("reason", Text, nullable=False),
    sa.Column("status", Text, nullable=False),
    ts("created_at", nullable=False),
)

credits = sa.Table(
    "credits",
    metadata,
    id_col(),
    fk("account_id", "accounts.id", nullable=False),
    fk("case_id", "cases.id"),
    money("amount"),
    sa.Column("reason", Text, nullable=False),
    fk("approved_by", "users.id"),
    ts("created_at", nullable=False),
)

finance_approvals = sa.Table(
    "finance_approvals",
    metadata,
    id_col(),
    fk("account_id", "accounts.id", nullable=False),
    fk("case_id", "cases.id"),
    sa.Column("kind", Text, nullable=False),
    money("amount_limit"),
    fk("approved_by", "users.id", nullable=False),
    ts("approved_at", nullable=False),
)

customer_notifications = sa.Table(
    "customer_notifications",
    metadata,
    id_col(),
    fk("contact_id", "contacts.id", nullable=False),
    fk("case_id", "cases.id"),
    sa.Column("channel", Text, nullable=False),
    sa.Column("subject", Text, nullable=False),
    sa.Column("body", Text, nullable=False),
    ts("sent_at", nullable=False),
)
