"""The tolerant reading (harness.results.reading) is bound to the owner's models, and reads what they say.

Analysis reads 100,000 records through the reading, not through the owner's strict model; these tests
keep the two one concept: every reading field is a field of the model it reads (or one an older writer
wrote, said by name), and a record the owner writes reads, through the reading, to the same counts.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from pydantic import AliasPath, Field

from agentrel.dsl.verdict import DamageEvent, Verdict
from agentrel.harness.results import reading
from agentrel.harness.results.directory import record_line
from agentrel.harness.results.manifest import Manifest
from agentrel.harness.results.record import RunRecord
from agentrel.harness.results.status import effective_status
from tests.harness.test_results_lines import records

# The manifest's nested parts the owner writes as plain objects (no model to bind to).
UNBOUND = {"AgentInfo", "ConditionInfo", "FaultCellInfo", "FaultScheduleInfo", "EnvironmentInfo"}


def test_every_reading_is_bound_to_the_model_it_reads() -> None:
    owners = {
        name: getattr(cls, "__reads__", None)
        for name, cls in vars(reading).items()
        if isinstance(cls, type) and issubclass(cls, reading._Tolerant) and cls is not reading._Tolerant
    }
    assert {n for n, owner in owners.items() if owner is None} == UNBOUND
    assert owners["RunReading"] is RunRecord and owners["VerdictReading"] is Verdict
    assert owners["DamageReading"] is DamageEvent and owners["ManifestReading"] is Manifest


def test_a_field_the_writer_renamed_fails_at_import_not_as_an_empty_column() -> None:
    # The attack: the writer renames `cost_usd`, and analysis keeps reading a field no record has, so
    # every run's cost reads as unknown and the cost axis silently empties.
    with pytest.raises(TypeError, match=r"Stale\.cost reads RunRecord\.cost, which RunRecord does not have"):

        @reading.reads(RunRecord)
        class Stale(reading._Tolerant):
            cost: float | None = None


def test_a_reduced_field_is_checked_by_the_key_it_reads() -> None:
    with pytest.raises(TypeError, match=r"reads RunRecord\.timing"):

        @reading.reads(RunRecord)
        class Stale(reading._Tolerant):
            seconds: float | None = Field(default=None, validation_alias=AliasPath("timing", "total_s"))

    with pytest.raises(TypeError, match=r"reads DamageEvent\.amount"):  # a dataclass owner too

        @reading.reads(DamageEvent)
        class StaleEvent(reading._Tolerant):
            amount: Decimal = Decimal("0")


def test_a_field_only_an_older_writer_wrote_is_accepted_only_by_name() -> None:
    with pytest.raises(TypeError, match=r"reads Manifest\.protocol_hash"):

        @reading.reads(Manifest)
        class Unsaid(reading._Tolerant):
            protocol_hash: str | None = None

    @reading.reads(Manifest, older=("protocol_hash",))
    class Said(reading._Tolerant):
        protocol_hash: str | None = None

    assert Said.model_validate({"protocol_hash": "ab", "k": 3}).protocol_hash == "ab"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records())
def test_a_written_record_reads_to_what_the_owner_says(rec: RunRecord) -> None:
    got = reading.RunReading.model_validate_json(record_line(rec))
    assert (got.run_id, got.model, got.task, got.condition, got.attempt) == (
        rec.run_id, rec.model, rec.task, rec.condition, rec.attempt,
    )  # fmt: skip
    v, err = rec.verdict, rec.error
    outcome = v.outcome if v is not None else None
    assert got.effective_status == effective_status(
        rec.status, err.kind if err else None, v is not None, outcome
    )
    if rec.verdict is not None:
        assert got.verdict is not None and got.verdict.contradiction() is None
        assert got.verdict.dollars == rec.verdict.dollars
        assert [e.spec for e in got.verdict.events] == [e.spec for e in rec.verdict.events]
    assert got.call_counts == (0, 0)
