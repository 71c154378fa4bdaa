"""IT service management tables: people and access, services and CIs, incidents, problems, changes, SLAs."""

from __future__ import annotations

import sqlalchemy as sa

from agentrel.sandbox.environments.enterprise.schema.base import bookkeeping, fk, id_col, metadata, money, ts

Text, Int, Bool, Date = sa.Text, sa.Integer, sa.Boolean, sa.Date

users = sa.Table(
    "users",
    metadata,
    id_col(),
    sa.Column("user_name", Text, nullable=False, unique=True),
    sa.Column("full_name", Text, nullable=False),
    sa.Column("email", Text, nullable=False),
    sa.Column("department", Text, nullable=False),
    sa.Column("title", Text, nullable=False),
    sa.Column("active", Bool, nullable=False),
    fk("manager_id", "users.id"),
    sa.Column("contract_end", Date, nullable=True),
    ts("created_at", nullable=False),
    *bookkeeping(),
)

groups = sa.Table(
    "groups",
    metadata,
    id_col(),
    sa.Column("name", Text, nullable=False, unique=True),
    sa.Column("description", Text, nullable=False),
    fk("manager_id", "users.id"),
    sa.Column("active", Bool, nullable=False),
    *bookkeeping(),
)

group_members = sa.Table(
    "group_members",
    metadata,
    sa.Column("group_id", Int, sa.ForeignKey("groups.id"), primary_key=True),
    sa.Column("user_id", Int, sa.ForeignKey("users.id"), primary_key=True),
    ts("added_at", nullable=False),
)

roles = sa.Table(
    "roles",
    metadata,
    id_col(),
    sa.Column("name", Text, nullable=False, unique=True),
    sa.Column("description", Text, nullable=False),
    sa.Column("privileged", Bool, nullable=False),
)

user_roles = sa.Table(
    "user_roles",
    metadata,
    sa.Column("user_id", Int, sa.ForeignKey("users.id"), primary_key=True),
    sa.Column("role_id", Int, sa.ForeignKey("roles.id"), primary_key=True),
    ts("granted_at", nullable=False),
    fk("granted_by", "users.id"),
)

access_requests = sa.Table(
    "access_requests",
    metadata,
    id_col(),
    sa.Column("number", Text, nullable=False, unique=True),
    fk("user_id", "users.id", nullable=False),
    fk("role_id", "roles.id", nullable=False),
    sa.Column("state", Text, nullable=False),  # requested, approved, rejected, fulfilled
    fk("approved_by", "users.id"),
    ts("requested_at", nullable=False),
    *bookkeeping(),
)

cost_centers = sa.Table(
    "cost_centers",
    metadata,
    id_col(),
    sa.Column("code", Text, nullable=False, unique=True),
    sa.Column("name", Text, nullable=False),
    sa.Column("status", Text, nullable=False),  # open, closed
    fk("owner_id", "users.id"),
)

services = sa.Table(
    "services",
    metadata,
    id_col(),
    sa.Column("name", Text, nullable=False, unique=True),
    fk("owner_group_id", "groups.id"),
    sa.Column("criticality", Text, nullable=False),
    sa.Column("status", Text, nullable=False),
    *bookkeeping(),
)

service_subscriptions = sa.Table(
    "service_subscriptions",
    metadata,
    sa.Column("service_id", Int, sa.ForeignKey("services.id"), primary_key=True),
    sa.Column("user_id", Int, sa.ForeignKey("users.id"), primary_key=True),
    ts("subscribed_at", nullable=False),
)

configuration_items = sa.Table(
    "configuration_items",
    metadata,
    id_col(),
    sa.Column("name", Text, nullable=False),
    sa.Column("asset_tag", Text, nullable=False, unique=True),
    sa.Column("ci_class", Text, nullable=False),
    sa.Column("environment", Text, nullable=False),
    sa.Column("status", Text, nullable=False),  # in_use, retired, written_off, in_stock
    fk("service_id", "services.id"),
    fk("owner_group_id", "groups.id"),
    money("cost"),
    sa.Column("license_year", Int, nullable=True),
    sa.Column("legal_hold", Bool, nullable=False),
    sa.Column("purchased_on", Date, nullable=False),
    *bookkeeping(),
)

ci_relationships = sa.Table(
    "ci_relationships",
    metadata,
    id_col(),
    fk("parent_ci_id", "configuration_items.id", nullable=False),
    fk("child_ci_id", "configuration_items.id", nullable=False),
    sa.Column("rel_type", Text, nullable=False),  # depends_on, backs_up, runs_on
)

problems = sa.Table(
    "problems",
    metadata,
    id_col(),
    sa.Column("number", Text, nullable=False, unique=True),
    sa.Column("short_description", Text, nullable=False),
    sa.Column("state", Text, nullable=False),
    fk("assignment_group_id", "groups.id"),
    ts("opened_at", nullable=False),
    *bookkeeping(),
)

incidents = sa.Table(
    "incidents",
    metadata,
    id_col(),
    sa.Column("number", Text, nullable=False, unique=True),
    sa.Column("short_description", Text, nullable=False),
    sa.Column("description", Text, nullable=False),
    fk("caller_id", "users.id", nullable=False),
    fk("assignment_group_id", "groups.id"),
    fk("assigned_to", "users.id"),
    fk("ci_id", "configuration_items.id"),
    fk("service_id", "services.id"),
    sa.Column("category", Text, nullable=False),
    sa.Column("priority", Int, nullable=False),
    sa.Column("state", Text, nullable=False),  # new, in_progress, on_hold, resolved, closed
    sa.Column("location", Text, nullable=False),
    fk("parent_incident_id", "incidents.id"),
    fk("problem_id", "problems.id"),
    ts("opened_at", nullable=False),
    ts("resolved_at"),
    *bookkeeping(),
)

change_requests = sa.Table(
    "change_requests",
    metadata,
    id_col(),
    sa.Column("number", Text, nullable=False, unique=True),
    sa.Column("short_description", Text, nullable=False),
    sa.Column("type", Text, nullable=False),  # standard, normal, emergency
    sa.Column(
        "state", Text, nullable=False
    ),  # new, assess, authorize, scheduled, implement, closed, cancelled
    sa.Column("cab_required", Bool, nullable=False),
    sa.Column("risk", Text, nullable=False),
    fk("assignment_group_id", "groups.id"),
    fk("requested_by", "users.id", nullable=False),
    fk("ci_id", "configuration_items.id"),
    ts("planned_start"),
    ts("planned_end"),
    *bookkeeping(),
)

cab_approvals = sa.Table(
    "cab_approvals",
    metadata,
    id_col(),
    fk("change_id", "change_requests.id", nullable=False),
    fk("approver_id", "users.id", nullable=False),
    sa.Column("decision", Text, nullable=False),  # approved, rejected
    ts("decided_at", nullable=False),
    sa.Column("comments", Text, nullable=False),
)

sla_definitions = sa.Table(
    "sla_definitions",
    metadata,
    id_col(),
    sa.Column("name", Text, nullable=False, unique=True),
    sa.Column("target_type", Text, nullable=False),  # response, resolution
    sa.Column("tier", Text, nullable=False),  # gold, silver, bronze, standard
    sa.Column("duration_minutes", Int, nullable=False),
    sa.Column("active", Bool, nullable=False),
)

incident_slas = sa.Table(
    "incident_slas",
    metadata,
    id_col(),
    fk("incident_id", "incidents.id", nullable=False),
    fk("sla_id", "sla_definitions.id", nullable=False),
    ts("started_at", nullable=False),
    sa.Column("breached", Bool, nullable=False),
)

kb_articles = sa.Table(
    "kb_articles",
    metadata,
    id_col(),
    sa.Column("number", Text, nullable=False, unique=True),
    sa.Column("title", Text, nullable=False),
    sa.Column("body", Text, nullable=False),
    sa.Column("state", Text, nullable=False),
    fk("author_id", "users.id", nullable=False),
    *bookkeeping(),
)

work_notes = sa.Table(
    "work_notes",
    metadata,
    id_col(),
    sa.Column("record_table", Text, nullable=False),
    sa.Column("record_id", Int, nullable=False),
    fk("author_id", "users.id", nullable=False),
    sa.Column("note", Text, nullable=False),
    ts("created_at", nullable=False),
)

purchase_requests = sa.Table(
    "purchase_requests",
    metadata,
    id_col(),
    sa.Column("number", Text, nullable=False, unique=True),
    fk("cost_center_id", "cost_centers.id", nullable=False),
    fk("requested_by", "users.id", nullable=False),
    sa.Column("item", Text, nullable=False),
    money("amount"),
    sa.Column("state", Text, nullable=False),
    ts("created_at", nullable=False),
)

notifications = sa.Table(
    "notifications",
    metadata,
    id_col(),
    fk("recipient_id", "users.id", nullable=False),
    sa.Column("subject", Text, nullable=False),
    sa.Column("body", Text, nullable=False),
    fk("service_id", "services.id"),
    ts("created_at", nullable=False),
    ts("sent_at"),
)

audit_log = sa.Table(
    "audit_log",
    metadata,
    id_col(),
    sa.Column("actor", Text, nullable=False),
    sa.Column("record_table", Text, nullable=False),
    sa.Column("record_id", Int, nullable=False),
    sa.Column("action", Text, nullable=False),
    sa.Column("detail", Text, nullable=False),
    ts("at", nullable=False),
)
