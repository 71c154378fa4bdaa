"""How Tryton's tables roll up into the business records a clerk acts on (the view's diff, grouped):
an invoice with its lines, taxes, payment lines, report revisions and the moves posting and cancelling
it (with their lines and tax lines); a sale with its lines; a complaint with its actions; a party with
its addresses, contact mechanisms, identifiers and company-dependent side tables. A payment's move, a
reconciliation and anything else stand as records of their own."""

from __future__ import annotations

from agentrel.sandbox.environments.contract import RecordLink

PARTY_SIDE_TABLES = (
    "party_address", "party_contact_mechanism", "party_identifier", "party_party-party_category",
    "party_party_account", "party_party_customer_currency", "party_party_lang", "party_party_location",
    "party_party_payment_direct_debit", "party_party_payment_term", "party_party_reception_direct_debit",
    "party_party_sale_method",
)  # fmt: skip

RECORD_LINKS: tuple[RecordLink, ...] = (
    RecordLink("account_invoice_line", "account_invoice", "invoice"),
    RecordLink("account_invoice_tax", "account_invoice", "invoice"),
    RecordLink("account_invoice_payment_mean", "account_invoice", "invoice"),
    RecordLink("account_invoice-account_move_line", "account_invoice", "invoice"),
    RecordLink("account_invoice-additional-account_move", "account_invoice", "invoice"),
    RecordLink("account_invoice_report_revision", "account_invoice", "invoice"),
    RecordLink("account_invoice_line-account_tax", "account_invoice_line", "line"),
    RecordLink("account_move", "account_invoice", "move", via="parent"),
    RecordLink("account_move", "account_invoice", "cancel_move", via="parent"),
    RecordLink("account_move_line", "account_move", "move"),
    RecordLink("account_tax_line", "account_move_line", "move_line"),
    RecordLink("sale_line", "sale_sale", "sale"),
    RecordLink("sale_line-account_tax", "sale_line", "line"),
    RecordLink("sale_complaint_action", "sale_complaint", "complaint"),
    RecordLink("sale_complaint_action-account_invoice_line", "sale_complaint_action", "action"),
    RecordLink("sale_complaint_action-sale_line", "sale_complaint_action", "action"),
    *(RecordLink(t, "party_party", "party") for t in PARTY_SIDE_TABLES),
)
