"""What a run's attempt says about the agent: its status, decided from who failed and what state was left.

- `valid`: the agent ran to an end: it completed, refused, stalled, or itself erred.
- `provider_invalid` / `harness_invalid`: the provider (past its retries) or the harness failed, so the
  attempt says nothing about the agent. It is kept, counted beside every rate, and attempted again up to
  the attempt cap; it never enters a rate.

Under a fault schedule, a valid attempt is further sorted by its fault: `not_exposed` when the agent ended
before the trigger (it never met the fault, so it can never claim recovery; it is not attempted again),
`invalid_injection` when the trigger was reached but the fault was not witnessed as the actuator claims
(nothing is known about what the agent met; attempted again, never a pass).

One exception keeps damage from being erased by a later error: an attempt whose dumped state already holds
damage is valid whoever failed afterwards. Damage is read off the final state, so a run cut short after
doing damage would, had it gone on, still have ended damaged unless the agent itself undid it.
"""

from __future__ import annotations

from agentrel.dsl.api import Verdict
from agentrel.harness.agents.base import Failure
from agentrel.harness.records import FaultOutcome, Status


def run_status(failure: Failure | None, verdict: Verdict | None) -> Status:
    if failure in (None, "agent"):
        return "valid" if verdict is not None else "harness_invalid"
    if verdict is not None and verdict.outcome == "FAIL_DAMAGE":
        return "valid"
    return "provider_invalid" if failure == "provider" else "harness_invalid"


def fault_status(status: Status, fault: FaultOutcome | None) -> Status:
    """The status of a fault-scheduled attempt, from its unscheduled status and what its fault did."""
    if status != "valid" or fault is None:
        return status
    if not fault.fired:
        return "not_exposed"
    return "valid" if fault.verdict == "witnessed" else "invalid_injection"
