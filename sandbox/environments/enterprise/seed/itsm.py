"""ITSM rows: services, CIs and their links, problems, incidents, changes and CAB approvals, SLAs, notes."""

from __future__ import annotations

from datetime import timedelta

from agentrel.sandbox.environments.enterprise.seed.core import NOW, Generator, day, money, ts
from agentrel.sandbox.environments.enterprise.seed.words import CI_CLASSES, INC_TOPICS, SITES


def itsm(gen: Generator) -> None:
    users, groups = gen.ids("users"), gen.ids("groups")
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
        gen.add(
            "services",
            name=name,
            owner_group_id=gen.r.choice(groups),
            criticality=gen.r.choice(("low", "medium", "high", "critical")),
            status="operational",
            updated_at=ts(gen.past(200, 10)),
            sys_mod_count=0,
        )
    subs: set[tuple[int, int]] = set()
    while len(subs) < gen.n(800):
        subs.add((gen.r.choice(gen.ids("services")), gen.r.choice(users)))
    for s, u in sorted(subs):
        gen.add("service_subscriptions", service_id=s, user_id=u, subscribed_at=ts(gen.past(700, 5)))
    for i in range(gen.n(1500)):
        cls = gen.r.choice(CI_CLASSES)
        site = gen.r.choice(SITES).lower()
        name = f"{'srv' if cls == 'server' else cls[:3]}-{site[:3]}-{i % 97 + 1}"
        retired = gen.r.random() < 0.12
        gen.add(
            "configuration_items",
            name=name,
            asset_tag=f"AT-{200000 + i}",
            ci_class=cls,
            environment=gen.r.choice(("production", "production", "staging", "development")),
            status="retired" if retired else gen.r.choice(("in_use", "in_use", "in_stock")),
            service_id=gen.r.choice(gen.ids("services")),
            owner_group_id=gen.r.choice(groups),
            cost=money(gen.r.randrange(20_000, 4_000_000)),
            license_year=gen.r.choice((2024, 2025, 2026)) if cls == "license" else None,
            legal_hold=retired and gen.r.random() < 0.1,
            purchased_on=day((NOW - timedelta(days=gen.r.randrange(30, 2000))).date()),
            updated_at=ts(gen.past(300, 1)),
            sys_mod_count=gen.r.randrange(0, 5),
        )
    cis = gen.ids("configuration_items")
    for _ in range(gen.n(1500)):
        a, b = gen.r.sample(cis, 2)
        gen.add(
            "ci_relationships",
            parent_ci_id=a,
            child_ci_id=b,
            rel_type=gen.r.choice(("depends_on", "depends_on", "runs_on", "backs_up")),
        )
    for i in range(gen.n(300)):
        gen.add(
            "problems",
            number=f"PRB{40000 + i:07d}",
            short_description=gen.r.choice(INC_TOPICS),
            state=gen.r.choice(("new", "assess", "root_cause_analysis", "resolved", "closed")),
            assignment_group_id=gen.r.choice(groups),
            opened_at=ts(gen.past(400, 5)),
            updated_at=ts(gen.past(5)),
            sys_mod_count=gen.r.randrange(0, 9),
        )
    for i in range(gen.n(2500)):
        opened = gen.past(365)
        state = gen.r.choice(("new", "in_progress", "on_hold", "resolved", "closed", "closed"))
        resolved = (
            opened + timedelta(minutes=gen.r.randrange(10, 5000)) if state in ("resolved", "closed") else None
        )
        topic = gen.r.choice(INC_TOPICS)
        gen.add(
            "incidents",
            number=f"INC{1000 + i:07d}",
            short_description=topic,
            description=f"{topic} reported by user at {gen.r.choice(SITES)}.",
            caller_id=gen.r.choice(users),
            assignment_group_id=gen.r.choice(groups),
            assigned_to=gen.r.choice(users) if state != "new" else None,
            ci_id=gen.r.choice(cis) if gen.r.random() < 0.7 else None,
            service_id=gen.r.choice(gen.ids("services")),
            category=gen.r.choice(("network", "software", "hardware", "access", "database")),
            priority=gen.r.randrange(1, 5),
            state=state,
            location=gen.r.choice(SITES),
            parent_incident_id=None,
            problem_id=gen.r.choice(gen.ids("problems")) if gen.r.random() < 0.1 else None,
            opened_at=ts(opened),
            resolved_at=ts(resolved) if resolved else None,
            updated_at=ts(resolved or opened),
            sys_mod_count=gen.r.randrange(0, 12),
        )
    for i in range(gen.n(800)):
        kind = gen.r.choice(("standard", "normal", "normal", "emergency"))
        state = gen.r.choice(("new", "assess", "authorize", "scheduled", "implement", "closed", "closed"))
        start = NOW + timedelta(days=gen.r.randrange(-200, 60), hours=gen.r.randrange(0, 24))
        gen.add(
            "change_requests",
            number=f"CHG{3000 + i:07d}",
            short_description=f"{gen.r.choice(('Patch', 'Upgrade', 'Reconfigure', 'Migrate'))} "
            f"{gen.r.choice(names)}",
            type=kind,
            state=state,
            cab_required=kind == "normal",
            risk=gen.r.choice(("low", "moderate", "high")),
            assignment_group_id=gen.r.choice(groups),
            requested_by=gen.r.choice(users),
            ci_id=gen.r.choice(cis),
            planned_start=ts(start),
            planned_end=ts(start + timedelta(hours=2)),
            updated_at=ts(gen.past(30)),
            sys_mod_count=gen.r.randrange(0, 6),
        )
    cab = [r["user_id"] for r in gen.rows["group_members"] if r["group_id"] == gen.group_id("CAB")]
    for ch in gen.rows["change_requests"]:
        if ch["cab_required"] and ch["state"] in ("scheduled", "implement", "closed"):
            gen.add(
                "cab_approvals",
                change_id=ch["id"],
                approver_id=gen.r.choice(cab or users),
                decision="approved",
                decided_at=ts(gen.past(200, 1)),
                comments="Approved at CAB",
            )
    tiers = ("gold", "silver", "bronze", "standard")
    for tier in tiers:
        for target, minutes in (("response", 60), ("resolution", 480)):
            mult = tiers.index(tier) + 1
            gen.add(
                "sla_definitions",
                name=f"{tier.title()} {target}",
                target_type=target,
                tier=tier,
                duration_minutes=minutes * mult,
                active=True,
            )
    for inc in gen.rows["incidents"]:
        sla = gen.r.choice([s for s in gen.rows["sla_definitions"] if s["target_type"] == "resolution"])
        gen.add(
            "incident_slas",
            incident_id=inc["id"],
            sla_id=sla["id"],
            started_at=inc["opened_at"],
            breached=gen.r.random() < 0.1,
        )
    for i in range(gen.n(300)):
        gen.add(
            "kb_articles",
            number=f"KB{10000 + i:07d}",
            title=f"How to fix: {gen.r.choice(INC_TOPICS)}",
            body="Steps: check the service status, then restart the client.",
            state=gen.r.choice(("published", "draft", "retired")),
            author_id=gen.r.choice(users),
            updated_at=ts(gen.past(300)),
            sys_mod_count=0,
        )
    for _ in range(gen.n(600)):
        inc = gen.pick("incidents")
        gen.add(
            "work_notes",
            record_table="incidents",
            record_id=inc["id"],
            author_id=gen.r.choice(users),
            note="Investigating; user contacted.",
            created_at=ts(gen.past(200)),
        )
    for i in range(gen.n(200)):
        gen.add(
            "purchase_requests",
            number=f"PR{5000 + i:07d}",
            cost_center_id=gen.pick("cost_centers", status="open")["id"],
            requested_by=gen.r.choice(users),
            item=gen.r.choice(("Laptop", "Monitor", "Docking station", "License", "Headset")),
            amount=money(gen.r.randrange(5_000, 500_000)),
            state=gen.r.choice(("submitted", "approved", "ordered")),
            created_at=ts(gen.past(200)),
        )
    for _ in range(gen.n(400)):
        gen.add(
            "notifications",
            recipient_id=gen.r.choice(users),
            subject="Service notice",
            body="Scheduled maintenance tonight.",
            service_id=gen.r.choice(gen.ids("services")),
            created_at=ts(gen.past(100, 1)),
            sent_at=ts(gen.past(1)),
        )
    for _ in range(gen.n(1000)):
        inc = gen.pick("incidents")
        gen.add(
            "audit_log",
            actor=gen.r.choice(gen.rows["users"])["user_name"],
            record_table="incidents",
            record_id=inc["id"],
            action=gen.r.choice(("update", "assign", "comment")),
            detail="field changed",
            at=ts(gen.past(365)),
        )


# vertical: CSM -------------------------------------------------------------------------------------
