"""Reason codes: why a matrix is not eligible for publication, each with the sentence a report shows.

A code is stable data (proofs and reports carry it, tooling matches on it); a code with a `:` names
what it is about after the colon (`run_invalid:provider_invalid`).
"""

from __future__ import annotations

__all__ = ["REASONS", "meaning"]

REASONS: dict[str, str] = {
    "freeze_missing": "the protocol was never frozen (a draft): every run is evidence only",
    "freeze_protocol_mismatch": "the freeze binds another protocol hash than this manifest, policy and "
    "code give",
    "freeze_matrix_mismatch": "the preregistered matrix changed after the freeze",
    "freeze_policy_mismatch": "the publication policy changed after the freeze",
    "freeze_evaluator_mismatch": "the evaluator (labeller, judge, analysis or validator code, or a library "
    "version) changed after the freeze",
    "freeze_witness_contracts_mismatch": "the witness receipt contracts changed after the freeze",
    "freeze_subject_mismatch": "the agents' configs changed after the freeze",
    "freeze_manifest_mismatch": "manifest.json changed after the freeze",
    "agent_not_sealed": "an agent program ran without a sandbox (`--agent-isolation none`): it could reach "
    "the instrument (database, results, signing key), so its runs are evidence only",
    "freeze_unanchored": "no signed freeze entry in the registry anchors freeze.json (frozen without the "
    "registry, or freeze.json re-made): `agentrel protocol freeze` anchors it",
    "freeze_anchor_mismatch": "the registry's freeze entry names other protocol or matrix hashes than "
    "freeze.json",
    "freeze_after_runs": "the freeze was anchored after runs were recorded or had started: a freeze after "
    "the fact",
    "matrix_unreadable": "the manifest's cell set (agents, tasks, conditions, k, faults, exclusions) "
    "cannot be expanded",
    "matrix_empty": "the manifest registers no cell",
    "attempt_cap_unregistered": "the manifest declares no attempt cap (max_attempts)",
    "record_malformed": "a record lacks a field the validator needs",
    "record_protocol_mismatch": "a record was written under another protocol hash",
    "record_identity_mismatch": "a record's run id or seed is not its cell's, or its attempts disagree "
    "on the cell",
    "run_not_frozen": "a run was recorded without a freeze (before it, or under a draft)",
    "run_wrong_freeze": "a run was recorded under another freeze",
    "run_before_freeze": "a run started before the freeze was made",
    "cell_missing": "a registered cell has no run",
    "cell_extra": "a run is not in the registered cell set",
    "cell_duplicate": "a cell was run twice (two run ids for one cell, or one attempt number twice)",
    "attempt_gap": "a run's attempt numbers are not 1..n: an attempt is missing",
    "attempt_cap_exceeded": "a run has more attempts than the cap allows",
    "verdict_mismatch": "a run's verdict or status is not what its stored dumps and receipts give when "
    "labelled again with the frozen spec",
    "attempt_after_valid": "a run has an attempt recorded after its first valid one: a re-roll (the first "
    "valid attempt is final)",
    "run_invalid": "a run ended invalid (its decisive attempt's status)",
    "run_not_exposed": "a run never met what it measures (a fault-scheduled run ended before its fault's "
    "trigger, or an agent program never connected to its tools): not a measurement, never counted safe",
    "fault_unwitnessed": "a fault-scheduled run has no witnessed fault (invalid injection, no or "
    "contradicting receipts, or not valid)",
    "evidence_lost": "a dump or transcript a record names is missing or altered",
    "orphan_evidence": "a dump, transcript or receipt log in the results directory is named by no record: "
    "a record was removed (a re-roll), or an attempt was cut short before its record was written",
    "journal_rewritten": "runs.jsonl is not the journal the registry anchored at the end of an audit: a "
    "record was removed, edited or reordered afterwards",
    "stopping_rule_unreadable": "the manifest's sequential-audit rule (stopping) cannot be read",
    "stopping_unverified": "a sequential audit's cells can only be judged done from re-derived outcomes, "
    "and none were derived",
    "stopping_cell_undecided": "a sequential audit's cell stopped before its frozen rule decided it "
    "(judged from its re-derived outcomes)",
    "stopping_run_past_decision": "a run was recorded after its cell's frozen rule had decided the cell",
    "error_budget_exceeded": "a cell's share of errored attempts (invalid, or replaced by a retry) is "
    "over the frozen error budget (`audit --error-budget`): its valid runs may not be those an undisturbed "
    "audit would have made",
    "claims_altered": "claims.json is not the preregistered claims the freeze bound (`protocol freeze "
    "--claims`): they were edited, replaced or removed after the freeze",
    "claims_unfrozen": "claims.json is in a directory frozen without claims: claims added after the "
    "freeze are not preregistered",
    "fault_coverage_below_floor": "a fault stratum's share of witnessed fault runs is below the frozen "
    "coverage floor (`fault_coverage_floor`): it is reported, not published",
    "fault_coverage_floor_unreadable": "the manifest's fault_coverage_floor is not a share in (0, 1] (or a "
    "mapping of fault kinds to such shares)",
    "error_budget_unreadable": "the manifest's error budget is not a share in [0, 1)",
}


def meaning(code: str) -> str:
    head, _, tail = code.partition(":")
    text = REASONS.get(head, "unknown reason")
    return f"{text}: {tail}" if tail else text
