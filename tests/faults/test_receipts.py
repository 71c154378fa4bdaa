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
        KillActuation(call_id="r:4", pid=10, start_identity="boot-1:4711", in_flight=True),
        KillWitness(
            call_id="r:4",
            pid=10,
            start_identity="boot-1:4711",
            wait_status=-9,
            proxy_saw_call=True,
            proxy_forwarded_bytes=0,
            committed=False,
            client_answered=False,
        ),
    ),
    "partition": (
        PartitionActuation(call_id="r:4", seconds=1.0),
        PartitionWitness(
            call_id="r:4",
            agent_call_failed=True,
            agent_dropped_bytes=140,
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


# -- witnesses only the fault can satisfy (issue 22, section 4) ------------------------------------------


def test_a_partition_the_agents_call_never_met_is_not_witnessed() -> None:
    """The attack: a 10 ms partition, over before the agent's call; the harness's own probe was dropped
    (so the proxy's total drop counter moved and the proxied probe failed), the agent's call went through."""
    partition, seen = CASES["partition"]
    probe_only = seen.model_copy(update={"agent_call_failed": False, "agent_dropped_bytes": 0})
    outcome, reasons = verdict(partition.model_copy(update={"seconds": 0.01}), probe_only)
    assert outcome == "invalid_injection"
    assert reasons == [
        "the agent's call got its answer: it never met the partition",
        "the proxy dropped none of the agent's call",
    ]
    # Either half alone is not enough: the agent's failure without the proxy's drop, and the reverse.
    assert verdict(partition, seen.model_copy(update={"agent_dropped_bytes": 0}))[0] == "invalid_injection"
    assert verdict(partition, seen.model_copy(update={"agent_call_failed": False}))[0] == "invalid_injection"
    assert verdict(partition, seen.model_copy(update={"call_id": "r:5"}))[1] == [
        "the witness is of another call"
    ]


def test_a_kill_receipt_whose_start_identity_does_not_match_is_rejected() -> None:
    kill, dead = CASES["kill"]
    why = "the signalled process is not the server the harness started (pid or start identity differs)"
    # The pid was reused by another process: same pid, another start time.
    assert verdict(kill, dead.model_copy(update={"start_identity": "boot-1:9999"})) == (
        "invalid_injection",
        [why],
    )
    assert verdict(kill.model_copy(update={"start_identity": None}), dead) == ("invalid_injection", [why])
    assert verdict(kill, dead.model_copy(update={"pid": 11})) == ("invalid_injection", [why])


def test_start_identity_reads_the_kernel() -> None:
    import os
    import subprocess
    import sys

    from agentrel.harness.faults.process import start_identity

    mine = start_identity(os.getpid())
    assert mine is not None and mine == start_identity(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        theirs = start_identity(child.pid)
        assert theirs is not None and theirs != mine and theirs.split(":")[0] == mine.split(":")[0]
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
    assert start_identity(child.pid) is None  # reaped: no identity to match
