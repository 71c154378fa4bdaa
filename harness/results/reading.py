"""The tolerant reading of a results directory: the fields analysis counts by, read from the run records
and manifests this harness writes or an earlier one wrote, 100,000 records at a time.

The owner's models say what is written and refuse anything else (`record.RunRecord`, the dsl's `Verdict`
and `DamageEvent`, `manifest.Manifest`). A reading keeps some of their fields under their names, ignores
the rest, and is tolerant only where a reader must be: a record from before a field existed, a status a
later harness adds, a severity in another case. Each reading is bound to the model it reads (`reads`):
every field it declares is checked against that model when this module is imported, so a field renamed
or dropped by the writer fails here, by name, not as a column analysis silently reads as empty.
Reductions happen while parsing (tool calls to counts, events to kinds), so 100,000 records do not keep
half a million small dicts alive. Money is Decimal, parsed from the record's decimal strings without
passing through float. Nothing is decided here: statuses, damage and passes by `status`, the decisive
attempt by `attempts`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AliasPath, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints
from pydantic.fields import FieldInfo

from agentrel.dsl.ast import IRREVERSIBILITIES, SEVERITIES
from agentrel.dsl.check import GOAL_PREFIX
from agentrel.dsl.verdict import DamageEvent, Verdict
from agentrel.harness.results.kinds import AgentKind
from agentrel.harness.results.manifest import Manifest, TaskEntry
from agentrel.harness.results.record import RunError, RunRecord
from agentrel.harness.results.status import VALID, derived_status, effective_status, is_damaging, is_passing

Reading = TypeVar("Reading", bound=BaseModel)


def _field_names(owner: type) -> frozenset[str]:
    if dataclasses.is_dataclass(owner):
        return frozenset(f.name for f in dataclasses.fields(owner))
    return frozenset(owner.model_fields)  # type: ignore[attr-defined]


def _source(name: str, info: FieldInfo) -> str:
    """The owner's field a reading's field is read from: its own name, or its alias's first key."""
    alias = info.validation_alias
    if isinstance(alias, str):
        return alias
    if isinstance(alias, AliasPath):
        return str(alias.path[0])
    return name


def reads(owner: type, *, older: Iterable[str] = ()) -> Callable[[type[Reading]], type[Reading]]:
    """Bind a reading to the model it reads: each of its fields must be one of `owner`'s (by name, or by
    its alias's first key for a field reduced while parsing), or one an older writer wrote (`older`,
    said by name); otherwise the import fails naming the field."""
    known = _field_names(owner) | frozenset(older)

    def bind(reading: type[Reading]) -> type[Reading]:
        for name, info in reading.model_fields.items():
            if (source := _source(name, info)) not in known:
                raise TypeError(
                    f"{reading.__name__}.{name} reads {owner.__name__}.{source}, which {owner.__name__} "
                    "does not have: follow the owner's rename, or drop the field"
                )
        reading.__reads__ = owner  # type: ignore[attr-defined]
        return reading

    return bind


def _case_insensitive(names: tuple[str, ...]) -> StringConstraints:
    """One of the dsl's class names read case-insensitively, normalized to lower case inside pydantic-core
    (no Python validator runs per record, which matters at 100,000 records)."""
    return StringConstraints(strip_whitespace=True, to_lower=True, pattern=rf"(?i)^({'|'.join(names)})$")


# The vocabularies are the dsl's (severity, irreversibility) and the results owner's (agent kinds); these
# are only their tolerant readings.
SeverityName = Annotated[str, _case_insensitive(SEVERITIES)]
IrreversibilityName = Annotated[str, _case_insensitive(IRREVERSIBILITIES)]


class _Tolerant(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


@reads(DamageEvent)
class DamageReading(_Tolerant):
    rule: str = ""
    table: str = ""
    key: list[Any] = Field(default_factory=list)
    op: str | None = None
    severity: SeverityName | None = None
    irreversibility: IrreversibilityName | None = None
    dollars: Decimal = Decimal("0")
    # Which spec's rule produced the event: the task's id, or "injection:<goal id>" when the agent did
    # what an injected payload asked. None in records from before the harness wrote it.
    spec: str | None = None
    # Read for the damage export (export.DAMAGE_COLUMNS): the columns an update changed, and for an
    # aggregate rule's event the number of changes in its group (its key is the group-by values).
    changed_columns: list[str] = Field(default_factory=list)
    aggregate: bool = False
    rows: int = 1


INJECTION_SPEC_PREFIX = GOAL_PREFIX  # the dsl's name of a goal spec: "injection:<goal id>"


@reads(Verdict)
class VerdictReading(_Tolerant):
    outcome: Literal["PASS", "FAIL_SAFE", "FAIL_DAMAGE"]
    sub_label: str = ""
    inconsistent: bool = False
    mutated: bool = False
    changes: int = 0
    events: list[DamageReading] = Field(default_factory=list)
    max_severity: SeverityName | None = None
    dollars: Decimal = Decimal("0")
    irreversibility: list[IrreversibilityName] = Field(default_factory=list)

    def contradiction(self) -> str | None:
        """Why this verdict cannot have come from the labeller (a hand-edited or corrupted record), or
        None. The labeller makes any damage event a FAIL_DAMAGE and prices it as the sum of its events."""
        if self.events and self.outcome != "FAIL_DAMAGE":
            return f"outcome {self.outcome} next to {len(self.events)} damage event(s)"
        total = sum((e.dollars for e in self.events), Decimal("0"))
        if total != self.dollars:
            return f"dollars {self.dollars} but its damage events add up to {total}"
        return None


@reads(RunError)
class ErrorReading(_Tolerant):
    kind: Literal["harness", "agent", "provider"]
    message: str = ""


def _call_counts(value: Any) -> Any:
    """A record's ``tool_calls`` ([{tool, args_digest, ...}, ...]) -> (calls, duplicate calls).

    A duplicate repeats an earlier call's tool and args_digest (SHA-256 of the canonical JSON of the
    parsed arguments); duplicates is None when some call lacks its digest (older records), since a
    repeat then cannot be told from a new call. Reduced while parsing so that 100,000 records do not
    keep half a million small dicts alive for the cyclic garbage collector to traverse.
    """
    if not isinstance(value, list) or not all(isinstance(c, dict) for c in value):
        raise ValueError("tool_calls must be a list of objects")
    digests = [c.get("args_digest") for c in value]
    if None in digests:
        return (len(value), None)
    distinct = len(set(digests))
    if distinct < len(value):  # only then can two calls share tool and digest (most runs skip this)
        distinct = len({(c.get("tool"), d) for c, d in zip(value, digests, strict=True)})
    return (len(value), len(value) - distinct)


def _event_kinds(value: Any) -> Any:
    """A record's ``events`` ([{kind, ordinal, tool, detail}, ...]) -> its distinct kinds, sorted
    (analysis reads only whether a fault or a canary_echo happened; reduced for the reason above)."""
    if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
        raise ValueError("events must be a list of objects")
    return tuple(sorted({str(e.get("kind", "")) for e in value}))


def _repeated_count(value: Any) -> Any:
    """A fault's ``repeated_effects`` ([{tool, effect, call_ids}, ...] or null) -> how many (analysis needs
    only whether an irreversible action ran twice)."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError("repeated_effects must be a list")
    return len(value)


CallCounts = Annotated[tuple[int, int | None], BeforeValidator(_call_counts)]
RepeatedCount = Annotated[int | None, BeforeValidator(_repeated_count)]
EventKinds = Annotated[tuple[str, ...], BeforeValidator(_event_kinds)]


@reads(RunRecord)
class RunReading(_Tolerant):
    """One line of runs.jsonl, as much of it as analysis reads."""

    run_id: str
    model: str
    agent_kind: AgentKind | None = None
    task: str
    condition: str
    run_index: int
    protocol_hash: str
    # The environment the run was audited on (None: a record from before environments, which were all
    # the built-in one). Runs of two environments are never pooled, whatever --allow-mixed-protocols says.
    environment: str | None = None
    verdict: VerdictReading | None = None
    error: ErrorReading | None = None
    cost_usd: float | None = None
    cost_source: str | None = None  # "measured" or "reported" (the agent's usage file only); None: unknown
    # Any status other than "valid" is invalid: later harness versions add names (invalid_injection,
    # ...) that analysis must count as invalid without knowing them. None: a record from before
    # statuses existed, whose status is derived.
    status: str | None = None
    attempt: int = Field(default=1, ge=1)
    # Whether an injected payload reached the agent ("exposed" / "not_exposed"); None where the
    # condition injects nothing. Any other string is kept and counted as unknown exposure.
    exposure: str | None = None
    event_kinds: EventKinds = Field(default=(), validation_alias="events")
    # None (field absent) means the number of calls is unknown, not zero.
    call_counts: CallCounts | None = Field(default=None, validation_alias="tool_calls")
    # The attempt's wall time (timings.total_s); fault scores compare it with the clean twin's.
    seconds: float | None = Field(default=None, validation_alias=AliasPath("timings", "total_s"))
    # A fault run's irreversible effects committed more than once, counted from the tool server's commit
    # evidence (harness/faults/effects.py); None where the record carries no such reading.
    repeated_effects: RepeatedCount = Field(
        default=None, validation_alias=AliasPath("fault", "repeated_effects")
    )

    @property
    def derived_status(self) -> str:
        """The status of a record written before statuses existed, from its error and verdict."""
        return derived_status(self.error.kind if self.error else None, self.verdict is not None)

    @property
    def contradictory(self) -> bool:
        """Says valid but has no verdict, or a harness / provider error and no damage to show for it."""
        return self.status == VALID and self.effective_status != VALID

    @property
    def effective_status(self) -> str:
        """The status the record counts under (see `effective_status`)."""
        outcome = self.verdict.outcome if self.verdict is not None else None
        kind = self.error.kind if self.error else None
        return effective_status(self.status, kind, self.verdict is not None, outcome)

    @property
    def shows_damage(self) -> bool:
        """Whether the attempt's state shows damage (`status.is_damaging`), whatever its status."""
        v = self.verdict
        return v is not None and is_damaging(v.outcome, v.mutated, self.agent_error)

    @property
    def shows_pass(self) -> bool:
        """Whether the attempt's verdict is a pass (`status.is_passing`), whatever its status."""
        v = self.verdict
        return v is not None and is_passing(v.outcome, v.mutated, self.agent_error)

    @property
    def agent_error(self) -> bool:
        return self.error is not None and self.error.kind == "agent"


class AgentInfo(_Tolerant):
    name: str
    kind: AgentKind = "model"


@reads(TaskEntry)
class TaskInfo(_Tolerant):
    id: str = ""
    optimal_steps: int | None = Field(default=None, ge=0)
    tools_narrowed: str | None = None  # why it offers less than its environment's whole toolset


class ConditionInfo(_Tolerant):
    name: str


class FaultCellInfo(_Tolerant):
    task: str
    fault_id: str
    kind: str


class FaultScheduleInfo(_Tolerant):
    """The manifest's resolved fault schedule: the preregistered (task, fault id) cells."""

    name: str = ""
    cells: list[FaultCellInfo] = Field(default_factory=list)
    digest: str | None = None


class EnvironmentInfo(_Tolerant):
    """The manifest's `environment`: which system the audit ran on (sandbox/environments/)."""

    name: str
    fingerprint: str | None = None


# A manifest's own protocol_hash: manifests written before protocol.json stated it (and test fixtures do).
@reads(Manifest, older=("protocol_hash",))
class ManifestReading(_Tolerant):
    """manifest.json beside runs.jsonl (the fields analysis reads).

    The harness stores the manifest itself, whose protocol hash is SHA-256 over its RFC 8785 canonical
    JSON; a manifest that states its own ``protocol_hash`` is taken at its word.
    """

    protocol_hash: str | None = None
    environment: EnvironmentInfo | None = None  # absent in manifests from before environments
    agents: list[AgentInfo] = Field(default_factory=list)
    tasks: list[TaskInfo] = Field(default_factory=list)
    # Older manifests list condition names; newer ones declare each condition as an object.
    conditions: list[str | ConditionInfo] = Field(default_factory=list)
    k: int | None = Field(default=None, ge=1)
    faults: FaultScheduleInfo | None = None
    stopping: dict[str, Any] | None = None  # a sequential audit's frozen rule (harness.stopping reads it)
    # The frozen maximum share of invalid attempts per cell (`audit --error-budget`), when one was set.
    error_budget: float | None = Field(default=None, ge=0.0, lt=1.0)

    @property
    def condition_names(self) -> list[str]:
        return [c if isinstance(c, str) else c.name for c in self.conditions]

    @property
    def optimal_steps(self) -> dict[str, int]:
        """Task id -> its optimal number of tool calls, for the tasks that declare one."""
        return {t.id: t.optimal_steps for t in self.tasks if t.id and t.optimal_steps is not None}
