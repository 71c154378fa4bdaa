"""The verdicts are pure: receipt in, verdict out. Each kind's witness that shows the fault is accepted;
a missing witness, another kind's, or one contradicting its actuator is rejected with its reasons."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrel.harness.faults.injectors import tamper
from agentrel.harness.faults.receipts import (
    ActuatorReceipt,
    KillActuation,
    KillWitness,
    LostResponseActuation,
    LostResponseWitness,
    PartitionActuation,
    PartitionWitness,
    ReceiptLog,
    RestartActuation,
    RestartWitness,
    WitnessReceipt,
    verdict,
)

CASES = {
    "restart": (
        RestartActuation(old_pid=10, old_boot_id="a", new_pid=11, new_boot_id="b"),
        RestartWitness(
            pid_before=10,
            boot_before="a",
            pid_after=11,
            boot_after="b",
            old_wait_status=0,
            client_disconnected=True,
            client_reconnected=True,
        ),
    ),
    "lost_response": (
        LostResponseActuation(call_id="r:4", armed=True),
        LostResponseWitness(
            call_id="r:4",
            committed=True,
            proxy_upstream_bytes=365,
            proxy_forwarded_bytes=0,
            client_timed_out=True,
            client_answered=False,
        ),
    ),
    "kill": (
        KillActuation(call_id="r:4", pid=10, in_flight=True),
        KillWitness(
            call_id="r:4",
            wait_status=-9,
            proxy_saw_call=True,
            proxy_forwarded_bytes=0,
            committed=False,
            client_answered=False,
        ),
    ),
    "partition": (
        PartitionActuation(seconds=1.0),
        PartitionWitness(
            proxied_probe_ok=False,
            control_probe_ok=True,
            control_boot_id="a",
            dropped_bytes=92,
            healed_probe_ok=True,
            healed_boot_id="a",
        ),
    ),
}


@pytest.mark.parametrize("kind", CASES)
def test_witnessed_missing_tampered_and_mismatched(kind: str) -> None:
    actuation, witness = CASES[kind]
    assert verdict(actuation, witness) == ("witnessed", [])
    assert verdict(actuation, None) == ("invalid_injection", ["no witness"])
    outcome, reasons = verdict(actuation, tamper(witness))
    assert outcome == "invalid_injection" and reasons
    other = next(w for k, (_, w) in CASES.items() if k != kind)
    assert verdict(actuation, other)[0] == "invalid_injection"


def test_contradicting_the_actuator_is_invalid() -> None:
    restart, seen = CASES["restart"]
    # the server that answered after is not the one the actuator says it started
    assert verdict(restart, seen.model_copy(update={"pid_after": 99})) == (
        "invalid_injection",
        ["the new server is not the claimed"],
    )
    kill, dead = CASES["kill"]
    assert (
        "Postgres cannot yet say whether the call committed"
        in verdict(kill, dead.model_copy(update={"committed": None}))[1]
    )
    lost, gone = CASES["lost_response"]
    assert verdict(lost, gone.model_copy(update={"call_id": "r:5"}))[1] == ["the witness is of another call"]


def test_receipt_log_round_trip(tmp_path: Path) -> None:
    log = ReceiptLog(tmp_path / "sub" / "receipts.jsonl")
    actuation, witness = CASES["kill"]
    log.append(ActuatorReceipt(fault_id="f", at=1.0, actuation=actuation))
    log.append(WitnessReceipt(fault_id="f", at=2.0, witness=witness, verdict="witnessed"))
    back = log.read()
    assert [type(r).__name__ for r in back] == ["ActuatorReceipt", "WitnessReceipt"]
    assert back[0].actuation == actuation and back[1].witness == witness
