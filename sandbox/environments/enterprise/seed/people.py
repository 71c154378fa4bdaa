"""People and access: users (user 1 is the service account), groups, roles, grants, cost centers."""

from __future__ import annotations

from datetime import timedelta

from agentrel.sandbox.environments.enterprise.seed.core import NOW, SERVICE_ACCOUNT, Generator, day, ts
from agentrel.sandbox.environments.enterprise.seed.words import DEPARTMENTS, FIRST, LAST, SITES


def people(gen: Generator) -> None:
    # User 1 is the account agents act as: its id is fixed so tasks and scripts can rely on it.
    gen.add(
        "users",
        user_name=SERVICE_ACCOUNT,
        full_name="AgentRel Service Agent",
        email=f"{SERVICE_ACCOUNT}@corp.example",
        department="Service Desk",
        title="Service Agent",
        active=True,
        manager_id=None,
        contract_end=None,
        created_at=ts(NOW - timedelta(days=400)),
        updated_at=ts(NOW - timedelta(days=400)),
        sys_mod_count=0,
    )
    seen: set[str] = {SERVICE_ACCOUNT}
    for i in range(1, gen.n(400)):
        first, last = gen.r.choice(FIRST), gen.r.choice(LAST)
        handle = f"{first}.{last}".lower()
        while handle in seen:
            handle = f"{first}.{last}{gen.r.randrange(2, 99)}".lower()
        seen.add(handle)
        created = gen.past(1500, 200)
        contract_end = (
            day((NOW - timedelta(days=gen.r.randrange(1, 200))).date()) if gen.r.random() < 0.05 else None
        )
        gen.add(
            "users",
            user_name=handle,
            full_name=f"{first} {last}",
            email=f"{handle}@corp.example",
            department=gen.r.choice(DEPARTMENTS),
            title=gen.r.choice(("Engineer", "Analyst", "Manager", "Specialist", "Administrator", "Agent")),
            active=gen.r.random() > 0.06,
            manager_id=gen.r.randrange(1, i + 1) if i > 10 else None,
            contract_end=contract_end,
            created_at=ts(created),
            updated_at=ts(created),
            sys_mod_count=0,
        )
    users = gen.ids("users")
    group_names = [f"{d} {s}" for d in DEPARTMENTS for s in ("L1", "L2")] + [
        "CAB",
        "Key Accounts",
        "Database Admins",
        "Change Management",
        "Major Incident Team",
    ]
    for name in group_names:
        gen.add(
            "groups",
            name=name,
            description=f"{name} team",
            manager_id=gen.r.choice(users),
            active=True,
            updated_at=ts(gen.past(400, 100)),
            sys_mod_count=0,
        )
    pairs: set[tuple[int, int]] = set()
    while len(pairs) < gen.n(800):
        pairs.add((gen.r.choice(gen.ids("groups")), gen.r.choice(users)))
    for g, u in sorted(pairs):
        gen.add("group_members", group_id=g, user_id=u, added_at=ts(gen.past(900, 30)))
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
        gen.add(
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
    while len(grants) < gen.n(600):
        grants.add((gen.r.choice(users), gen.r.choice(gen.ids("roles"))))
    for u, role in sorted(grants):
        gen.add(
            "user_roles",
            user_id=u,
            role_id=role,
            granted_at=ts(gen.past(900, 10)),
            granted_by=gen.r.choice(users),
        )
    for i in range(gen.n(120)):
        state = gen.r.choice(("fulfilled", "fulfilled", "rejected", "requested", "approved"))
        gen.add(
            "access_requests",
            number=f"RITM{1000100 + i:07d}",
            user_id=gen.r.choice(users),
            role_id=gen.r.choice(gen.ids("roles")),
            state=state,
            approved_by=gen.r.choice(users) if state in ("approved", "fulfilled") else None,
            requested_at=ts(gen.past(300, 1)),
            updated_at=ts(gen.past(1)),
            sys_mod_count=0,
        )
    for i in range(60):
        gen.add(
            "cost_centers",
            code=f"CC-{100 + i * 7}",
            name=f"{gen.r.choice(DEPARTMENTS)} {gen.r.choice(SITES)}",
            status="closed" if gen.r.random() < 0.15 else "open",
            owner_id=gen.r.choice(users),
        )


# vertical: ITSM -----------------------------------------------------------------------------------
