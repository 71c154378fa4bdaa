"""On real processes: a partition is witnessed only by the agent's own call meeting it, and a kill only
names the server the harness started (issue 22, section 4). The receipt-level cases are in
test_receipts.py; here the injectors gather their witnesses from the real proxy, client and kernel."""

from __future__ import annotations

import asyncio

import pytest

from agentrel.harness.agents.scripted import reconcile
from agentrel.harness.faults.injectors import Injector
from agentrel.harness.faults.receipts import ReceiptLog
from agentrel.harness.faults.selftest import fault_run


class LateToTheCall(Injector):
    """The real partition injector, with the agent's call sent only after the partition has healed:
    the harness's probes meet the partition, the agent's call never does."""

    async def inject(self, rig, call, next, log, fault_id):  # type: ignore[no-untyped-def]
        async def late(c):  # type: ignore[no-untyped-def]
            await asyncio.sleep(rig.proxy.partition_left_s() + 0.05)
            return await next(c)

        return await super().inject(rig, call, late, log, fault_id)


@pytest.mark.parametrize("seconds", [0.01, 0.3])
def test_a_partition_the_agents_call_never_met_is_not_witnessed(sandbox, double_charge, tmp_path, seconds):
    log = ReceiptLog(tmp_path / "receipts.jsonl")
    run = asyncio.run(
        fault_run(sandbox, double_charge, LateToTheCall("partition", partition_s=seconds), log, reconcile)
    )
    assert run.injected is not None
    w = run.injected.witness
    assert w.verdict == "invalid_injection", w
    assert "the agent's call got its answer: it never met the partition" in w.reasons
    assert w.witness is not None and w.witness.kind == "partition"
    assert w.witness.agent_call_failed is False and w.witness.agent_dropped_bytes == 0
    if seconds >= 0.3:
        # The attack is real: every probe-side check the old witness relied on is satisfied (the proxied
        # probe was dropped, the control probe answered, the drop counter moved, the heal answered), so
        # only the agent-side evidence refuses it.
        pw = w.witness
        assert not pw.proxied_probe_ok and pw.control_probe_ok and pw.dropped_bytes > 0
        assert pw.healed_probe_ok and pw.healed_boot_id == pw.control_boot_id
        assert w.reasons == [
            "the agent's call got its answer: it never met the partition",
            "the proxy dropped none of the agent's call",
        ]


def test_a_real_partition_and_kill_are_witnessed_with_the_agents_call_and_the_start_identity(
    sandbox, double_charge, tmp_path
):
    log = ReceiptLog(tmp_path / "receipts.jsonl")
    part = asyncio.run(fault_run(sandbox, double_charge, Injector("partition"), log, reconcile))
    assert part.injected is not None and part.injected.witness.verdict == "witnessed", part.injected.witness
    pw = part.injected.witness.witness
    assert pw is not None and pw.kind == "partition" and pw.agent_call_failed and pw.agent_dropped_bytes > 0
    kill = asyncio.run(fault_run(sandbox, double_charge, Injector("kill"), log, reconcile))
    assert kill.injected is not None and kill.injected.witness.verdict == "witnessed", kill.injected.witness
    ka, kw = kill.injected.actuator.actuation, kill.injected.witness.witness
    assert ka.kind == "kill" and kw is not None and kw.kind == "kill"
    assert ka.start_identity is not None and ka.start_identity == kw.start_identity and ka.pid == kw.pid
