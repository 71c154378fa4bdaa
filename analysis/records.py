"""Pydantic models for the fields of run records and manifests that analysis reads.

Extra fields are ignored, so the harness can add to its records without breaking analysis. Money
is Decimal, parsed from the record's decimal strings without passing through float.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

# Case-insensitive class names, normalized to lower case inside pydantic-core (no Python validator
# runs per record, which matters at 100,000 records).
Severity = Annotated[
    str, StringConstraints(strip_whitespace=True, to_lower=True, pattern=r"(?i)^(low|medium|high|critical)$")
]
Irreversibility = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True, to_lower=True, pattern=r"(?i)^(substrate|governance|reversible)$"
    ),
]
AgentKind = Literal["model", "reference", "scripted"]
SEVERITIES: tuple[str, ...] = ("low", "medium", "high", "critical")
IRREVERSIBILITY: tuple[str, ...] = ("substrate", "governance", "reversible")
AGENT_KINDS: tuple[str, ...] = ("model", "reference", "scripted")


class _Tolerant(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class DamageEvent(_Tolerant):
    rule: str = ""
    table: str = ""
    key: list[Any] = Field(default_factory=list)
    op: str | None = None
    severity: Severity | None = None
    irreversibility: Irreversibility | None = None
    dollars: Decimal = Decimal("0")


class Verdict(_Tolerant):
    outcome: Literal["PASS", "FAIL_SAFE", "FAIL_DAMAGE"]
    sub_label: str = ""
    inconsistent: bool = False
    mutated: bool = False
    changes: int = 0
    events: list[DamageEvent] = Field(default_factory=list)
    max_severity: Severity | None = None
    dollars: Decimal = Decimal("0")
    irreversibility: list[Irreversibility] = Field(default_factory=list)

    def contradiction(self) -> str | None:
        """Why this verdict cannot have come from the labeller (a hand-edited or corrupted record), or
        None. The labeller makes any damage event a FAIL_DAMAGE and prices it as the sum of its events."""
        if self.events and self.outcome != "FAIL_DAMAGE":
            return f"outcome {self.outcome} next to {len(self.events)} damage event(s)"
        total = sum((e.dollars for e in self.events), Decimal("0"))
        if total != self.dollars:
            return f"dollars {self.dollars} but its damage events add up to {total}"
        return None


RECORD_ERROR = "record_error"  # a verdict that contradicts itself: counted as invalid, never as $0


class RunError(_Tolerant):
    kind: Literal["harness", "agent", "provider"]
    message: str = ""


VALID = "valid"
PROVIDER_INVALID = "provider_invalid"
HARNESS_INVALID = "harness_invalid"


class RunRecord(_Tolerant):
    """One line of runs.jsonl (the fields analysis reads)."""

    run_id: str
    model: str
    agent_kind: AgentKind | None = None
    task: str
    condition: str
    run_index: int
    protocol_hash: str
    verdict: Verdict | None = None
    error: RunError | None = None
    cost_usd: float | None = None
    # Any status other than "valid" is invalid: later harness versions add names (invalid_injection,
    # ...) that analysis must count as invalid without knowing them. None: a record from before
    # statuses existed, whose status is derived.
    status: str | None = None
    attempt: int = Field(default=1, ge=1)

    @property
    def derived_status(self) -> str:
        """The status of a record written before statuses existed, from its error and verdict."""
        if self.error is not None and self.error.kind == "provider":
            return PROVIDER_INVALID
        if self.verdict is None or (self.error is not None and self.error.kind == "harness"):
            return HARNESS_INVALID
        return VALID

    @property
    def contradictory(self) -> bool:
        """Says valid but has no verdict, or a harness / provider error and no damage to show for it."""
        return self.status == VALID and self.effective_status != VALID

    @property
    def effective_status(self) -> str:
        """The status the record counts under. A contradictory "valid" counts under its derived
        (invalid) status: a run without a trustworthy verdict must never be counted as safe. As in the
        harness, damage already in the dumped state keeps a run valid whoever failed after it."""
        status = self.status
        if status == VALID:
            err, verdict = self.error, self.verdict
            ok = verdict is not None and (
                err is None or err.kind == "agent" or verdict.outcome == "FAIL_DAMAGE"
            )
            return VALID if ok else self.derived_status
        if status is None:
            return self.derived_status
        return status or "unnamed_invalid"  # only the exact name "valid" is valid


class AgentInfo(_Tolerant):
    name: str
    kind: AgentKind = "model"


class Manifest(_Tolerant):
    """manifest.json beside runs.jsonl (the fields analysis reads).

    The harness stores the manifest itself, whose protocol hash is SHA-256 over its RFC 8785 canonical
    JSON; a manifest that states its own ``protocol_hash`` is taken at its word.
    """

    protocol_hash: str | None = None
    agents: list[AgentInfo] = Field(default_factory=list)


def infer_agent_kind(name: str) -> str:
    """Kind from a name alone (CSV input without an agent_kind column): reference/... and scripted/..."""
    head = name.split("/", 1)[0].lower()
    return head if head in ("reference", "scripted") and "/" in name else "model"
