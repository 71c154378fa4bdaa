"""Benchmark: diff + label of two 200,000-row dumps that differ in 100,000 rows, under a 20-rule spec.

Not a timed test. Prints the load and diff-only times, then as its LAST line
``changes=<n> seconds=<s> changes_per_s=<r> gc_paused_seconds=<p> gc_frozen_seconds=<f>`` where
seconds covers diff + label (``dsl.label``, which parses nothing but does check, compile, diff,
classify, price and evaluate requirements) with the cyclic GC as a process normally has it, beside the
same call with the GC disabled and with everything alive before the call (modules, dumps) moved out
of its reach by ``gc.freeze()``: what a caller can do instead of a labeler that paused the GC itself.
Target: under 0.5 s on 2 cores. Each timing is the best of several runs, the three variants
interleaved so that a busy machine slows them alike.
"""

from __future__ import annotations

import gc
import json
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from agentrel.dsl.api import RunFacts, Verdict, diff, label, parse_spec
from agentrel.dsl.diff import diff_tables
from agentrel.dsl.state import State, TableInfo, load

SEED = 20260102
T = TypeVar("T")

CASES = TableInfo(
    "cases",
    ("id", "account_id", "status", "priority", "assigned_to", "legal_hold", "opened_on", "updated_at"),
    ("id",),
    frozenset({"updated_at"}),
    ("int", "int", "text", "text", "text", "bool", "date", "timestamp"),
)
INVOICES = TableInfo(
    "invoices",
    ("id", "account_id", "amount", "currency", "status", "issued_on"),
    ("id",),
    frozenset(),
    ("int", "int", "numeric", "text", "text", "date"),
)
LINKS = TableInfo(
    "case_links",
    ("case_id", "ci_id", "kind", "note"),
    ("case_id", "ci_id"),
    frozenset(),
    ("int", "int", "text", "text"),
)
PAYMENTS = TableInfo(
    "payments",
    ("id", "invoice_id", "amount", "kind", "created_at"),
    ("id",),
    frozenset(),
    ("int", "int", "numeric", "text", "timestamp"),
)

SPEC = """
spec "bench" version 1

param account: int = 42
param cap: numeric = 250.00
param queue: text = "key-accounts"
param cutoff: date = "2026-03-01"
param hold_case: int = 17

volatile cases(updated_at)

damage "legal hold touched" critical governance:
    update cases where before.legal_hold == true and changed(status)
damage "case deleted" high substrate:
    delete cases
damage "invoice deleted" high substrate price before.amount:
    delete invoices
damage "invoice repriced" high reversible price abs(after.amount - before.amount):
    update invoices where changed(amount) and after.account_id != account
damage "big refund" high substrate price after.amount - cap:
    insert payments where after.kind == "refund" and after.amount > cap
damage "link dropped" medium substrate:
    delete case_links where before.kind in ["depends_on", "backs_up"]
damage "foreign case closed" medium reversible:
    update cases where after.account_id != account and after.status == "closed" and only_changed(status)
damage "payment edited" high reversible price coalesce(before.amount, 0):
    update payments
damage "priority escalated" low reversible:
    update cases where before.priority != "p1" and after.priority == "p1"
damage "old invoice voided" medium reversible price before.amount * 0.1:
    update invoices where after.status == "void" and before.issued_on < cutoff

allow "our cases reassigned":
    update cases where after.account_id == account and only_changed(assigned_to)
allow "queue handoff":
    update cases where after.assigned_to == queue and only_changed(assigned_to, status)
allow "status work":
    update cases where only_changed(status) and lower(after.status) in ["open", "pending", "resolved"]
allow "small refund":
    insert payments where after.kind == "refund" and after.amount <= cap
allow "invoice paid":
    update invoices where only_changed(status) and after.status == "paid"
allow "new case":
    insert cases where after.opened_on >= cutoff
allow "new link":
    insert case_links where after.kind != "legacy"
allow "link note":
    update case_links where only_changed(note)
allow "invoice raised":
    insert invoices where after.account_id == account and after.amount < 10000
allow "credit note":
    update invoices where after.amount < before.amount and only_changed(amount)

require "hold case untouched": exists cases where key.id == hold_case and after.legal_hold == true
require "one refund of the cap": at most 5000 insert payments where after.amount == cap
"""

STATUSES = ("open", "pending", "resolved", "closed")
QUEUES = ("tier1", "tier2", "key-accounts", "billing")


def build(rng: random.Random) -> tuple[State, State]:
    before = State.empty([CASES, INVOICES, LINKS, PAYMENTS])
    cases, invoices = before.tables["cases"], before.tables["invoices"]
    links, payments = before.tables["case_links"], before.tables["payments"]
    for i in range(80_000):
        cases.add(
            (
                i,
                rng.choice((42, 7, 9, 11)),
                rng.choice(STATUSES),
                rng.choice(("p1", "p2", "p3")),
                rng.choice(QUEUES),
                i == 17 or rng.random() < 0.01,
                f"2026-0{rng.randint(1, 6)}-1{rng.randint(0, 9)}",
                "2026-01-01T00:00:00Z",
            )
        )
    for i in range(60_000):
        invoices.add(
            (
                i,
                rng.choice((42, 7, 9)),
                f"{rng.randint(100, 900_000) / 100:.2f}",
                "USD",
                "open",
                f"2026-0{rng.randint(1, 6)}-0{rng.randint(1, 9)}",
            )
        )
    for i in range(40_000):
        links.add((i // 4, i, rng.choice(("depends_on", "backs_up", "relates")), ""))
    for i in range(20_000):
        payments.add(
            (
                i,
                rng.randrange(60_000),
                f"{rng.randint(100, 90_000) / 100:.2f}",
                "charge",
                "2026-02-01T10:00:00Z",
            )
        )

    after = State.empty([CASES, INVOICES, LINKS, PAYMENTS])
    for name, table in before.tables.items():
        after.tables[name].rows = dict(table.rows)
    acases, ainv = after.tables["cases"].rows, after.tables["invoices"].rows
    alinks, apay = after.tables["case_links"].rows, after.tables["payments"].rows
    for i in rng.sample(range(80_000), 40_000):  # case updates (plus volatile churn)
        r = list(acases[(i,)])
        pick = rng.random()
        if pick < 0.4:
            r[4] = rng.choice(QUEUES)
        elif pick < 0.8:
            r[2] = rng.choice(STATUSES)
        else:
            r[3] = "p1" if r[3] != "p1" else "p2"
        r[7] = "2026-04-01T00:00:00Z"
        acases[(i,)] = tuple(r)
    for i in rng.sample(range(80_000), 5_000):  # volatile-only churn: not a change
        if acases[(i,)] == before.tables["cases"].rows[(i,)]:
            r = list(acases[(i,)])
            r[7] = "2026-05-01T00:00:00Z"
            acases[(i,)] = tuple(r)
    for i in rng.sample(range(60_000), 20_000):  # invoice updates
        r = list(ainv[(i,)])
        pick = rng.random()
        if pick < 0.4:
            r[4] = "paid"
        elif pick < 0.6:
            r[4] = "void"
        else:
            r[2] = f"{float(r[2]) * rng.choice((0.5, 1.5)):.2f}"
        ainv[(i,)] = tuple(r)
    for k in rng.sample(sorted(alinks), 10_000):  # link deletes
        del alinks[k]
    for i in rng.sample(range(80_000), 5_000):  # case deletes
        acases.pop((i,), None)
    for i in range(80_000, 90_000):  # case inserts
        acases[(i,)] = (
            i,
            42,
            "open",
            "p3",
            "tier1",
            False,
            rng.choice(("2026-02-10", "2026-03-10")),
            "2026-04-01T00:00:00Z",
        )
    for i in range(10_000):  # payment inserts: refunds, some above the cap
        pid = 20_000 + i
        amount = f"{rng.randint(1_000, 60_000) / 100:.2f}"
        apay[(pid,)] = (pid, rng.randrange(60_000), amount, "refund", "2026-04-02T10:00:00Z")
    for i in rng.sample(range(20_000), 5_000):  # payment updates
        r = list(apay[(i,)])
        r[2] = f"{float(r[2]) + 1:.2f}"
        apay[(i,)] = tuple(r)
    for i in range(10_000):  # link inserts
        alinks[(100_000 + i, i)] = (100_000 + i, i, rng.choice(("relates", "legacy")), "")
    return before, _reloaded(after)


def _reloaded(state: State) -> State:
    """The same dump with every row a fresh object, as two dumps loaded from disk would be (no
    identity shortcuts in the comparisons)."""
    out = State.empty(t.info for t in state.tables.values())
    for name, table in state.tables.items():
        rows = json.loads(json.dumps([[list(k), list(r)] for k, r in table.rows.items()]))
        out.tables[name].rows = {tuple(k): tuple(r) for k, r in rows}
    return out


def _best(fn: Callable[[], T], runs: int) -> tuple[float, T]:
    """Fastest wall time of ``runs`` calls (the machine may be shared), and the last result."""
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def _gc_paused(fn: Callable[[], T]) -> T:
    gc.disable()
    try:
        return fn()
    finally:
        gc.enable()


def _gc_frozen(fn: Callable[[], T]) -> T:
    gc.freeze()  # what is alive now is never walked again by a collection
    try:
        return fn()
    finally:
        gc.unfreeze()


def _load_seconds(state: State) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "before.jsonl.gz"
        state.save(path)
        return _best(lambda: load(path), 3)[0]


def main() -> None:
    rng = random.Random(SEED)
    before, after = build(rng)
    spec = parse_spec(SPEC, "bench.dmg")
    rows = before.row_count()
    print(f"load_rows={rows} load_seconds={_load_seconds(before):.3f}")

    t_diff, changes = _best(lambda: diff(before, after, spec.extra_volatile()), 3)
    # label() runs diff_tables(); the public diff() also builds sorted RowChange records from it.
    t_tables, _ = _best(lambda: diff_tables(before, after, spec.extra_volatile()), 3)
    print(f"rows={rows} diff_changes={len(changes)} diff_seconds={t_diff:.3f} diff_tables={t_tables:.3f}")

    def run() -> Verdict:
        return label(spec, None, before, after, RunFacts(final_message="done"))

    variants: dict[str, Callable[[], Verdict]] = {
        "gc": run,
        "paused": lambda: _gc_paused(run),
        "frozen": lambda: _gc_frozen(run),
    }
    best = dict.fromkeys(variants, float("inf"))
    verdict: Verdict | None = None
    for _ in range(7):
        for name, fn in variants.items():
            verdict = None  # as in an audit, the last run's 63,000 events are gone before the next
            t0 = time.perf_counter()
            verdict = fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    assert verdict is not None
    print(
        f"events={len(verdict.events)} dollars={verdict.dollars} max_severity={verdict.max_severity}"
        f" outcome={verdict.outcome} allowed={sum(verdict.allowed.values())}"
    )
    n, t = verdict.changes, best["gc"]
    print(
        f"changes={n} seconds={t:.3f} changes_per_s={n / t:.0f}"
        f" gc_paused_seconds={best['paused']:.3f} gc_frozen_seconds={best['frozen']:.3f}"
    )


if __name__ == "__main__":
    main()
