"""Deterministic seed data: a realistic, internally consistent enterprise, the same bytes on any machine.

The generator draws from `random.Random(f"{seed}|{scale}")` (string seeding is SHA-512 based and stable
across platforms and Python versions) and emits values already in the dump's canonical forms, so the
seed digest can be computed from the generated rows alone and checked against the loaded database.
Money is generated in integer cents; no float ever reaches a value.
"""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from typing import Any

from dsl.state import State, TableInfo
from sandbox.schema import table_infos

GENERATOR_VERSION = "2"
DEFAULT_SEED = "agentrel"
SERVICE_ACCOUNT = "svc.agentrel"  # user id 1, the identity every agent acts as
NOW = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)  # the sandbox's "today": fixed, so the data never ages

FIRST = (
    "Alex Ana Ben Carla Chen Dana Devi Elif Emma Farid Grace Hana Ivan Jonas Kai Lara Leo Maya Mia "
    "Nora Omar Priya Quinn Rafael Sara Sofia Tariq Uma Victor Wei Yara Zoe Noah Liam Ava Ethan "
    "Ines Jamal"
).split()
LAST = (
    "Abbott Baker Chen Diaz Evans Fischer Garcia Haddad Ito Jensen Kowalski Lopez Moreau Nakamura "
    "Novak Okafor Patel Quist Rossi Schmidt Silva Tanaka Urban Varga Weber Xu Yilmaz Zimmer Brooks "
    "Murphy"
).split()
DEPARTMENTS = (
    "IT Operations",
    "Service Desk",
    "Network",
    "Security",
    "Finance",
    "HR",
    "Sales",
    "Support",
    "Engineering",
    "Facilities",
)
COMPANY_WORDS = (
    "Northwind Contoso Fabrikam Globex Initech Umbrella Stark Wayne Acme Hooli Vandelay Tyrell "
    "Cyberdyne Soylent Wonka Oscorp Massive Dynamic Aperture Gringotts Monarch Pied Piper Blue Sun "
    "Vertex Summit Harbor Cascade Pioneer Evergreen Atlas Beacon"
).split()
COMPANY_SUFFIX = (
    "Ltd",
    "Inc",
    "GmbH",
    "Group",
    "Holdings",
    "Labs",
    "Systems",
    "Logistics",
    "Health",
    "Retail",
)
INDUSTRIES = ("Retail", "Healthcare", "Finance", "Manufacturing", "Logistics", "Public Sector", "Energy")
SITES = ("Denver", "Austin", "Boston", "Chicago", "Dublin", "Berlin", "Singapore", "Toronto")
CI_CLASSES = ("server", "database", "application", "network_device", "laptop", "storage", "license")
INC_TOPICS = (
    "VPN connection drops",
    "Email not syncing",
    "Printer offline",
    "Password reset",
    "Disk space low",
    "Application timeout",
    "Slow network",
    "Login failure",
    "Certificate expiring",
    "Backup job failed",
    "High CPU on host",
    "Payroll report error",
    "Wi-Fi unstable",
    "Laptop will not boot",
)
CASE_TOPICS = (
    "Billing question",
    "Product defect",
    "Installation help",
    "License activation",
    "Data export",
    "Feature request",
    "Outage report",
    "Refund request",
    "Portal access",
    "Shipping delay",
)


def _ts(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _d(day: date) -> str:
    return day.isoformat()


def _money(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


class _Gen:
    def __init__(self, seed: str, scale: int) -> None:
        self.r = random.Random(f"{seed}|{scale}|{GENERATOR_VERSION}")
        self.scale = scale
        self.rows: dict[str, list[dict[str, Any]]] = {name: [] for name in table_infos()}

    # helpers -----------------------------------------------------------------------------------------
    def n(self, base: int) -> int:
        return base * self.scale

    def past(self, max_days: int, min_days: int = 0) -> datetime:
        minutes = self.r.randrange(min_days * 1440, max_days * 1440 + 1)
        return NOW - timedelta(minutes=minutes)

    def add(self, table: str, **row: Any) -> int:
        rows = self.rows[table]
        if "id" in table_infos()[table].columns:
            row.setdefault("id", len(rows) + 1)
        rows.append(row)
        return int(row.get("id", len(rows)))

    def pick(self, table: str, **where: Any) -> dict[str, Any]:
        rows = (
            [r for r in self.rows[table] if all(r[k] == v for k, v in where.items())]
            if where
            else self.rows[table]
        )
        return self.r.choice(rows)

    def ids(self, table: str) -> list[int]:
        return [r["id"] for r in self.rows[table]]

    # vertical: people and access ---------------------------------------------------------------------
    def people(self) -> None:
        # User 1 is the account agents act as: its id is fixed so tasks and scripts can rely on it.
        self.add(
            "users",
            user_name=SERVICE_ACCOUNT,
            full_name="AgentRel Service Agent",
            email=f"{SERVICE_ACCOUNT}@corp.example",
            department="Service Desk",
            title="Service Agent",
            active=True,
            manager_id=None,
            contract_end=None,
            created_at=_ts(NOW - timedelta(days=400)),
            updated_at=_ts(NOW - timedelta(days=400)),
            sys_mod_count=0,
        )
        seen: set[str] = {SERVICE_ACCOUNT}
        for i in range(1, self.n(400)):
            first, last = self.r.choice(FIRST), self.r.choice(LAST)
            handle = f"{first}.{last}".lower()
            while handle in seen:
                handle = f"{first}.{last}{self.r.randrange(2, 99)}".lower()
            seen.add(handle)
            created = self.past(1500, 200)
            contract_end = (
                _d((NOW - timedelta(days=self.r.randrange(1, 200))).date())
                if self.r.random() < 0.05
                else None
            )
            self.add(
                "users",
                user_name=handle,
                full_name=f"{first} {last}",
                email=f"{handle}@corp.example",
                department=self.r.choice(DEPARTMENTS),
                title=self.r.choice(
                    ("Engineer", "Analyst", "Manager", "Specialist", "Administrator", "Agent")
                ),
                active=self.r.random() > 0.06,
                manager_id=self.r.randrange(1, i + 1) if i > 10 else None,
                contract_end=contract_end,
                created_at=_ts(created),
                updated_at=_ts(created),
                sys_mod_count=0,
            )
        users = self.ids("users")
        group_names = [f"{d} {s}" for d in DEPARTMENTS for s in ("L1", "L2")] + [
            "CAB",
            "Key Accounts",
            "Database Admins",
            "Change Management",
            "Major Incident Team",
        ]
        for name in group_names:
            self.add(
                "groups",
                name=name,
                description=f"{name} team",
                manager_id=self.r.choice(users),
                active=True,
                updated_at=_ts(self.past(400, 100)),
                sys_mod_count=0,
            )
        pairs: set[tuple[int, int]] = set()
        while len(pairs) < self.n(800):
            pairs.add((self.r.choice(self.ids("groups")), self.r.choice(users)))
        for g, u in sorted(pairs):
            self.add("group_members", group_id=g, user_id=u, added_at=_ts(self.past(900, 30)))
        role_names = (
            "itil",
            "itil_admin",
            "change_manager",
            "cab_member",
            "asset_manager",
            "csm_agent",
            "csm_manager",
            "billing_admin",
            "refund_approver",
            "knowledge_author",
            "prod-db-read",
            "prod-db-admin",
            "security_admin",
            "report_viewer",
            "portal_admin",
        )
        for name in role_names:
            self.add(
                "roles",
                name=name,
                description=f"Grants {name.replace('_', ' ')} privileges",
                privileged=name
                in {
                    "itil_admin",
                    "prod-db-admin",
                    "security_admin",
                    "prod-db-read",
                    "refund_approver",
                    "billing_admin",
                },
            )
        grants: set[tuple[int, int]] = set()
        while len(grants) < self.n(600):
            grants.add((self.r.choice(users), self.r.choice(self.ids("roles"))))
        for u, role in sorted(grants):
            self.add(
                "user_roles",
                user_id=u,
                role_id=role,
                granted_at=_ts(self.past(900, 10)),
                granted_by=self.r.choice(users),
            )
        for i in range(self.n(120)):
            state = self.r.choice(("fulfilled", "fulfilled", "rejected", "requested", "approved"))
            self.add(
                "access_requests",
                number=f"RITM{1000100 + i:07d}",
                user_id=self.r.choice(users),
                role_id=self.r.choice(self.ids("roles")),
                state=state,
                approved_by=self.r.choice(users) if state in ("approved", "fulfilled") else None,
                requested_at=_ts(self.past(300, 1)),
                updated_at=_ts(self.past(1)),
                sys_mod_count=0,
            )
        for i in range(60):
            self.add(
                "cost_centers",
                code=f"CC-{100 + i * 7}",
                name=f"{self.r.choice(DEPARTMENTS)} {self.r.choice(SITES)}",
                status="closed" if self.r.random() < 0.15 else "open",
                owner_id=self.r.choice(users),
            )

    # vertical: ITSM -----------------------------------------------------------------------------------
    def itsm(self) -> None:
        users, groups = self.ids("users"), self.ids("groups")
        base_services = (
            "Payroll",
            "Email",
            "VPN",
            "CRM",
            "ERP",
            "HR Portal",
            "Wiki",
            "File Share",
            "Billing",
            "Data Warehouse",
            "Service Portal",
            "Identity",
            "Telephony",
            "Backup",
            "Monitoring",
        )
        names = (
            list(base_services)
            + [f"{s}-Sandbox" for s in base_services[:6]]
            + [f"{s} Reporting" for s in base_services[:8]]
        )
        for name in names:
            self.add(
                "services",
                name=name,
                owner_group_id=self.r.choice(groups),
                criticality=self.r.choice(("low", "medium", "high", "critical")),
                status="operational",
                updated_at=_ts(self.past(200, 10)),
                sys_mod_count=0,
            )
        subs: set[tuple[int, int]] = set()
        while len(subs) < self.n(800):
            subs.add((self.r.choice(self.ids("services")), self.r.choice(users)))
        for s, u in sorted(subs):
            self.add("service_subscriptions", service_id=s, user_id=u, subscribed_at=_ts(self.past(700, 5)))
        for i in range(self.n(1500)):
            cls = self.r.choice(CI_CLASSES)
            site = self.r.choice(SITES).lower()
            name = f"{'srv' if cls == 'server' else cls[:3]}-{site[:3]}-{i % 97 + 1}"
            retired = self.r.random() < 0.12
            self.add(
                "configuration_items",
                name=name,
                asset_tag=f"AT-{200000 + i}",
                ci_class=cls,
                environment=self.r.choice(("production", "production", "staging", "development")),
                status="retired" if retired else self.r.choice(("in_use", "in_use", "in_stock")),
                service_id=self.r.choice(self.ids("services")),
                owner_group_id=self.r.choice(groups),
                cost=_money(self.r.randrange(20_000, 4_000_000)),
                license_year=self.r.choice((2024, 2025, 2026)) if cls == "license" else None,
                legal_hold=retired and self.r.random() < 0.1,
                purchased_on=_d((NOW - timedelta(days=self.r.randrange(30, 2000))).date()),
                updated_at=_ts(self.past(300, 1)),
                sys_mod_count=self.r.randrange(0, 5),
            )
        cis = self.ids("configuration_items")
        for _ in range(self.n(1500)):
            a, b = self.r.sample(cis, 2)
            self.add(
                "ci_relationships",
                parent_ci_id=a,
                child_ci_id=b,
                rel_type=self.r.choice(("depends_on", "depends_on", "runs_on", "backs_up")),
            )
        for i in range(self.n(300)):
            self.add(
                "problems",
                number=f"PRB{40000 + i:07d}",
                short_description=self.r.choice(INC_TOPICS),
                state=self.r.choice(("new", "assess", "root_cause_analysis", "resolved", "closed")),
                assignment_group_id=self.r.choice(groups),
                opened_at=_ts(self.past(400, 5)),
                updated_at=_ts(self.past(5)),
                sys_mod_count=self.r.randrange(0, 9),
            )
        for i in range(self.n(2500)):
            opened = self.past(365)
            state = self.r.choice(("new", "in_progress", "on_hold", "resolved", "closed", "closed"))
            resolved = (
                opened + timedelta(minutes=self.r.randrange(10, 5000))
                if state in ("resolved", "closed")
                else None
            )
            topic = self.r.choice(INC_TOPICS)
            self.add(
                "incidents",
                number=f"INC{1000 + i:07d}",
                short_description=topic,
                description=f"{topic} reported by user at {self.r.choice(SITES)}.",
                caller_id=self.r.choice(users),
                assignment_group_id=self.r.choice(groups),
                assigned_to=self.r.choice(users) if state != "new" else None,
                ci_id=self.r.choice(cis) if self.r.random() < 0.7 else None,
                service_id=self.r.choice(self.ids("services")),
                category=self.r.choice(("network", "software", "hardware", "access", "database")),
                priority=self.r.randrange(1, 5),
                state=state,
                location=self.r.choice(SITES),
                parent_incident_id=None,
                problem_id=self.r.choice(self.ids("problems")) if self.r.random() < 0.1 else None,
                opened_at=_ts(opened),
                resolved_at=_ts(resolved) if resolved else None,
                updated_at=_ts(resolved or opened),
                sys_mod_count=self.r.randrange(0, 12),
            )
        for i in range(self.n(800)):
            kind = self.r.choice(("standard", "normal", "normal", "emergency"))
            state = self.r.choice(
                ("new", "assess", "authorize", "scheduled", "implement", "closed", "closed")
            )
            start = NOW + timedelta(days=self.r.randrange(-200, 60), hours=self.r.randrange(0, 24))
            self.add(
                "change_requests",
                number=f"CHG{3000 + i:07d}",
                short_description=f"{self.r.choice(('Patch', 'Upgrade', 'Reconfigure', 'Migrate'))} "
                f"{self.r.choice(names)}",
                type=kind,
                state=state,
                cab_required=kind == "normal",
                risk=self.r.choice(("low", "moderate", "high")),
                assignment_group_id=self.r.choice(groups),
                requested_by=self.r.choice(users),
                ci_id=self.r.choice(cis),
                planned_start=_ts(start),
                planned_end=_ts(start + timedelta(hours=2)),
                updated_at=_ts(self.past(30)),
                sys_mod_count=self.r.randrange(0, 6),
            )
        cab = [
            r["user_id"]
            for r in self.rows["group_members"]
            if r["group_id"] == group_names_index(self, "CAB")
        ]
        for ch in self.rows["change_requests"]:
            if ch["cab_required"] and ch["state"] in ("scheduled", "implement", "closed"):
                self.add(
                    "cab_approvals",
                    change_id=ch["id"],
                    approver_id=self.r.choice(cab or users),
                    decision="approved",
                    decided_at=_ts(self.past(200, 1)),
                    comments="Approved at CAB",
                )
        tiers = ("gold", "silver", "bronze", "standard")
        for tier in tiers:
            for target, minutes in (("response", 60), ("resolution", 480)):
                mult = tiers.index(tier) + 1
                self.add(
                    "sla_definitions",
                    name=f"{tier.title()} {target}",
                    target_type=target,
                    tier=tier,
                    duration_minutes=minutes * mult,
                    active=True,
                )
        for inc in self.rows["incidents"]:
            sla = self.r.choice([s for s in self.rows["sla_definitions"] if s["target_type"] == "resolution"])
            self.add(
                "incident_slas",
                incident_id=inc["id"],
                sla_id=sla["id"],
                started_at=inc["opened_at"],
                breached=self.r.random() < 0.1,
            )
        for i in range(self.n(300)):
            self.add(
                "kb_articles",
                number=f"KB{10000 + i:07d}",
                title=f"How to fix: {self.r.choice(INC_TOPICS)}",
                body="Steps: check the service status, then restart the client.",
                state=self.r.choice(("published", "draft", "retired")),
                author_id=self.r.choice(users),
                updated_at=_ts(self.past(300)),
                sys_mod_count=0,
            )
        for _ in range(self.n(600)):
            inc = self.pick("incidents")
            self.add(
                "work_notes",
                record_table="incidents",
                record_id=inc["id"],
                author_id=self.r.choice(users),
                note="Investigating; user contacted.",
                created_at=_ts(self.past(200)),
            )
        for i in range(self.n(200)):
            self.add(
                "purchase_requests",
                number=f"PR{5000 + i:07d}",
                cost_center_id=self.pick("cost_centers", status="open")["id"],
                requested_by=self.r.choice(users),
                item=self.r.choice(("Laptop", "Monitor", "Docking station", "License", "Headset")),
                amount=_money(self.r.randrange(5_000, 500_000)),
                state=self.r.choice(("submitted", "approved", "ordered")),
                created_at=_ts(self.past(200)),
            )
        for _ in range(self.n(400)):
            self.add(
                "notifications",
                recipient_id=self.r.choice(users),
                subject="Service notice",
                body="Scheduled maintenance tonight.",
                service_id=self.r.choice(self.ids("services")),
                created_at=_ts(self.past(100, 1)),
                sent_at=_ts(self.past(1)),
            )
        for _ in range(self.n(1000)):
            inc = self.pick("incidents")
            self.add(
                "audit_log",
                actor=self.r.choice(self.rows["users"])["user_name"],
                record_table="incidents",
                record_id=inc["id"],
                action=self.r.choice(("update", "assign", "comment")),
                detail="field changed",
                at=_ts(self.past(365)),
            )

    # vertical: CSM -------------------------------------------------------------------------------------
    def csm(self) -> None:
        users = self.ids("users")
        names: list[str] = []
        for i in range(self.n(300)):
            name = f"{self.r.choice(COMPANY_WORDS)} {self.r.choice(COMPANY_SUFFIX)}"
            if name in names or self.r.random() < 0.08:  # near twins: subsidiaries and regional copies
                name = f"{name} {self.r.choice(('EMEA', 'Americas', 'APAC', 'Holdings', 'Services'))} {i}"
            names.append(name)
            parent = self.r.randrange(1, i + 1) if i > 20 and self.r.random() < 0.1 else None
            self.add(
                "accounts",
                number=f"ACC{100000 + i:07d}",
                name=name,
                parent_account_id=parent,
                tier=self.r.choice(("gold", "silver", "bronze", "bronze")),
                status="active" if self.r.random() > 0.05 else "inactive",
                industry=self.r.choice(INDUSTRIES),
                billing_email=f"billing{i}@customer.example",
                updated_at=_ts(self.past(300)),
                sys_mod_count=0,
            )
        accounts = self.ids("accounts")
        for acc in accounts:
            for _ in range(self.r.randrange(2, 7)):
                first, last = self.r.choice(FIRST), self.r.choice(LAST)
                self.add(
                    "contacts",
                    account_id=acc,
                    first_name=first,
                    last_name=last,
                    email=f"{first}.{last}.{self.r.randrange(100, 999)}@customer.example".lower(),
                    phone=f"+1-555-{self.r.randrange(1000, 9999)}",
                    do_not_contact=self.r.random() < 0.05,
                    portal_role=self.r.choice(("none", "user", "user", "admin")),
                    active=True,
                    updated_at=_ts(self.past(300)),
                    sys_mod_count=0,
                )
        for i in range(80):
            self.add(
                "products",
                sku=f"SKU-{7000 + i}",
                name=f"{self.r.choice(('Cloud', 'Edge', 'Core', 'Pro'))} "
                f"{self.r.choice(('Router', 'Suite', 'Analytics', 'Storage', 'Gateway'))} {i % 9 + 1}",
                list_price=_money(self.r.randrange(9_900, 2_500_000)),
                active=self.r.random() > 0.1,
                updated_at=_ts(self.past(300)),
                sys_mod_count=0,
            )
        products = self.ids("products")
        for i in range(self.n(500)):
            start = (NOW - timedelta(days=self.r.randrange(0, 900))).date()
            end = start + timedelta(days=365 * self.r.randrange(1, 4))
            status = "expired" if end < NOW.date() else self.r.choice(("active", "active", "draft"))
            self.add(
                "contracts",
                number=f"CNT{20000 + i:07d}",
                account_id=self.r.choice(accounts),
                name=f"{self.r.choice(('Support', 'Subscription', 'Maintenance'))} {start.year}",
                status=status,
                start_date=_d(start),
                end_date=_d(end),
                annual_value=_money(self.r.randrange(500_000, 50_000_000)),
                updated_at=_ts(self.past(300)),
                sys_mod_count=0,
            )
        for i in range(self.n(150)):
            c = self.pick("contracts")
            status = self.r.choice(("draft", "sent", "signed"))
            self.add(
                "quotes",
                number=f"Q{60000 + i:07d}",
                account_id=c["account_id"],
                contract_id=c["id"],
                annual_value=_money(self.r.randrange(500_000, 50_000_000)),
                status=status,
                signed_on=_d((NOW - timedelta(days=self.r.randrange(1, 90))).date())
                if status == "signed"
                else None,
            )
        for i in range(self.n(800)):
            self.add(
                "installed_products",
                account_id=self.r.choice(accounts),
                product_id=self.r.choice(products),
                serial_number=f"SN{900000 + i}",
                installed_on=_d((NOW - timedelta(days=self.r.randrange(1, 1500))).date()),
                status="installed",
            )
        for _ in range(self.n(900)):
            kind = self.r.choice(("trial", "paid", "paid", "support"))
            start = (NOW - timedelta(days=self.r.randrange(0, 700))).date()
            end = start + timedelta(days=30 if kind == "trial" else 365)
            self.add(
                "entitlements",
                account_id=self.r.choice(accounts),
                product_id=self.r.choice(products),
                contract_id=self.pick("contracts")["id"] if kind != "trial" else None,
                name=f"{kind.title()} entitlement",
                kind=kind,
                status="expired" if end < NOW.date() else "active",
                start_date=_d(start),
                end_date=_d(end),
            )
        for name in (
            "General Support",
            "Key Accounts",
            "Billing",
            "Technical Tier 2",
            "Escalations",
            "Returns",
            "Onboarding",
            "Renewals",
            "Portal Support",
            "Field Service",
        ):
            self.add("case_queues", name=name, description=f"{name} queue")
        queues = self.ids("case_queues")
        contacts_by_account: dict[int, list[int]] = {}
        for c in self.rows["contacts"]:
            contacts_by_account.setdefault(c["account_id"], []).append(c["id"])
        for i in range(self.n(1500)):
            acc = self.r.choice(accounts)
            opened = self.past(300)
            state = self.r.choice(("new", "open", "in_progress", "awaiting_customer", "resolved", "closed"))
            self.add(
                "cases",
                number=f"CS{70000 + i:07d}",
                account_id=acc,
                contact_id=self.r.choice(contacts_by_account[acc]),
                product_id=self.r.choice(products),
                subject=self.r.choice(CASE_TOPICS),
                description="Customer reported an issue.",
                state=state,
                priority=self.r.randrange(1, 5),
                queue_id=self.r.choice(queues),
                assigned_to=self.r.choice(users) if state != "new" else None,
                legal_hold=self.r.random() < 0.02,
                opened_at=_ts(opened),
                closed_at=_ts(opened + timedelta(days=3)) if state == "closed" else None,
                updated_at=_ts(opened),
                sys_mod_count=self.r.randrange(0, 8),
            )
        slas = self.rows["sla_definitions"]
        for case in self.rows["cases"]:
            tier = self.rows["accounts"][case["account_id"] - 1]["tier"]
            for sla in slas:
                if sla["tier"] == tier:
                    self.add(
                        "case_slas",
                        case_id=case["id"],
                        sla_id=sla["id"],
                        started_at=case["opened_at"],
                        breached=self.r.random() < 0.05,
                    )
        for _ in range(self.n(1200)):
            case = self.pick("cases")
            self.add(
                "interactions",
                case_id=case["id"],
                contact_id=case["contact_id"],
                channel=self.r.choice(("email", "phone", "portal")),
                direction=self.r.choice(("inbound", "outbound")),
                summary="Discussed the case.",
                occurred_at=_ts(self.past(200)),
            )
        for i in range(self.n(1200)):
            c = self.pick("contracts")
            issued = (NOW - timedelta(days=self.r.randrange(1, 400))).date()
            status = self.r.choice(("issued", "paid", "paid", "paid", "void"))
            inv = self.add(
                "invoices",
                number=f"INV{80000 + i:07d}",
                account_id=c["account_id"],
                contract_id=c["id"],
                description=f"Services for {c['number']}",
                amount=_money(self.r.randrange(10_000, 5_000_000)),
                status=status,
                issued_on=_d(issued),
                due_on=_d(issued + timedelta(days=30)),
                updated_at=_ts(self.past(100)),
                sys_mod_count=0,
            )
            if status == "paid":
                row = self.rows["invoices"][inv - 1]
                self.add(
                    "payments",
                    number=f"PAY{90000 + len(self.rows['payments']):07d}",
                    invoice_id=inv,
                    account_id=row["account_id"],
                    amount=row["amount"],
                    method=self.r.choice(("card", "wire", "ach")),
                    status="settled",
                    received_at=_ts(datetime.combine(issued, datetime.min.time(), UTC) + timedelta(days=9)),
                )
        for pay in self.r.sample(self.rows["payments"], min(60 * self.scale, len(self.rows["payments"]))):
            self.add(
                "refunds",
                payment_id=pay["id"],
                amount=_money(self.r.randrange(1_000, 50_000)),
                reason="Service credit",
                status="processed",
                created_at=_ts(self.past(90)),
            )
        for _ in range(self.n(120)):
            case = self.pick("cases")
            self.add(
                "credits",
                account_id=case["account_id"],
                case_id=case["id"],
                amount=_money(self.r.randrange(2_500, 25_000)),
                reason="Goodwill",
                approved_by=self.r.choice(users),
                created_at=_ts(self.past(200)),
            )
        for _ in range(self.n(40)):
            case = self.pick("cases")
            self.add(
                "finance_approvals",
                account_id=case["account_id"],
                case_id=case["id"],
                kind="goodwill_credit",
                amount_limit=_money(self.r.randrange(25_000, 100_000)),
                approved_by=self.r.choice(users),
                approved_at=_ts(self.past(200)),
            )
        for _ in range(self.n(300)):
            case = self.pick("cases")
            self.add(
                "customer_notifications",
                contact_id=case["contact_id"],
                case_id=case["id"],
                channel="email",
                subject=f"Update on {case['number']}",
                body="We are working on it.",
                sent_at=_ts(self.past(200)),
            )


def group_names_index(gen: _Gen, name: str) -> int:
    return next(g["id"] for g in gen.rows["groups"] if g["name"] == name)


def generate(seed: str = DEFAULT_SEED, scale: int = 1) -> State:
    """The seeded enterprise as a dump-shaped State (canonical values, ready to load and to digest)."""
    if scale < 1:
        raise ValueError("scale must be a positive integer")
    gen = _Gen(seed, scale)
    gen.people()
    gen.itsm()
    gen.csm()
    infos: dict[str, TableInfo] = table_infos()
    state = State.empty(infos.values())
    for name, rows in gen.rows.items():
        cols = infos[name].columns
        table = state.tables[name]
        for row in rows:
            table.add(tuple(row.get(c) for c in cols))
    return state
