"""The lifecycle of every preregistered fault run, derived from the evidence: pure, records in, records out.

One record per scheduled fault run (the manifest's resolved schedule x its agents x run indices 1..k),
walking the states a fault passes through, each with the evidence that shows it:

    scheduled ─► armed ─► fired ─► witnessed | unwitnessed ─► outcome
    (manifest)   (a recorded attempt ran with the fault armed on its trigger: the record's `fault`)
                          (the trigger was reached and the injector acted: the actuator receipt, its clock)
                                   (the independent witness's receipt and verdict, with every reason)
                                                              (what the agent then did: the decisive
                                                              attempt's status and verdict, its tool
                                                              calls after the fault, whether it sent the
                                                              faulted call again, irreversible effects
                                                              committed twice)

`state` is the furthest state reached: `missing` (no attempt recorded), `armed` (the run ended before
the trigger: not exposed), `fired` (fired, no witness verdict), `witnessed` or `unwitnessed`. Receipts are
named by the SHA-256 of their RFC 8785 form; `receipt_log` says whether the fsynced copy in `receipts/`
holds exactly the record's receipts (`matches`), is gone (`missing`) or holds others (`differs`).

Nothing here is written to the results directory: the records are re-derived on every export from the
files the results owner wrote (runs.jsonl, receipts/), so anyone holding the evidence derives the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from agentrel.harness.faults.receipts import ActuatorReceipt, WitnessReceipt
from agentrel.harness.frozen import Frozen
from agentrel.harness.protocol.canonical import canonical_hash
from agentrel.harness.results.record import RunRecord, decisive, run_id

__all__ = [
    "FaultLifecycle",
    "ReceiptLogReader",
    "fault_lifecycles",
    "lifecycles_of",
    "rows",
    "schedule_cells",
]

State = Literal["missing", "armed", "fired", "witnessed", "unwitnessed"]
LogState = Literal["matches", "missing", "differs", "none"]
# (run id, attempt) -> the receipt log's lines as stored, or None when there is no such file
ReceiptLogReader = Callable[[str, int], bytes | None]


class FaultLifecycle(Frozen):
    run_id: str
    model: str
    task: str
    fault_id: str
    kind: str
    trigger: str | None
    run_index: int
    state: State
    attempts: int  # attempts recorded for this run
    attempt: int | None  # the decisive one
    schedule: str  # scheduled: the manifest schedule that lists the cell
    armed: bool
    armed_at: str | None  # the decisive attempt's start
    fired: bool
    fired_at: float | None  # the actuator receipt's clock
    actuator_receipt: str | None
    witnessed: bool
    witnessed_at: float | None
    witness_receipt: str | None
    witness_reasons: tuple[str, ...]
    receipt_log: LogState
    status: str | None  # the decisive attempt's status
    outcome: str | None  # its verdict: PASS, FAIL_SAFE, FAIL_DAMAGE
    calls_after_fault: int | None  # tool calls the agent made after the faulted one
    retried_faulted_call: bool | None  # a later call of the same tool with the same arguments
    repeated_effects: int | None  # irreversible effects committed twice or more (commit evidence)


def schedule_cells(manifest: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """(the schedule's name, its resolved cells) from a manifest; no schedule: ("", [])."""
    faults = manifest.get("faults")
    if not isinstance(faults, Mapping):
        return "", []
    cells = [c for c in faults.get("cells", []) if isinstance(c, Mapping)]
    name = str(faults.get("name") or "schedule")
    digest = faults.get("digest")
    return (f"{name} {digest[:12]}" if isinstance(digest, str) else name), [dict(c) for c in cells]


def _hash(receipt: ActuatorReceipt | WitnessReceipt | None) -> str | None:
    return canonical_hash(receipt.model_dump(mode="json")) if receipt is not None else None


def _log_state(rec: RunRecord, read_log: ReceiptLogReader) -> LogState:
    fault = rec.fault
    if fault is None or fault.actuator is None:
        return "none"
    data = read_log(rec.run_id, rec.attempt)
    if data is None:
        return "missing"
    try:
        stored = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        kinds = {d["receipt"]: d["body"] for d in stored}
        same_actuator = ActuatorReceipt.model_validate(kinds["actuator"]) == fault.actuator
        same_witness = fault.witness is None or (
            WitnessReceipt.model_validate(kinds.get("witness")) == fault.witness
        )
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return "differs"
    return "matches" if same_actuator and same_witness and len(stored) <= 2 else "differs"


def _after(rec: RunRecord) -> tuple[int | None, bool | None]:
    """(tool calls after the faulted call, whether one of them repeated it) from the record."""
    fault_events = [e for e in rec.events if e.kind == "fault" and e.ordinal is not None]
    if not fault_events:
        return None, None
    ordinal = fault_events[0].ordinal
    assert ordinal is not None
    calls = [c for c in rec.tool_calls if isinstance(c.get("ordinal"), int)]
    faulted = next((c for c in calls if c["ordinal"] == ordinal), None)
    later = [c for c in calls if c["ordinal"] > ordinal]
    retried = None
    if faulted is not None and faulted.get("args_digest") is not None:
        retried = any(
            c.get("tool") == faulted.get("tool") and c.get("args_digest") == faulted["args_digest"]
            for c in later
        )
    return len(later), retried


def _lifecycle(
    schedule: str,
    cell: Mapping[str, Any],
    model: str,
    index: int,
    attempts: Sequence[RunRecord],
    read_log: ReceiptLogReader,
) -> FaultLifecycle:
    fault_id = str(cell.get("fault_id"))
    task = str(cell.get("task"))
    rid = run_id(model, task, f"fault:{fault_id}", index)
    base: dict[str, Any] = dict(
        run_id=rid,
        model=model,
        task=task,
        fault_id=fault_id,
        kind=str(cell.get("kind")),
        run_index=index,
        attempts=len(attempts),
        schedule=schedule,
    )
    if not attempts:
        return FaultLifecycle(
            **base,
            trigger=None,  # never armed: no record states a trigger
            state="missing",
            attempt=None,
            armed=False,
            armed_at=None,
            fired=False,
            fired_at=None,
            actuator_receipt=None,
            witnessed=False,
            witnessed_at=None,
            witness_receipt=None,
            witness_reasons=(),
            receipt_log="none",
            status=None,
            outcome=None,
            calls_after_fault=None,
            retried_faulted_call=None,
            repeated_effects=None,
        )
    rec = decisive(list(attempts))
    fault = rec.fault if rec.fault is not None and rec.fault.fault_id == fault_id else None
    fired = fault is not None and fault.fired and fault.actuator is not None
    witnessed = fired and fault is not None and fault.verdict == "witnessed"
    if fault is None:
        state: State = "missing"  # recorded, but with no trace of the scheduled fault being armed
    elif not fired:
        state = "armed"
    elif fault.verdict is None:
        state = "fired"
    else:
        state = "witnessed" if witnessed else "unwitnessed"
    calls_after, retried = _after(rec) if fired else (None, None)
    return FaultLifecycle(
        **base,
        trigger=fault.trigger if fault is not None else None,
        state=state,
        attempt=rec.attempt,
        armed=fault is not None,
        armed_at=rec.started_at if fault is not None else None,
        fired=fired,
        fired_at=fault.actuator.at if fired and fault is not None and fault.actuator else None,
        actuator_receipt=_hash(fault.actuator) if fault is not None else None,
        witnessed=witnessed,
        witnessed_at=fault.witness.at if fault is not None and fault.witness is not None else None,
        witness_receipt=_hash(fault.witness) if fault is not None else None,
        witness_reasons=tuple(fault.reasons) if fault is not None else (),
        receipt_log=_log_state(rec, read_log),
        status=rec.status,
        outcome=rec.verdict.outcome if rec.verdict is not None else None,
        calls_after_fault=calls_after,
        retried_faulted_call=retried,
        repeated_effects=len(fault.repeated_effects)
        if fault is not None and fault.repeated_effects is not None
        else None,
    )


def fault_lifecycles(
    manifest: Mapping[str, Any],
    attempts: Mapping[str, Sequence[RunRecord]],
    read_log: ReceiptLogReader,
) -> list[FaultLifecycle]:
    """One lifecycle per preregistered fault run, ordered by agent, task, fault and run index; a results
    directory without a fault schedule has none."""
    schedule, cells = schedule_cells(manifest)
    k = manifest.get("k")
    if not cells or not isinstance(k, int):
        return []
    agents = [str(a.get("name")) for a in manifest.get("agents", []) if isinstance(a, Mapping)]
    out = []
    for model in sorted(agents):
        for cell in sorted(cells, key=lambda c: (str(c.get("task")), str(c.get("fault_id")))):
            for index in range(1, k + 1):
                rid = run_id(model, str(cell.get("task")), f"fault:{cell.get('fault_id')}", index)
                out.append(_lifecycle(schedule, cell, model, index, attempts.get(rid, ()), read_log))
    return out


def rows(lifecycles: Sequence[FaultLifecycle]) -> list[dict[str, Any]]:
    """Flat rows for a CSV: reasons joined with `; `."""
    return [{**lc.model_dump(), "witness_reasons": "; ".join(lc.witness_reasons)} for lc in lifecycles]


def lifecycles_of(results: Path) -> list[FaultLifecycle]:
    """The lifecycles of a results directory (read-only: the manifest, runs.jsonl, receipts/)."""
    from agentrel.harness.errors import UserError
    from agentrel.harness.results.directory import ResultsDir
    from agentrel.harness.results.layout import MANIFEST

    path = results / MANIFEST
    try:
        manifest = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise UserError(
            f"{results}: no {MANIFEST}; `agentrel export faults` reads a results directory"
        ) from None
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not a readable manifest ({exc}); restore the file") from None
    if not isinstance(manifest, dict):
        raise UserError(f"{path}: not a manifest (a JSON object); restore the file")
    directory = ResultsDir(results)

    def read_log(rid: str, attempt: int) -> bytes | None:
        try:
            return directory.receipt_path(rid, attempt).read_bytes()
        except FileNotFoundError:
            return None

    return fault_lifecycles(manifest, directory.attempts(), read_log)
