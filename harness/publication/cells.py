"""The preregistered cell set of a manifest: every run the frozen protocol promises, and its stratum.

A cell is one run: (model, task, condition, fault, run index), named as the harness names its run
(`harness.run.matrix.RunPlan.run_id`). The unscheduled cells are the audit's matrix, models x tasks x
conditions x run indices 1..k (`harness.run.matrix.expand`), less the (task, condition) pairs the manifest
declares excluded. The fault-scheduled cells are the manifest's resolved schedule (`faults.cells`: task,
fault id, kind) x models x 1..k, each under the cell condition `fault:<id>` and with its clean twin's
seed. A stratum is (condition, fault kind, task); an unscheduled cell's fault kind is "none".

`excluded_cells` ([{task, condition, reason}]) is read for the (task, condition) pairs an audit leaves
out of its plans, such as a task that an injecting condition cannot attack; the audit does not write it
yet, so such cells count as missing until it does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentrel.harness.faults.receipts import FaultKind
from agentrel.harness.faults.schedule import fault_condition
from agentrel.harness.results.record import run_id

__all__ = [
    "NO_FAULT",
    "Cell",
    "CellInfo",
    "CellSet",
    "FaultCellSpec",
    "cell_id",
    "fault_kinds",
    "registered_cells",
]

NO_FAULT = "none"
TWIN_CONDITION = "clean"  # a fault run is the clean run of its index with the fault added


class Cell(NamedTuple):
    model: str
    task: str
    condition: str  # as the record carries it: `fault:<id>` for a fault-scheduled cell
    fault: str | None
    run_index: int


Stratum = tuple[str, str, str]  # (condition, fault kind, task)


class CellInfo(NamedTuple):
    """What every cell of one (task, condition, fault) shares, whatever its model and index."""

    fault_kind: str  # NO_FAULT for an unscheduled cell
    seed_condition: str  # the condition whose seed the run draws: its own, or the clean twin's
    stratum: Stratum


class FaultCellSpec(BaseModel):
    """One entry of the manifest's resolved schedule (harness.faults.schedule.FaultCell)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    task: str
    fault_id: str = Field(min_length=1)
    kind: FaultKind


class ExcludedCell(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    task: str
    condition: str
    reason: str = ""


class CellSet(NamedTuple):
    cells: dict[Cell, CellInfo]
    problems: tuple[str, ...]  # manifest entries that could not be read: the set is then not trusted


def cell_id(cell: Cell) -> str:
    """The run id the harness gives this cell's run."""
    return run_id(cell.model, cell.task, cell.condition, cell.run_index)


def _names(entries: Any, key: str) -> list[str]:
    out = []
    for entry in entries or []:
        if isinstance(entry, str):
            out.append(entry)
        elif isinstance(entry, Mapping) and isinstance(entry.get(key), str):
            out.append(entry[key])
        else:
            raise ValueError(f"an entry without a {key!r}: {str(entry)[:80]}")
    return out


def registered_cells(manifest: Mapping[str, Any]) -> CellSet:
    """Expand the manifest into its cells (see the module docstring); problems make the set untrusted."""
    problems: list[str] = []
    try:
        models = _names(manifest.get("agents"), "name")
        tasks = _names(manifest.get("tasks"), "id")
        conditions = _names(manifest.get("conditions"), "name")
    except ValueError as exc:
        return CellSet({}, (f"manifest: {exc}",))
    k = manifest.get("k")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        return CellSet({}, (f"manifest: k is {k!r}, not a positive integer",))
    try:
        declared = [ExcludedCell.model_validate(e) for e in manifest.get("excluded_cells") or []]
        excluded = {(e.task, e.condition) for e in declared}
    except ValidationError as exc:
        excluded, problems = set(), [*problems, f"manifest: excluded_cells: {exc.errors()[0]['msg']}"]
    shared = {(t, c): CellInfo(NO_FAULT, c, (c, NO_FAULT, t)) for t in tasks for c in conditions}
    cells: dict[Cell, CellInfo] = {
        Cell(m, t, c, None, i): shared[t, c]
        for i in range(1, k + 1)
        for m in models
        for t in tasks
        for c in conditions
        if (t, c) not in excluded
    }
    faults = manifest.get("faults")
    if faults is not None:
        specs, problem = _fault_specs(faults)
        if problem:
            problems.append(problem)
        for spec in specs:
            condition = fault_condition(spec.fault_id)
            info = CellInfo(spec.kind, TWIN_CONDITION, (condition, spec.kind, spec.task))
            for i in range(1, k + 1):
                for m in models:
                    cells[Cell(m, spec.task, condition, spec.fault_id, i)] = info
    return CellSet(cells, tuple(problems))


def fault_kinds(manifest: Mapping[str, Any]) -> dict[tuple[str, str, str | None], str]:
    """(task, condition, fault) -> fault kind for the fault-scheduled cells; any other is NO_FAULT."""
    faults = manifest.get("faults")
    specs = _fault_specs(faults)[0] if faults is not None else []
    return {(s.task, fault_condition(s.fault_id), s.fault_id): s.kind for s in specs}


def _fault_specs(faults: Any) -> tuple[list[FaultCellSpec], str | None]:
    if not isinstance(faults, Mapping) or not isinstance(faults.get("cells"), list):
        return [], "manifest: faults has no list of cells ({task, fault_id, kind}) to expand"
    try:
        specs = [FaultCellSpec.model_validate(c) for c in faults["cells"]]
    except ValidationError as exc:
        err = exc.errors()[0]
        return [], f"manifest: faults.cells: {'.'.join(map(str, err['loc']))}: {err['msg']}"
    keys = [(s.task, s.fault_id) for s in specs]
    if len(keys) != len(set(keys)):
        return [], "manifest: faults.cells: a fault is scheduled twice on one task"
    return specs, None
