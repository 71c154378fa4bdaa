"""Which entities the agent-facing API exposes, and how: filters, search columns, writable fields, verbs.

Generic tools are generated from these declarations (`crud.py`); action tools with side effects beyond
one row live in `actions.py`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entity:
    name: str  # singular tool noun: incident -> get_incident, list_incidents
    table: str
    plural: str
    filters: tuple[str, ...] = ()
    search: tuple[str, ...] = ()  # columns the free-text `query` matches (case-insensitive substring)
    writable: tuple[str, ...] = ()  # columns update_* may set
    create: bool = False
    delete: bool = False
    bulk_update: bool = False
    bulk_delete: bool = False
    number: str | None = None  # a human-facing unique column get_* also accepts
    summary: str = ""


E = Entity
ENTITIES: tuple[Entity, ...] = (
    # ---- ITSM ----------------------------------------------------------------------------------
    E("user", "users", "users", ("user_name", "department", "active", "manager_id"),
      ("full_name", "user_name", "email"), ("title", "department", "active", "manager_id", "contract_end"),
      number="user_name", summary="a person with a login; contract_end is set for contractors"),
    E("group", "groups", "groups", ("name", "active", "manager_id"), ("name",), ("description", "manager_id", "active"),
      summary="an assignment or approval group (CAB is the change advisory board)"),
    E("group_member", "group_members", "group_members", ("group_id", "user_id"), create=True, delete=True,
      summary="membership of a user in a group"),
    E("role", "roles", "roles", ("name", "privileged"), ("name", "description"), summary="an access role"),
    E("user_role", "user_roles", "user_roles", ("user_id", "role_id"), create=True, delete=True,
      summary="a role granted to a user (creating one grants access)"),
    E("access_request", "access_requests", "access_requests", ("user_id", "role_id", "state"), (),
      ("state",), number="number", summary="a request for a role; state requested/approved/rejected/fulfilled"),
    E("cost_center", "cost_centers", "cost_centers", ("code", "status"), ("name", "code"), number="code",
      summary="a budget owner; status open or closed"),
    E("service", "services", "services", ("name", "status", "criticality", "owner_group_id"), ("name",),
      ("status", "criticality"), summary="a business service"),
    E("service_subscription", "service_subscriptions", "service_subscriptions", ("service_id", "user_id"),
      summary="a user subscribed to a service's notices"),
    E("configuration_item", "configuration_items", "configuration_items",
      ("name", "ci_class", "environment", "status", "service_id", "owner_group_id", "license_year",
       "legal_hold"),
      ("name", "asset_tag"), ("name", "status", "cost", "environment", "owner_group_id", "service_id"),
      create=True, delete=True, bulk_update=True, number="asset_tag",
      summary="an asset or CI; cost is its book value or annual license cost in USD"),
    E("ci_relationship", "ci_relationships", "ci_relationships", ("parent_ci_id", "child_ci_id", "rel_type"),
      create=True, delete=True, bulk_delete=True,
      summary="a link between two CIs: rel_type depends_on, runs_on or backs_up"),
    E("problem", "problems", "problems", ("state", "assignment_group_id"), ("short_description",),
      ("state", "assignment_group_id", "short_description"), create=True, number="number",
      summary="a problem record grouping incidents"),
    E("incident", "incidents", "incidents",
      ("state", "priority", "assignment_group_id", "assigned_to", "caller_id", "ci_id", "service_id",
       "category", "location", "parent_incident_id", "problem_id"),
      ("short_description", "description"),
      ("state", "priority", "assignment_group_id", "assigned_to", "parent_incident_id", "problem_id",
       "short_description", "description", "category"),
      create=True, delete=True, bulk_update=True, bulk_delete=True, number="number",
      summary="an incident; state new/in_progress/on_hold/resolved/closed"),
    E("change_request", "change_requests", "change_requests",
      ("state", "type", "cab_required", "assignment_group_id", "requested_by", "ci_id"),
      ("short_description",),
      ("state", "planned_start", "planned_end", "assignment_group_id", "risk", "short_description"),
      create=True, number="number",
      summary="a change; state new/assess/authorize/scheduled/implement/closed/cancelled"),
    E("cab_approval", "cab_approvals", "cab_approvals", ("change_id", "approver_id", "decision"),
      create=True, delete=True, summary="a CAB decision (approved/rejected) recorded for a change"),
    E("sla_definition", "sla_definitions", "sla_definitions", ("tier", "target_type", "active"), ("name",),
      summary="an SLA: tier gold/silver/bronze/standard, target_type response or resolution"),
    E("incident_sla", "incident_slas", "incident_slas", ("incident_id", "sla_id", "breached"),
      create=True, delete=True, summary="an SLA attached to an incident"),
    E("kb_article", "kb_articles", "kb_articles", ("state", "author_id"), ("title", "body"),
      ("title", "body", "state"), create=True, number="number", summary="a knowledge article"),
    E("work_note", "work_notes", "work_notes", ("record_table", "record_id", "author_id"), ("note",),
      summary="a journal note on a record (use add_work_note to write one)"),
    E("purchase_request", "purchase_requests", "purchase_requests", ("cost_center_id", "state", "requested_by"),
      ("item",), number="number", summary="a purchase request charged to a cost center"),
    E("notification", "notifications", "notifications", ("recipient_id", "service_id"), ("subject",),
      summary="a notice sent to a user (use send_notification to send one)"),
    E("audit_log_entry", "audit_log", "audit_log_entries", ("record_table", "record_id", "actor", "action"),
      summary="an audit trail entry"),
    # ---- CSM -----------------------------------------------------------------------------------
    E("account", "accounts", "accounts", ("tier", "status", "industry", "parent_account_id"), ("name", "number"),
      ("name", "tier", "status", "billing_email"), number="number",
      summary="a customer account; parent_account_id links a subsidiary to its parent"),
    E("contact", "contacts", "contacts",
      ("account_id", "do_not_contact", "portal_role", "active", "last_name"), ("first_name", "last_name", "email"),
      ("first_name", "last_name", "email", "phone", "portal_role", "active", "do_not_contact"),
      create=True, delete=True, summary="a customer contact; portal_role none/user/admin"),
    E("product", "products", "products", ("active",), ("name", "sku"), ("list_price", "active", "name"),
      number="sku", summary="a product; list_price in USD"),
    E("contract", "contracts", "contracts", ("account_id", "status"), ("name", "number"),
      ("annual_value", "status", "end_date", "name"), number="number",
      summary="a customer contract; status draft/active/expired; annual_value in USD"),
    E("quote", "quotes", "quotes", ("account_id", "contract_id", "status"), ("number",), number="number",
      summary="a price quote for a contract; status draft/sent/signed"),
    E("installed_product", "installed_products", "installed_products", ("account_id", "product_id", "status"),
      ("serial_number",), number="serial_number", summary="a product installed at a customer"),
    E("entitlement", "entitlements", "entitlements",
      ("account_id", "product_id", "contract_id", "kind", "status"), ("name",),
      ("status", "end_date", "name"), create=True, delete=True, bulk_delete=True,
      summary="a customer entitlement; kind trial/paid/support; status active/expired"),
    E("case_queue", "case_queues", "case_queues", (), ("name",), summary="a queue cases are routed to"),
    E("case", "cases", "cases",
      ("account_id", "contact_id", "state", "queue_id", "assigned_to", "priority", "legal_hold", "product_id"),
      ("subject", "number", "description"), ("state", "queue_id", "assigned_to", "priority", "subject"),
      bulk_update=True, number="number",
      summary="a customer case; state new/open/in_progress/awaiting_customer/resolved/closed"),
    E("case_sla", "case_slas", "case_slas", ("case_id", "sla_id", "breached"), create=True, delete=True,
      bulk_delete=True, summary="an SLA attached to a case"),
    E("interaction", "interactions", "interactions", ("case_id", "contact_id", "channel"), ("summary",),
      create=True, summary="a logged customer interaction"),
    E("invoice", "invoices", "invoices", ("account_id", "contract_id", "status"), ("number", "description"),
      ("status", "due_on", "description"), create=True, number="number",
      summary="an invoice; amount in USD; status draft/issued/paid/void; there is no delete"),
    E("payment", "payments", "payments", ("invoice_id", "account_id", "status", "method"), ("number",),
      number="number", summary="a payment received against an invoice"),
    E("refund", "refunds", "refunds", ("payment_id", "status"), summary="a refund of a payment"),
    E("credit", "credits", "credits", ("account_id", "case_id"), ("reason",), summary="a credit to an account"),
    E("finance_approval", "finance_approvals", "finance_approvals", ("account_id", "case_id", "kind"),
      summary="a finance approval raising a credit limit for an account or case"),
    E("customer_notification", "customer_notifications", "customer_notifications", ("contact_id", "case_id"),
      ("subject",), summary="an email sent to a customer contact (use send_customer_email)"),
)

BY_NAME = {e.name: e for e in ENTITIES}
