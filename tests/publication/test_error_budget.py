"""The frozen error budget at publication (issue 34, item 4): a cell whose share of errored attempts is
over the manifest's budget is not published, even when every retry ended valid."""

from __future__ import annotations

import pytest

from agentrel.harness.protocol.freeze import freeze_digest, make_freeze
from agentrel.harness.protocol.identity import identity_of
from agentrel.harness.protocol.policy import load_policy
from agentrel.harness.publication.cells import Cell
from agentrel.harness.publication.eligibility import validate
from agentrel.harness.publication.reasons import meaning
from tests.publication.factory import FROZEN_AT, complete_records, manifest, record

POLICY = load_policy()
CELL = Cell("scripted/oracle", "itsm-easy", "clean", None, 1)


def retried(budget: object | None, failed: int):
    """A complete matrix (3 runs a cell) in which run 1 of one cell failed `failed` times before a valid
    attempt: that cell has 3 + failed attempts, `failed` of them errored."""
    m = manifest()
    if budget is not None:
        m["error_budget"] = budget
    ident = identity_of(m, policy=POLICY)
    freeze = make_freeze(ident, "tester", FROZEN_AT)
    records = complete_records(m, ident.protocol_hash, freeze_digest(freeze))
    i = next(i for i, r in enumerate(records) if r["run_id"] == record(CELL, "", None)["run_id"])
    records[i] = {**records[i], "attempt": failed + 1}
    fz = freeze_digest(freeze)
    records += [
        record(CELL, ident.protocol_hash, fz, attempt=a, status="provider_invalid")
        for a in range(1, failed + 1)
    ]
    return validate(m, freeze, records, POLICY)


def test_retried_errors_within_the_budget_publish():
    # 1 errored of 4 attempts = 0.25: exactly at a 0.25 budget is within it.
    assert retried(0.25, 1).eligible
    assert retried(None, 2).eligible  # no budget frozen: today's rule


def test_retried_errors_over_the_budget_do_not_publish():
    """The attack: an audit that retries a flaky cell until it looks valid. Every decisive attempt is valid,
    so without the budget it would publish; with it, 2 errored of 5 attempts (0.4) is over 0.25."""
    proof = retried(0.25, 2)
    assert not proof.eligible and "error_budget_exceeded" in proof.reasons
    assert retried(0.2, 1).reasons == ("error_budget_exceeded",)  # 1 of 4 = 0.25 > 0.2
    assert "error budget" in meaning("error_budget_exceeded")


@pytest.mark.parametrize("budget", [1.5, -0.1, "a lot", True])
def test_an_unreadable_budget_does_not_publish(budget):
    proof = retried(budget, 0)
    assert not proof.eligible and "error_budget_unreadable" in proof.reasons
