"""Protocol identity: which change moves which hash (the evaluator's own files: test_evaluator_digest.py)."""

import pytest

from agentrel.harness.protocol import identity as identity_module
from agentrel.harness.protocol.identity import diff_identity, identity_of, refusal_message
from agentrel.harness.protocol.policy import POLICY_FILE, load_policy
from tests.publication.factory import manifest


def test_the_identity_is_a_pure_function_of_its_inputs():
    m = manifest()
    assert identity_of(m) == identity_of(dict(reversed(list(m.items()))))
    assert set(identity_of(m).model_dump()) == {
        "protocol_hash",
        "matrix_hash",
        "policy_hash",
        "evaluator_digest",
        "witness_contracts_hash",
        "subject_config_hash",
        "manifest_hash",
    }


def test_subjects_and_environment_are_not_the_matrix():
    m = manifest()
    other_agents = {**m, "agents": [{"name": "openai/x", "kind": "model", "sampling": {"temperature": 0.6}}]}
    other_server = {**m, "server_version": "PostgreSQL 16.2", "package_version": "9.9"}
    a, b, c = identity_of(m), identity_of(other_agents), identity_of(other_server)
    assert diff_identity(a, b) == ["subject_config_hash"] and a.protocol_hash == b.protocol_hash
    assert diff_identity(a, c) == [] and a.protocol_hash == c.protocol_hash
    assert a.manifest_hash != c.manifest_hash


@pytest.mark.parametrize(
    "change",
    [
        {"k": 4},
        {"max_attempts": 2},
        {"seed_digest": "6" * 64},
        {"sampling": {"temperature": 0.7}},
        {"faults": {"cells": [{"task": "itsm-hard", "fault_id": "f1", "kind": "kill"}]}},
        {"a_field_added_later": 1},  # an unknown key is the matrix's, so it can never slip by
    ],
)
def test_every_matrix_change_moves_the_matrix_and_protocol_hash(change):
    m = manifest()
    a, b = identity_of(m), identity_of({**m, **change})
    assert diff_identity(a, b) == ["matrix_hash"]
    assert a.protocol_hash != b.protocol_hash


def test_a_task_digest_change_moves_the_matrix():
    m = manifest()
    tasks = [dict(t) for t in m["tasks"]]
    tasks[1]["spec_digest"] = "7" * 64
    assert diff_identity(identity_of(m), identity_of({**m, "tasks": tasks})) == ["matrix_hash"]


def test_a_one_byte_change_to_the_policy_changes_the_protocol(tmp_path):
    text = POLICY_FILE.read_text()
    assert '"alpha": 0.05' in text
    edited = tmp_path / "policy.json"
    edited.write_text(text.replace('"alpha": 0.05', '"alpha": 0.06', 1))
    m = manifest()
    a, b = identity_of(m, policy=load_policy()), identity_of(m, policy=load_policy(edited))
    assert diff_identity(a, b) == ["policy_hash"]
    assert a.protocol_hash != b.protocol_hash


def test_an_evaluator_digest_change_moves_only_the_evaluator_part():
    m = manifest()
    a, b = identity_of(m, evaluator_digest="a" * 64), identity_of(m, evaluator_digest="b" * 64)
    assert diff_identity(a, b) == ["evaluator_digest"] and a.protocol_hash != b.protocol_hash


def test_a_witness_contract_change_changes_the_protocol(monkeypatch):
    m = manifest()
    before = identity_of(m)
    identity_module.witness_contracts_hash.cache_clear()
    monkeypatch.setattr(identity_module, "WITNESS_CONTRACTS", "agentrel-witness-contracts/2")
    try:
        after = identity_of(m)
    finally:
        identity_module.witness_contracts_hash.cache_clear()
    assert diff_identity(before, after) == ["witness_contracts_hash"]


def test_the_refusal_names_the_part_and_the_fields():
    m = manifest()
    assert refusal_message(m, dict(m)) is None
    message = refusal_message(m, {**m, "k": 5, "agents": [], "server_version": "PostgreSQL 16.1"})
    assert message is not None
    assert "matrix_hash" in message and "(changed: k)" in message
    assert "subject_config_hash" in message and "(changed: agents)" in message
    assert "environment (changed: server_version)" in message
