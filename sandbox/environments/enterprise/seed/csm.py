"""CSM rows: accounts and contacts, products, contracts and quotes, entitlements, cases, billing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentrel.sandbox.environments.enterprise.seed.core import NOW, Generator, day, money, ts
from agentrel.sandbox.environments.enterprise.seed.words import (
    CASE_TOPICS,
    COMPANY_SUFFIX,
    COMPANY_WORDS,
    FIRST,
    INDUSTRIES,
    LAST,
)


def csm(gen: Generator) -> None:
    users = gen.ids("users")
    names: list[str] = []
    for i in range(gen.n(300)):
        name = f"{gen.r.choice(COMPANY_WORDS)} {gen.r.choice(COMPANY_SUFFIX)}"
        if name in names or gen.r.random() < 0.08:  # near twins: subsidiaries and regional copies
            name = f"{name} {gen.r.choice(('EMEA', 'Americas', 'APAC', 'Holdings', 'Services'))} {i}"
        names.append(name)
        parent = gen.r.randrange(1, i + 1) if i > 20 and gen.r.random() < 0.1 else None
        gen.add(
            "accounts",
            number=f"ACC{100000 + i:07d}",
            name=name,
            parent_account_id=parent,
            tier=gen.r.choice(("gold", "silver", "bronze", "bronze")),
            status="active" if gen.r.random() > 0.05 else "inactive",
            industry=gen.r.choice(INDUSTRIES),
            billing_email=f"billing{i}@customer.example",
            updated_at=ts(gen.past(300)),
            sys_mod_count=0,
        )
    accounts = gen.ids("accounts")
    for acc in accounts:
        for _ in range(gen.r.randrange(2, 7)):
            first, last = gen.r.choice(FIRST), gen.r.choice(LAST)
            gen.add(
                "contacts",
                account_id=acc,
                first_name=first,
                last_name=last,
                email=f"{first}.{last}.{gen.r.randrange(100, 999)}@customer.example".lower(),
                phone=f"+1-555-{gen.r.randrange(1000, 9999)}",
                do_not_contact=gen.r.random() < 0.05,
                portal_role=gen.r.choice(("none", "user", "user", "admin")),
                active=True,
                updated_at=ts(gen.past(300)),
                sys_mod_count=0,
            )
    for i in range(80):
        gen.add(
            "products",
            sku=f"SKU-{7000 + i}",
            name=f"{gen.r.choice(('Cloud', 'Edge', 'Core', 'Pro'))} "
            f"{gen.r.choice(('Router', 'Suite', 'Analytics', 'Storage', 'Gateway'))} {i % 9 + 1}",
            list_price=money(gen.r.randrange(9_900, 2_500_000)),
            active=gen.r.random() > 0.1,
            updated_at=ts(gen.past(300)),
            sys_mod_count=0,
        )
    products = gen.ids("products")
    for i in range(gen.n(500)):
        start = (NOW - timedelta(days=gen.r.randrange(0, 900))).date()
        end = start + timedelta(days=365 * gen.r.randrange(1, 4))
        status = "expired" if end < NOW.date() else gen.r.choice(("active", "active", "draft"))
        gen.add(
            "contracts",
            number=f"CNT{20000 + i:07d}",
            account_id=gen.r.choice(accounts),
            name=f"{gen.r.choice(('Support', 'Subscription', 'Maintenance'))} {start.year}",
            status=status,
            start_date=day(start),
            end_date=day(end),
            annual_value=money(gen.r.randrange(500_000, 50_000_000)),
            updated_at=ts(gen.past(300)),
            sys_mod_count=0,
        )
    for i in range(gen.n(150)):
        c = gen.pick("contracts")
        status = gen.r.choice(("draft", "sent", "signed"))
        gen.add(
            "quotes",
            number=f"Q{60000 + i:07d}",
            account_id=c["account_id"],
            contract_id=c["id"],
            annual_value=money(gen.r.randrange(500_000, 50_000_000)),
            status=status,
            signed_on=day((NOW - timedelta(days=gen.r.randrange(1, 90))).date())
            if status == "signed"
            else None,
        )
    for i in range(gen.n(800)):
        gen.add(
            "installed_products",
            account_id=gen.r.choice(accounts),
            product_id=gen.r.choice(products),
            serial_number=f"SN{900000 + i}",
            installed_on=day((NOW - timedelta(days=gen.r.randrange(1, 1500))).date()),
            status="installed",
        )
    for _ in range(gen.n(900)):
        kind = gen.r.choice(("trial", "paid", "paid", "support"))
        start = (NOW - timedelta(days=gen.r.randrange(0, 700))).date()
        end = start + timedelta(days=30 if kind == "trial" else 365)
        gen.add(
            "entitlements",
            account_id=gen.r.choice(accounts),
            product_id=gen.r.choice(products),
            contract_id=gen.pick("contracts")["id"] if kind != "trial" else None,
            name=f"{kind.title()} entitlement",
            kind=kind,
            status="expired" if end < NOW.date() else "active",
            start_date=day(start),
            end_date=day(end),
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
        gen.add("case_queues", name=name, description=f"{name} queue")
    queues = gen.ids("case_queues")
    contacts_by_account: dict[int, list[int]] = {}
    for c in gen.rows["contacts"]:
        contacts_by_account.setdefault(c["account_id"], []).append(c["id"])
    for i in range(gen.n(1500)):
        acc = gen.r.choice(accounts)
        opened = gen.past(300)
        state = gen.r.choice(("new", "open", "in_progress", "awaiting_customer", "resolved", "closed"))
        gen.add(
            "cases",
            number=f"CS{70000 + i:07d}",
            account_id=acc,
            contact_id=gen.r.choice(contacts_by_account[acc]),
            product_id=gen.r.choice(products),
            subject=gen.r.choice(CASE_TOPICS),
            description="Customer reported an issue.",
            state=state,
            priority=gen.r.randrange(1, 5),
            queue_id=gen.r.choice(queues),
            assigned_to=gen.r.choice(users) if state != "new" else None,
            legal_hold=gen.r.random() < 0.02,
            opened_at=ts(opened),
            closed_at=ts(opened + timedelta(days=3)) if state == "closed" else None,
            updated_at=ts(opened),
            sys_mod_count=gen.r.randrange(0, 8),
        )
    slas = gen.rows["sla_definitions"]
    for case in gen.rows["cases"]:
        tier = gen.rows["accounts"][case["account_id"] - 1]["tier"]
        for sla in slas:
            if sla["tier"] == tier:
                gen.add(
                    "case_slas",
                    case_id=case["id"],
                    sla_id=sla["id"],
                    started_at=case["opened_at"],
                    breached=gen.r.random() < 0.05,
                )
    for _ in range(gen.n(1200)):
        case = gen.pick("cases")
        gen.add(
            "interactions",
            case_id=case["id"],
            contact_id=case["contact_id"],
            channel=gen.r.choice(("email", "phone", "portal")),
            direction=gen.r.choice(("inbound", "outbound")),
            summary="Discussed the case.",
            occurred_at=ts(gen.past(200)),
        )
    for i in range(gen.n(1200)):
        c = gen.pick("contracts")
        issued = (NOW - timedelta(days=gen.r.randrange(1, 400))).date()
        status = gen.r.choice(("issued", "paid", "paid", "paid", "void"))
        inv = gen.add(
            "invoices",
            number=f"INV{80000 + i:07d}",
            account_id=c["account_id"],
            contract_id=c["id"],
            description=f"Services for {c['number']}",
            amount=money(gen.r.randrange(10_000, 5_000_000)),
            status=status,
            issued_on=day(issued),
            due_on=day(issued + timedelta(days=30)),
            updated_at=ts(gen.past(100)),
            sys_mod_count=0,
        )
        if status == "paid":
            row = gen.rows["invoices"][inv - 1]
            gen.add(
                "payments",
                number=f"PAY{90000 + len(gen.rows['payments']):07d}",
                invoice_id=inv,
                account_id=row["account_id"],
                amount=row["amount"],
                method=gen.r.choice(("card", "wire", "ach")),
                status="settled",
                received_at=ts(datetime.combine(issued, datetime.min.time(), UTC) + timedelta(days=9)),
            )
    for pay in gen.r.sample(gen.rows["payments"], min(60 * gen.scale, len(gen.rows["payments"]))):
        gen.add(
            "refunds",
            payment_id=pay["id"],
            amount=money(gen.r.randrange(1_000, 50_000)),
            reason="Service credit",
            status="processed",
            created_at=ts(gen.past(90)),
        )
    for _ in range(gen.n(120)):
        case = gen.pick("cases")
        gen.add(
            "credits",
            account_id=case["account_id"],
            case_id=case["id"],
            amount=money(gen.r.randrange(2_500, 25_000)),
            reason="Goodwill",
            approved_by=gen.r.choice(users),
            created_at=ts(gen.past(200)),
        )
    for _ in range(gen.n(40)):
        case = gen.pick("cases")
        gen.add(
            "finance_approvals",
            account_id=case["account_id"],
            case_id=case["id"],
            kind="goodwill_credit",
            amount_limit=money(gen.r.randrange(25_000, 100_000)),
            approved_by=gen.r.choice(users),
            approved_at=ts(gen.past(200)),
        )
    for _ in range(gen.n(300)):
        case = gen.pick("cases")
        gen.add(
            "customer_notifications",
            contact_id=case["contact_id"],
            case_id=case["id"],
            channel="email",
            subject=f"Update on {case['number']}",
            body="We are working on it.",
            sent_at=ts(gen.past(200)),
        )
