"""Receipts: what an actuator says it did, what a witness saw, and the pure verdict between them.

An actuator receipt is the injector's own claim. A witness receipt is gathered from sources the actuator
does not control (the kernel's wait status, the boot id and pid the server itself reports, the client's
transport log, Postgres's commit evidence read on the owner's connection, probes). `verdict(actuator,
witness)` takes data and returns data: `witnessed` only when the witness shows the fault landed and
agrees with the claim; otherwise `invalid_injection`, with every reason. An injector that silently does
nothing therefore cannot pass: its claim is contradicted by what the witness saw.

`ReceiptLog` appends one JSON line per receipt and fsyncs it before returning, so the harness has the
receipts on disk before recovery starts (a harness crash during recovery cannot lose them).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from agentrel.harness.frozen import Frozen

FaultKind = Literal["restart", "lost_response", "kill", "partition"]
FAULT_KINDS: tuple[FaultKind, ...] = ("restart", "lost_response", "kill", "partition")
Outcome = Literal["witnessed", "invalid_injection"]
SIGKILL_STATUS = -9  # Popen's return code for a child killed by signal 9


# -- actuator receipts (the injector's claims) -----------------------------------------------------------
class RestartActuation(Frozen):
    kind: Literal["restart"] = "restart"
    old_pid: int
    old_boot_id: str
    new_pid: int  # from the new server's READY line
    new_boot_id: str


class LostResponseActuation(Frozen):
    kind: Literal["lost_response"] = "lost_response"
    call_id: str
    armed: bool  # the proxy was told to swallow the next response


class KillActuation(Frozen):
    kind: Literal["kill"] = "kill"
    call_id: str
    pid: int
    # The signalled process's start identity as the kernel gave it just before the signal
    # (`start_identity`: kernel boot id + start time from /proc/<pid>/stat), so a reused pid cannot pass.
    start_identity: str | None
    signal: int = 9
    in_flight: bool  # the call's transaction was seen open (pg_stat_activity) when the signal was sent


class PartitionActuation(Frozen):
    kind: Literal["partition"] = "partition"
    call_id: str  # the agent's call the partition was raised for
    seconds: float


Actuation = Annotated[
    RestartActuation | LostResponseActuation | KillActuation | PartitionActuation, Field(discriminator="kind")
]


# -- witness receipts (what independent sources showed) ------------------------------------------------
class RestartWitness(Frozen):
    kind: Literal["restart"] = "restart"
    pid_before: int | None  # as the server itself reported in the client's last answer before
    boot_before: str | None
    pid_after: int | None  # in the client's first answer after
    boot_after: str | None
    old_wait_status: int | None  # waitpid of the old process: None = it is still running
    client_disconnected: bool  # the client's transport log, after the actuation
    client_reconnected: bool


class LostResponseWitness(Frozen):
    kind: Literal["lost_response"] = "lost_response"
    call_id: str
    committed: bool  # agentrel_meta.call_commits holds the call id (read as the owner)
    proxy_upstream_bytes: int
    proxy_forwarded_bytes: int
    client_timed_out: bool
    client_answered: bool


class KillWitness(Frozen):
    kind: Literal["kill"] = "kill"
    call_id: str
    pid: int  # the child the harness started, whose wait status this is
    start_identity: str | None  # read from /proc when the harness started it (before any fault)
    wait_status: int | None  # waitpid of the killed process
    proxy_saw_call: bool
    proxy_forwarded_bytes: int  # of that call's response
    committed: bool | None  # None: the call's backend was still alive, so Postgres could not yet say
    client_answered: bool


class PartitionWitness(Frozen):
    kind: Literal["partition"] = "partition"
    # The agent's side, which no probe of the harness can stand in for: its call got no answer (the
    # client's transport log: a timeout or a lost connection), and the proxy dropped bytes of that call.
    call_id: str
    agent_call_failed: bool
    agent_dropped_bytes: int
    proxied_probe_ok: bool  # during the partition, through the proxy
    control_probe_ok: bool  # during the partition, straight to the server
    control_boot_id: str | None
    dropped_bytes: int  # the proxy's drop counter, change over the partition
    healed_probe_ok: bool  # after the heal, through the proxy
    healed_boot_id: str | None


Witness = Annotated[
    RestartWitness | LostResponseWitness | KillWitness | PartitionWitness, Field(discriminator="kind")
]


class ActuatorReceipt(Frozen):
    fault_id: str
    at: float  # wall-clock seconds
    actuation: Actuation


class WitnessReceipt(Frozen):
    fault_id: str
    at: float
    witness: Witness | None  # None: no witness could be gathered
    verdict: Outcome
    reasons: list[str] = Field(default_factory=list)


# -- verdicts -------------------------------------------------------------------------------------------
def verdict(actuation: Actuation, witness: Witness | None) -> tuple[Outcome, list[str]]:
    """`witnessed` iff the witness shows the fault landed as the actuator claims; otherwise every reason."""
    if witness is None:
        return "invalid_injection", ["no witness"]
    if witness.kind != actuation.kind:
        return "invalid_injection", [f"witness of a {witness.kind} for a {actuation.kind}"]
    check = {"restart": _restart, "lost_response": _lost, "kill": _kill, "partition": _partition}[
        actuation.kind
    ]
    reasons = [why for ok, why in check(actuation, witness) if not ok]  # type: ignore[operator]
    return ("witnessed" if not reasons else "invalid_injection"), reasons


def _restart(a: RestartActuation, w: RestartWitness) -> list[tuple[bool, str]]:
    return [
        (None not in (w.pid_before, w.pid_after, w.boot_before, w.boot_after), "no answer before or after"),
        (w.pid_before != w.pid_after, "the server's pid did not change"),
        (w.boot_before != w.boot_after, "the server's boot id did not change"),
        (w.old_wait_status is not None, "the old process is still running"),
        (w.client_disconnected, "the client saw no disconnect"),
        (w.client_reconnected, "the client did not reconnect"),
        (w.pid_before == a.old_pid and w.boot_before == a.old_boot_id, "the old server is not the claimed"),
        (w.pid_after == a.new_pid and w.boot_after == a.new_boot_id, "the new server is not the claimed"),
    ]


def _lost(a: LostResponseActuation, w: LostResponseWitness) -> list[tuple[bool, str]]:
    return [
        (w.call_id == a.call_id, "the witness is of another call"),
        (w.committed, "Postgres holds no commit evidence for the call"),
        (w.proxy_upstream_bytes > 0, "the proxy saw no response from the server"),
        (w.proxy_forwarded_bytes == 0, "the proxy forwarded the response"),
        (w.client_timed_out, "the client recorded no transport timeout"),
        (not w.client_answered, "the client got an answer"),
    ]


def _kill(a: KillActuation, w: KillWitness) -> list[tuple[bool, str]]:
    return [
        (a.in_flight, "the actuator did not catch the call in flight (its transaction open)"),
        (w.call_id == a.call_id, "the witness is of another call"),
        (a.signal == 9 and w.wait_status == SIGKILL_STATUS, f"wait status {w.wait_status}, not SIGKILL"),
        (
            w.pid == a.pid and a.start_identity is not None and w.start_identity == a.start_identity,
            "the signalled process is not the server the harness started (pid or start identity differs)",
        ),
        (w.proxy_saw_call, "the proxy never saw the in-flight call"),
        (w.proxy_forwarded_bytes == 0, "the call's response reached the client: it was not in flight"),
        (w.committed is not None, "Postgres cannot yet say whether the call committed"),
        (not w.client_answered, "the client got an answer"),
    ]


def _partition(a: PartitionActuation, w: PartitionWitness) -> list[tuple[bool, str]]:
    return [
        (w.call_id == a.call_id, "the witness is of another call"),
        (w.agent_call_failed, "the agent's call got its answer: it never met the partition"),
        (w.agent_dropped_bytes > 0, "the proxy dropped none of the agent's call"),
        (not w.proxied_probe_ok, "a probe through the proxy got through during the partition"),
        (w.control_probe_ok, "the control probe straight to the server failed: not a partition"),
        (w.dropped_bytes > 0, "the proxy dropped nothing"),
        (w.healed_probe_ok, "the probe through the proxy still fails after the heal"),
        (w.control_boot_id is not None and w.healed_boot_id == w.control_boot_id, "a different server after"),
    ]


class ReceiptLog:
    """Append-only JSON lines, each flushed and fsynced before `append` returns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def append(self, receipt: ActuatorReceipt | WitnessReceipt) -> None:
        kind = "actuator" if isinstance(receipt, ActuatorReceipt) else "witness"
        line = f'{{"receipt":"{kind}","body":{receipt.model_dump_json()}}}\n'
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def read(self) -> list[ActuatorReceipt | WitnessReceipt]:
        import json

        out: list[ActuatorReceipt | WitnessReceipt] = []
        for line in self.path.read_text().splitlines():
            data = json.loads(line)
            model = ActuatorReceipt if data["receipt"] == "actuator" else WitnessReceipt
            out.append(model.model_validate(data["body"]))
        return out
