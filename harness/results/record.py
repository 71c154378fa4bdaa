"""The run record: one JSON line per attempt in `runs.jsonl` (written by `directory.ResultsDir`).

Versioned: `version` is written on every line. A record without it is version 1 (written before the field
existed), read unchanged; a version this code does not know is refused by name, never half-read.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentrel.dsl.verdict import Verdict
from agentrel.harness.faults.effects import RepeatedEffect
from agentrel.harness.faults.receipts import ActuatorReceipt, FaultKind, WitnessReceipt
from agentrel.harness.results.attempts import decisive_index
from agentrel.harness.results.event import Event
from agentrel.harness.results.kinds import AgentKind
from agentrel.harness.results.status import (
    TERMINAL,
    VALID,
    RunStatus,
    derived_status,
    is_damaging,
    is_passing,
)

RECORD_VERSION = 2  # 2: `version` written on each line; 1: the same fields without it


class FaultOutcome(BaseModel):
    """A fault-scheduled run's fault: the preregistered cell, whether its trigger was reached, and both
    receipts (the fsynced copies are in `receipts/`; these travel with the record)."""

    fault_id: str
    kind: FaultKind
    trigger: str
    fired: bool
    verdict: Literal["witnessed", "invalid_injection"] | None = None
    reasons: list[str] = Field(default_factory=list)
    actuator: ActuatorReceipt | None = None
    witness: WitnessReceipt | None = None
    # Irreversible effects committed twice or more (harness/faults/effects.py), from the tool server's
    # commit evidence; None where none could be read (no final state, or a record from before).
    repeated_effects: list[RepeatedEffect] | None = None


class RunError(BaseModel):
    kind: Literal["harness", "provider", "agent"]
    message: str


class TokenUsage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0


class Timings(BaseModel):
    clone_s: float = 0.0
    agent_s: float = 0.0
    dump_s: float = 0.0
    label_s: float = 0.0
    total_s: float = 0.0


STAMP = "%Y-%m-%dT%H:%M:%SZ"  # started_at, in UTC; a freeze's `at` too, so the two compare as strings


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    model: str
    agent_kind: AgentKind
    task: str
    condition: str
    run_index: int
    seed: str
    protocol_hash: str
    attempt: int = 1
    status: RunStatus = "valid"
    verdict: Verdict | None
    error: RunError | None = None
    events: list[Event] = Field(default_factory=list)
    # Under an injecting condition: whether any payload reached the agent (not exposed is never "resisted").
    exposure: Literal["exposed", "not_exposed"] | None = None
    fault: FaultOutcome | None = None  # under a fault schedule
    frozen_by: str | None = None  # the digest of the protocol freeze this run was recorded under
    script: str | None = Field(default=None, description="the script a scripted or reference agent followed")
    final_message: str | None = None
    # The labeller's inputs beside the dumps (dsl RunFacts): the final message above, `errored` (the record
    # has an error), and whether the agent ran out of steps or time. Publication labels again from them.
    stalled: bool = False
    # An external agent program: whether it opened its MCP session (None for agents AgentRel runs itself).
    connected: bool | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_usd: float | None = None
    timings: Timings = Field(default_factory=Timings)
    before_digest: str
    after_digest: str | None = None
    transcript_digest: str | None = None
    started_at: str
    environment: str | None = None  # sandbox/environments/; None on records from before environments
    # The model id the provider said served this run's responses (one per run: a response served by
    # another is refused as a provider failure); None for agents without one or servers that never say.
    served_model: str | None = None
    # Where cost_usd comes from (decided in harness.run.runner._cost): `measured` from the provider's usage as
    # the harness read it (a model adapter, an agent program's model proxy), `reported` only from the agent
    # program's own usage file; None with no cost, and on records from before the field.
    cost_source: Literal["measured", "reported"] | None = None
    # Last, so a line still starts with its run id (the view's fast path reads the writer's field order).
    version: int = RECORD_VERSION

    @model_validator(mode="after")
    def _older_records(self) -> RunRecord:
        """A line without `version` is version 1; one without `status` was written before statuses existed
        (a harness error or no verdict was an invalid run). After validation rather than before it: a
        before-validator makes pydantic build every line as Python objects first and validate them again,
        which tripled the cost of reading 100,000 records."""
        fields = self.model_fields_set
        if "version" not in fields:
            self.version = 1
        elif not 1 <= self.version <= RECORD_VERSION:
            raise ValueError(
                f"record version {self.version!r} is newer than this AgentRel reads; upgrade agentrel"
            )
        if "status" not in fields:
            error = self.error.kind if self.error is not None else None
            self.status = derived_status(error, self.verdict is not None)
        return self

    @property
    def valid(self) -> bool:
        return self.status == VALID

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def damaging(self) -> bool:
        """A measured run that counts as damaging (`status.is_damaging`, the one rule)."""
        verdict = self.verdict
        if not self.valid or verdict is None:
            return False
        return is_damaging(verdict.outcome, bool(verdict.mutated), self.agent_error)

    @property
    def shows_damage(self) -> bool:
        """Whether the attempt's state shows damage (`status.is_damaging`), whatever its status: the
        damage evidence a cell never loses (`status.decision_count`)."""
        verdict = self.verdict
        return verdict is not None and is_damaging(verdict.outcome, bool(verdict.mutated), self.agent_error)

    @property
    def passing(self) -> bool:
        """A measured run that counts as passing (`status.is_passing`: PASS and not damaging)."""
        verdict = self.verdict
        if not self.valid or verdict is None:
            return False
        return is_passing(verdict.outcome, bool(verdict.mutated), self.agent_error)

    @property
    def agent_error(self) -> bool:
        """The agent itself erred (an error of another kind makes the attempt invalid, not the agent's)."""
        return self.error is not None and self.error.kind == "agent"


Attempts = dict[str, list[RunRecord]]  # run id -> its attempts, in file order


def decisive(attempts: list[RunRecord]) -> RunRecord:
    """A run's decisive attempt (`attempts.decisive_index`: the first terminal one, else the latest)."""
    return attempts[decisive_index([r.status for r in attempts], [r.attempt for r in attempts])]


def run_id(model: str, task: str, condition: str, run_index: int) -> str:
    """`condition` is the cell's condition label: a fault cell's is `fault:<id>` (its seed is the clean
    twin's), so a fault run and its twin have distinct ids and one seed."""
    return f"{model.replace('/', '_')}__{task}__{condition}__{run_index:04d}"
