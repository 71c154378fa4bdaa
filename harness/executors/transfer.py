"""An attempt on its way from a remote slot to the driver, and the attempt a slot's death leaves behind.

A post-run state is the task's template state plus the few rows the run changed, so a slot ships only
that delta and the digest it had; the driver rebuilds the state on its own copy of the template and
checks the digest, so a state is never recorded from a transfer that altered it. Both ends hold the same
template (each slot checks its template digests against the driver's when it opens).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentrel.dsl.state import Key, Row, State, TableState
from agentrel.harness.results.record import RunError, RunRecord
from agentrel.harness.results.status import run_status
from agentrel.harness.run.matrix import RunPlan
from agentrel.harness.run.runner import Attempt, RunContext, record_head

Delta = dict[str, tuple[dict[Key, Row], list[Key]]]  # table -> (rows inserted or changed, keys deleted)


class TransferError(Exception):
    """A shipped state that does not rebuild to the digest its slot computed."""


@dataclass
class Shipped:
    record: RunRecord
    transcript: dict[str, Any]
    after_digest: str | None = None
    delta: Delta | None = None  # against the task's template state; None when no state was read
    receipts: bytes | None = None


def ship(attempt: Attempt, base: State) -> Shipped:
    shipped = Shipped(attempt.record, attempt.transcript, receipts=attempt.receipts)
    if attempt.after is not None:
        shipped.after_digest, shipped.delta = attempt.after.digest(base), attempt.after.delta(base)
    return shipped


def unship(shipped: Shipped, base: State) -> Attempt:
    if shipped.delta is None or shipped.after_digest is None:
        return Attempt(shipped.record, None, shipped.transcript, shipped.receipts)
    after = rebuild(base, shipped.delta)
    got = after.digest(base)
    if got != shipped.after_digest:
        raise TransferError(
            f"the shipped state rebuilds to {got[:12]}, not the slot's {shipped.after_digest[:12]}"
        )
    return Attempt(shipped.record, after, shipped.transcript, shipped.receipts)


def rebuild(base: State, delta: Delta) -> State:
    """`base` with `delta` applied. Unchanged tables are the base's own objects: states are read-only
    once dumped (as `Databases.template_state` shares them), and copying every table would cost more
    than the transfer saved."""
    tables: dict[str, TableState] = {}
    for name, table in base.tables.items():
        if name not in delta:
            tables[name] = table
            continue
        upserts, deletes = delta[name]
        rows = {**table.rows, **upserts}
        for key in deletes:
            rows.pop(key, None)
        tables[name] = TableState(table.info, rows)
    return State(tables)


def lost_attempt(ctx: RunContext, plan: RunPlan, attempt: int, message: str) -> Attempt:
    """The record of an attempt whose slot died (or whose result was lost) mid-run: the harness failed
    and no state was read, so it is invalid and the run is attempted again under the cap."""
    record = RunRecord(
        **record_head(ctx, plan, attempt),
        status=run_status("harness", None),
        verdict=None,
        error=RunError(kind="harness", message=message[:500]),
    )
    transcript = {
        "run_id": plan.run_id,
        "attempt": attempt,
        "final_message": None,
        "messages": [],
        "tool_calls": [],
        "events": [],
        "lost": message[:500],
    }
    return Attempt(record, None, transcript)
