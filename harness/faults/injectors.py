"""The four faults. Each injector acts (or, as its no-op twin, only claims to), fsyncs its actuator
receipt, lets the triggered call meet the fault, gathers its witness from sources it does not control,
fsyncs the witness receipt with its verdict, and only then lets recovery start.

Witness sources, per fault (never the injector's own account):
- restart: the pid and boot id the server itself reports in the client's answers before and after; the
  kernel's wait status of the old process; the client's transport log (disconnect, reconnect).
- lost_response: Postgres's commit evidence for the call id (owner connection); the proxy's byte counts
  for that exchange; the client's transport log (a timeout, no answer).
- kill: the kernel's wait status; the proxy's record of the call's request (and that no response was
  forwarded); Postgres's commit evidence once the call's backend is gone; the client's log.
- partition: the agent's own call (its transport failed: no answer) and the proxy's drop counter for that
  call, so no probe of the harness can stand in for the agent meeting it; probes on fresh connections,
  through the proxy and straight to the server; a probe through the proxy after the heal.
- kill: the signalled pid's start identity (kernel boot id + start time, /proc) must be the one the
  harness recorded when it started that server.

`FaultLayer` is the pipeline layer that fires one injector on its trigger (a schedule's semantic trigger,
`harness.faults.schedule.TriggerState`: exact from the tools' reversibility tags).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentrel.harness.faults.client import TransportEvent, post, probe
from agentrel.harness.faults.process import start_identity
from agentrel.harness.faults.receipts import (
    Actuation,
    ActuatorReceipt,
    FaultKind,
    KillActuation,
    KillWitness,
    LostResponseActuation,
    LostResponseWitness,
    PartitionActuation,
    PartitionWitness,
    ReceiptLog,
    RestartActuation,
    RestartWitness,
    Witness,
    WitnessReceipt,
    verdict,
)
from agentrel.harness.faults.rig import FaultRig
from agentrel.harness.run.pipeline import Next, ToolCall
from agentrel.sandbox.tools import ToolResult

HOLD_S = 8.0  # how long a kill's target call keeps its transaction open; the kill lands well before
PROBE_S = 0.5  # a probe expected to get through answers in milliseconds on loopback


@dataclass
class Injected:
    """One fault as it happened: both receipts, and the triggered call's result the agent saw."""

    actuator: ActuatorReceipt
    witness: WitnessReceipt
    result: ToolResult


@dataclass
class Injector:
    """One fault kind; `real=False` is its no-op twin: same claims, no action."""

    kind: FaultKind
    real: bool = True
    partition_s: float = 1.0

    async def inject(
        self, rig: FaultRig, call: ToolCall, next: Next, log: ReceiptLog, fault_id: str
    ) -> Injected:
        run = {"restart": _restart, "lost_response": _lost, "kill": _kill, "partition": _partition}[self.kind]
        receipts: list[ActuatorReceipt] = []

        def claim(actuation: Actuation) -> None:
            receipt = ActuatorReceipt(fault_id=fault_id, at=time.time(), actuation=actuation)
            log.append(receipt)  # on disk before the call meets the fault
            receipts.append(receipt)

        witness, result = await run(self, rig, call, next, claim)
        outcome, reasons = verdict(receipts[0].actuation, witness)
        receipt = WitnessReceipt(
            fault_id=fault_id, at=time.time(), witness=witness, verdict=outcome, reasons=reasons
        )
        log.append(receipt)  # on disk before recovery starts
        if self.kind == "kill" and not rig.server.alive():
            await rig.replace_server()  # recovery: the run goes on against a fresh server
        return Injected(receipts[0], receipt, result)


Claim = Callable[[Actuation], None]


async def _restart(
    inj: Injector, rig: FaultRig, call: ToolCall, next: Next, claim: Claim
) -> tuple[Witness, ToolResult]:
    old = rig.server
    answers = rig.client.answers()
    last = answers[-1] if answers else None
    # Before: the server's own report, in the client's last answer, else a probe straight to it.
    seen: dict[str, Any] | None = (
        {"pid": last.pid, "boot_id": last.boot_id} if last else await probe("127.0.0.1", old.port, 2.0)
    )
    if inj.real:
        await asyncio.to_thread(old.stop)
        new = await rig.replace_server()
        claim(
            RestartActuation(
                old_pid=old.pid, old_boot_id=old.boot_id, new_pid=new.pid, new_boot_id=new.boot_id
            )
        )
    else:
        claim(
            RestartActuation(
                old_pid=old.pid, old_boot_id=old.boot_id, new_pid=old.pid, new_boot_id=old.boot_id
            )
        )
    mark = len(rig.client.log)
    result = await next(call)
    after_log = rig.client.log[mark:]
    after = next_answer(after_log)
    witness = RestartWitness(
        pid_before=seen.get("pid") if seen else None,
        boot_before=seen.get("boot_id") if seen else None,
        pid_after=after.pid if after else None,
        boot_after=after.boot_id if after else None,
        old_wait_status=await asyncio.to_thread(old.wait_status, 0.2),
        client_disconnected=any(e.kind == "disconnect" for e in after_log),
        client_reconnected=any(e.kind == "reconnect" for e in after_log),
    )
    return witness, result


def next_answer(log: list[TransportEvent]) -> TransportEvent | None:
    return next((e for e in log if e.kind == "answer"), None)


async def _lost(
    inj: Injector, rig: FaultRig, call: ToolCall, next: Next, claim: Claim
) -> tuple[Witness, ToolResult]:
    call_id = rig.client.call_id(call.ordinal)
    if inj.real:
        rig.proxy.swallow_next_response()
    claim(LostResponseActuation(call_id=call_id, armed=True))
    result = await next(call)
    exchange = rig.proxy.counters.exchange(call_id)
    mine = [e for e in rig.client.log if e.call_id == call_id]
    witness = LostResponseWitness(
        call_id=call_id,
        committed=call_id in await rig.committed([call_id]),
        proxy_upstream_bytes=exchange.upstream_response_bytes if exchange else 0,
        proxy_forwarded_bytes=exchange.forwarded_response_bytes if exchange else 0,
        client_timed_out=any(e.kind == "timeout" for e in mine),
        client_answered=any(e.kind == "answer" for e in mine),
    )
    return witness, result


async def _kill(
    inj: Injector, rig: FaultRig, call: ToolCall, next: Next, claim: Claim
) -> tuple[Witness, ToolResult]:
    call_id, server = rig.client.call_id(call.ordinal), rig.server
    if inj.real:
        # Straight to the server, not through the proxy: the harness's own instrument, not agent traffic.
        await post("127.0.0.1", server.port, "/hold", {"seconds": HOLD_S})
    pending = asyncio.ensure_future(next(call))
    in_flight = False
    if inj.real:
        # The window is real: the proxy has forwarded the request and the server's transaction sits in
        # pg_sleep after its writes and evidence, uncommitted.
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and not in_flight:
            ex = rig.proxy.counters.exchange(call_id)
            in_flight = (
                bool(ex and ex.forwarded_request) and await rig.backend_state(server.boot_id) == "PgSleep"
            )
            if not in_flight:
                await asyncio.sleep(0.02)
        signalled = server.kill()
    else:
        signalled = start_identity(server.pid)  # the no-op twin claims the same target
    claim(
        KillActuation(
            call_id=call_id, pid=server.pid, start_identity=signalled, in_flight=in_flight or not inj.real
        )
    )
    result = await pending
    wait_status = await asyncio.to_thread(server.wait_status, 5.0 if inj.real else 0.2)
    # Whether it committed is final only once the call's backend is gone (a live one could still COMMIT).
    gone = await rig.wait_backend(server.boot_id, None, 5.0 if inj.real else 0.2)
    exchange = rig.proxy.counters.exchange(call_id)
    witness = KillWitness(
        call_id=call_id,
        pid=server.popen.pid,
        start_identity=server.start_identity,
        wait_status=wait_status,
        proxy_saw_call=exchange is not None,
        proxy_forwarded_bytes=exchange.forwarded_response_bytes if exchange else 0,
        committed=(call_id in await rig.committed([call_id])) if gone else None,
        client_answered=any(e.kind == "answer" and e.call_id == call_id for e in rig.client.log),
    )
    return witness, result


async def _partition(
    inj: Injector, rig: FaultRig, call: ToolCall, next: Next, claim: Claim
) -> tuple[Witness, ToolResult]:
    dropped0 = rig.proxy.counters.dropped_bytes
    call_id = rig.client.call_id(call.ordinal)
    if inj.real:
        rig.proxy.partition(inj.partition_s)
    claim(PartitionActuation(call_id=call_id, seconds=inj.partition_s))
    proxied, control = await asyncio.gather(
        probe("127.0.0.1", rig.proxy.port, PROBE_S), probe("127.0.0.1", rig.server.port, PROBE_S)
    )
    result = await next(call)  # the agent's call meets the partition
    await asyncio.sleep(rig.proxy.partition_left_s())
    healed = await probe("127.0.0.1", rig.proxy.port, 5.0)
    mine = [e for e in rig.client.log if e.call_id == call_id]
    witness = PartitionWitness(
        call_id=call_id,
        # The agent's own call, not a probe: its transport failed (no answer) ...
        agent_call_failed=any(e.kind in ("timeout", "disconnect") for e in mine)
        and not any(e.kind == "answer" for e in mine),
        # ... and the proxy lost bytes of exactly that call.
        agent_dropped_bytes=sum(
            e.dropped_bytes for e in rig.proxy.counters.exchanges if e.call_id == call_id
        ),
        proxied_probe_ok=proxied is not None,
        control_probe_ok=control is not None,
        control_boot_id=control.get("boot_id") if control else None,
        dropped_bytes=rig.proxy.counters.dropped_bytes - dropped0,
        healed_probe_ok=healed is not None,
        healed_boot_id=healed.get("boot_id") if healed else None,
    )
    return witness, result


class Trigger(Protocol):
    def fires(self, call: ToolCall) -> bool: ...

    def answered(self, call: ToolCall, ok: bool) -> None: ...

    def describe(self) -> str: ...


@dataclass
class FaultLayer:
    """Fires `injector` once, on the first call `trigger` accepts; every other call passes straight on.
    `rig` is the run's process path, bound by the run session once it has started the tool server."""

    injector: Injector
    log: ReceiptLog
    trigger: Trigger
    fault_id: str = "f1"
    rig: FaultRig | None = None
    name: str = "fault"
    fired: list[Injected] = field(default_factory=list)

    async def handle(self, call: ToolCall, next: Next) -> ToolResult:
        if self.fired or call.error is not None or not self.trigger.fires(call):
            result = await next(call)
            self.trigger.answered(call, result.ok)
            return result
        assert self.rig is not None, "a fault layer fires only on the process path"
        injected = await self.injector.inject(self.rig, call, next, self.log, self.fault_id)
        self.fired.append(injected)
        call.emit(
            "fault",
            fault=self.injector.kind,
            fault_id=self.fault_id,
            verdict=injected.witness.verdict,
            reasons=injected.witness.reasons,
        )
        return injected.result


def tamper(witness: Witness) -> Witness:
    """The witness with its decisive evidence altered, as a forged or corrupted receipt would be."""
    if isinstance(witness, RestartWitness):
        return witness.model_copy(update={"boot_after": witness.boot_before})
    if isinstance(witness, LostResponseWitness):
        return witness.model_copy(update={"committed": False})
    if isinstance(witness, KillWitness):
        return witness.model_copy(update={"wait_status": 0})
    return witness.model_copy(update={"proxied_probe_ok": True, "agent_call_failed": False})
