"""Preregistered fault schedules: data, resolved per task before any run, hashed into the manifest.

A schedule lists faults, each with a kind, a **semantic trigger** owned by the benchmark (never a
wall-clock offset) and, optionally, the tasks it is meant for:

    name: lost-writes
    faults:
      - {id: lost-1, kind: lost_response, trigger: {when: first_irreversible_call}}
      - {id: restart-1, kind: restart, trigger: {when: after_first_committed_write}, tasks: ["csm-*"]}
      - {id: part-3, kind: partition, trigger: {when: call, n: 3}, seconds: 1.5}

Resolution against the audit's tasks gives the cells (task, fault id). A fault without `tasks` lands on
every task where its trigger can fire; a fault whose trigger can fire on none of the tasks it names (or,
without `tasks`, on none at all) is an error before any run, since it would schedule nothing and look
like a fault that was survived. The resolved schedule is serialized as RFC 8785 canonical JSON, hashed,
and stored in the manifest, so every agent of the audit meets the same faults on the same triggers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, Literal

import rfc8785
from pydantic import Field, model_validator

from agentrel.harness.errors import UserError
from agentrel.harness.faults.receipts import FaultKind
from agentrel.harness.frozen import Frozen
from agentrel.harness.run.pipeline import ToolCall
from agentrel.harness.yamlfile import load_model
from agentrel.sandbox.tools.base import Tool

# first_irreversible_call / first_write_call: as that call is made (before it reaches the tools);
# after_first_committed_write: on the call after a write tool answered ok (committed); call: the n-th call.
TriggerKind = Literal["first_irreversible_call", "first_write_call", "after_first_committed_write", "call"]


class Trigger(Frozen):
    when: TriggerKind
    n: int | None = Field(default=None, ge=1, description="for `when: call`: the call's ordinal")

    @model_validator(mode="after")
    def _n_only_for_call(self) -> Trigger:
        if (self.when == "call") != (self.n is not None):
            raise ValueError("`n` is required for `when: call` and allowed only there")
        return self

    def can_fire(self, tools: Mapping[str, Tool]) -> bool:
        """Whether some run of a task with these tools can reach the trigger."""
        if self.when == "first_irreversible_call":
            return any(t.reversibility == "irreversible" for t in tools.values())
        if self.when in ("first_write_call", "after_first_committed_write"):
            return any(t.mutates for t in tools.values())
        return True

    def describe(self) -> str:
        return f"call {self.n}" if self.when == "call" else self.when.replace("_", " ")


class ScheduledFault(Frozen):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,39}$")
    kind: FaultKind
    trigger: Trigger
    tasks: list[str] | None = Field(default=None, min_length=1, description="task id globs; default all")
    seconds: float | None = Field(default=None, gt=0, le=30, description="a partition's length")

    @model_validator(mode="after")
    def _seconds_only_for_partition(self) -> ScheduledFault:
        if self.seconds is not None and self.kind != "partition":
            raise ValueError("`seconds` applies to a partition only")
        return self


class Schedule(Frozen):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,39}$")
    faults: list[ScheduledFault] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> Schedule:
        ids = [f.id for f in self.faults]
        if len(set(ids)) != len(ids):
            raise ValueError(f"fault ids must be unique, {sorted({i for i in ids if ids.count(i) > 1})}")
        return self


class FaultCell(Frozen):
    """One preregistered fault on one task: the unit a fault run is scheduled, witnessed and scored by."""

    task: str
    fault_id: str
    kind: FaultKind
    trigger: Trigger
    seconds: float | None = None

    @property
    def condition(self) -> str:
        """The cell's condition label in records and reports; its runs keep the clean twin's seed."""
        return fault_condition(self.fault_id)


class ResolvedSchedule(Frozen):
    name: str
    cells: list[FaultCell]

    def digest(self) -> str:
        return hashlib.sha256(rfc8785.dumps(self.model_dump(mode="json"))).hexdigest()

    def manifest_entry(self) -> dict[str, Any]:
        return {**self.model_dump(mode="json"), "digest": self.digest()}

    def for_task(self, task: str) -> list[FaultCell]:
        return [c for c in self.cells if c.task == task]

    def cell(self, task: str, fault_id: str) -> FaultCell:
        return next(c for c in self.cells if c.task == task and c.fault_id == fault_id)


def fault_condition(fault_id: str) -> str:
    return f"fault:{fault_id}"


STANDARD = Schedule(
    name="standard",
    faults=[
        ScheduledFault(id="restart", kind="restart", trigger=Trigger(when="first_write_call")),
        ScheduledFault(
            id="lost-response", kind="lost_response", trigger=Trigger(when="first_irreversible_call")
        ),
        ScheduledFault(id="kill", kind="kill", trigger=Trigger(when="first_irreversible_call")),
        ScheduledFault(id="partition", kind="partition", trigger=Trigger(when="first_irreversible_call")),
    ],
)
BUILTIN: dict[str, Schedule] = {STANDARD.name: STANDARD}


def load_schedule(arg: str) -> Schedule:
    """A built-in schedule's name, or a YAML file declaring one; every problem one line (exit 3)."""
    if arg in BUILTIN:
        return BUILTIN[arg]
    path = Path(arg)
    if path.suffix not in (".yaml", ".yml"):
        raise UserError(f"--faults {arg!r}: not a built-in schedule ({', '.join(BUILTIN)}) nor a .yaml file")
    return load_model(Schedule, path)


def resolve(schedule: Schedule, tasks: Mapping[str, Mapping[str, Tool]], source: str) -> ResolvedSchedule:
    """The schedule's cells on these tasks (task id -> its tools), in a fixed order."""
    cells: list[FaultCell] = []
    for i, fault in enumerate(schedule.faults):
        where = f"{source}: field faults[{i}] ({fault.id})"
        named = [t for t in sorted(tasks) if fault.tasks is None or any(fnmatch(t, g) for g in fault.tasks)]
        if fault.tasks is not None and not named:
            raise UserError(f"{where}: tasks {fault.tasks} match none of this audit's tasks")
        firing = [t for t in named if fault.trigger.can_fire(tasks[t])]
        if fault.tasks is not None and len(firing) < len(named):
            never = next(t for t in named if t not in firing)
            raise UserError(
                f"{where}: trigger {fault.trigger.describe()!r} can never fire on task {never} "
                "(no tool it needs); drop the task from `tasks` or choose another trigger"
            )
        if not firing:
            raise UserError(
                f"{where}: trigger {fault.trigger.describe()!r} can fire on none of this audit's tasks; "
                "choose another trigger or other tasks"
            )
        cells += [
            FaultCell(
                task=t, fault_id=fault.id, kind=fault.kind, trigger=fault.trigger, seconds=fault.seconds
            )
            for t in firing
        ]
    cells.sort(key=lambda c: (c.task, c.fault_id))
    return ResolvedSchedule(name=schedule.name, cells=cells)


class TriggerState:
    """Decides, call by call, whether the cell's trigger fires now (exactly once per run)."""

    def __init__(self, trigger: Trigger, tools: Mapping[str, Tool]) -> None:
        self.trigger = trigger
        self.tools = tools
        self.wrote = False  # a write tool answered ok earlier in the run

    def fires(self, call: ToolCall) -> bool:
        tool = self.tools.get(call.tool)
        if self.trigger.when == "first_irreversible_call":
            return tool is not None and tool.reversibility == "irreversible"
        if self.trigger.when == "first_write_call":
            return tool is not None and tool.mutates
        if self.trigger.when == "after_first_committed_write":
            return self.wrote
        return call.ordinal == self.trigger.n

    def describe(self) -> str:
        return self.trigger.describe()

    def answered(self, call: ToolCall, ok: bool) -> None:
        """Called with every answer that passed the fault layer untouched."""
        tool = self.tools.get(call.tool)
        if ok and tool is not None and tool.mutates:
            self.wrote = True
