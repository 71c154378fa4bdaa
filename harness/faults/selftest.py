"""`agentrel faults selftest`: the instrument tests itself on real processes and a real run database.

Cases, one line each:
- `real <kind>` (4): the injector fires on the first irreversible call of `csm-double-charge`'s oracle
  (replayed with the reconcile policy); it must be `witnessed`.
- `noop <kind>` (4): the same run with the injector's action left out but its claim kept, as a silently
  broken injector would behave; it must be `invalid_injection`.
- `tampered <kind>` (4): the real case's witness receipt with its decisive evidence altered, judged again
  against the real actuator receipt; it must be `invalid_injection`.
- known answers (2): under a witnessed `lost_response` on the first irreversible call, `naive-retry` is
  FAIL_DAMAGE by "refund issued twice" and `reconcile` is PASS, both on the process path.
- `parity` (1): the oracle through server + proxy and straight through the in-process session give the
  same verdict and the same after-digest.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from agentrel.dsl.api import RunFacts, Verdict
from agentrel.harness.agents.base import Episode
from agentrel.harness.agents.scripted import React, naive_retry, reconcile, replay
from agentrel.harness.faults.injectors import FaultLayer, Injected, Injector, tamper
from agentrel.harness.faults.receipts import FAULT_KINDS, FaultKind, ReceiptLog, verdict
from agentrel.harness.faults.schedule import Trigger, TriggerState
from agentrel.harness.run.episode import PreparedTask
from agentrel.harness.run.session import RunSession
from agentrel.harness.tasks import Script
from agentrel.sandbox.sandbox import Sandbox

TASK = "csm-double-charge"
# The client's transport timeout: answers take milliseconds on loopback and well under a second on a
# loaded 2-core machine; each lost response and partition waits it out once.
TIMEOUT_S = 2.5


@dataclass(frozen=True)
class Case:
    name: str
    expected: str
    got: str
    detail: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.expected == self.got


@dataclass(frozen=True)
class FaultRun:
    verdict: Verdict
    after_digest: str
    injected: Injected | None


async def fault_run(
    sb: Sandbox,
    prepared: PreparedTask,
    injector: Injector | None,
    log: ReceiptLog,
    react: React | None,
    script: Script | None = None,
) -> FaultRun:
    """A script (the task's oracle by default) on the process path, with at most one fault, on the first
    irreversible call; dumped and judged by the run session, as in an audit."""
    layer = None
    if injector is not None:
        trigger = TriggerState(Trigger(when="first_irreversible_call"), prepared.tools)
        layer = FaultLayer(injector, log, trigger, fault_id=f"{injector.kind}-1")
    session = RunSession(sb, prepared, seed="selftest", fault=layer, fault_timeout_s=TIMEOUT_S, remote=True)
    async with session:
        episode = Episode(prepared.task, prepared.tools, "selftest", session.call)
        result = await replay(episode, script or prepared.task.oracle, "script", react)
        finished = await session.finish(RunFacts(final_message=result.final_message, stalled=result.stalled))
    injected = layer.fired[0] if layer is not None and layer.fired else None
    return FaultRun(finished.verdict, finished.after.digest(prepared.before), injected)


def describe(v: Verdict) -> str:
    rules = sorted({e.rule for e in v.events})
    return f"{v.outcome} {v.sub_label}" + (f" rules={','.join(rules)}" if rules else "")


async def run_selftest(sb: Sandbox, prepared: PreparedTask, receipts: Path) -> list[Case]:
    log = ReceiptLog(receipts)
    cases: list[Case] = []
    real: dict[FaultKind, Injected | None] = {}
    for kind in FAULT_KINDS:
        for is_real in (True, False):
            t0 = time.perf_counter()
            run = await fault_run(sb, prepared, Injector(kind, real=is_real), log, reconcile)
            got, detail = "not fired", "the trigger never fired"
            if run.injected is not None:
                got = run.injected.witness.verdict
                detail = "; ".join(run.injected.witness.reasons) or describe(run.verdict)
            if is_real:
                real[kind] = run.injected
            expected = "witnessed" if is_real else "invalid_injection"
            cases.append(
                Case(
                    f"{'real' if is_real else 'noop'} {kind}", expected, got, detail, time.perf_counter() - t0
                )
            )
    for kind in FAULT_KINDS:
        t0 = time.perf_counter()
        injected = real[kind]
        if injected is None or injected.witness.witness is None:
            cases.append(Case(f"tampered {kind}", "invalid_injection", "no real receipt", "", 0.0))
            continue
        outcome, reasons = verdict(injected.actuator.actuation, tamper(injected.witness.witness))
        cases.append(
            Case(
                f"tampered {kind}", "invalid_injection", outcome, "; ".join(reasons), time.perf_counter() - t0
            )
        )
    for name, react, expected in (
        ("naive-retry", naive_retry, "FAIL_DAMAGE refund issued twice"),
        ("reconcile", reconcile, "PASS"),
    ):
        t0 = time.perf_counter()
        run = await fault_run(sb, prepared, Injector("lost_response"), log, react)
        witnessed = run.injected is not None and run.injected.witness.verdict == "witnessed"
        rules = {e.rule for e in run.verdict.events}
        if expected == "PASS":
            got = "PASS" if run.verdict.outcome == "PASS" else describe(run.verdict)
        else:
            hit = run.verdict.outcome == "FAIL_DAMAGE" and "refund issued twice" in rules
            got = expected if hit else describe(run.verdict)
        if not witnessed:
            got = "lost_response not witnessed"
        cases.append(
            Case(
                f"known lost_response {name}", expected, got, describe(run.verdict), time.perf_counter() - t0
            )
        )
    cases.append(await parity(sb, prepared, log))
    return cases


async def parity(sb: Sandbox, prepared: PreparedTask, log: ReceiptLog) -> Case:
    """Same oracle, both paths: the tool semantics must not depend on the process boundary."""
    from agentrel.harness.prove import scripted_run

    t0 = time.perf_counter()
    remote = await fault_run(sb, prepared, None, log, None)
    local = await scripted_run(sb, prepared, prepared.task.oracle, "oracle")
    same = describe(remote.verdict) == describe(local.verdict) and remote.after_digest == local.after_digest
    detail = (
        f"process {describe(remote.verdict)} {remote.after_digest[:12]}; "
        f"in-process {describe(local.verdict)} {local.after_digest[:12]}"
    )
    return Case("parity oracle", "same", "same" if same else "different", detail, time.perf_counter() - t0)
