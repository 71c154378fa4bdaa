"""The served model is recorded and checked: a response from another model never acts (issue 22 §7).

Each attack is a loopback provider that answers a request for one model with another's response; the
run must end provider-invalid with that response's tool calls never executed, and a run whose responses
all come from the asked model (or its dated snapshot, or a declared alias) records the served id, which
the scorecard's subject carries.
"""

from __future__ import annotations

import json

import pytest

from agentrel.harness.agents.honesty import accepted, not_an_answer, served_problem
from agentrel.harness.agents.openai import OpenAIAgent
from agentrel.harness.agents.registry import agent_adapter
from agentrel.harness.errors import UsageError
from agentrel.harness.publication.evidence import facts_of
from agentrel.harness.publication.scorecard import _subjects
from agentrel.harness.run.audit import audit
from tests.harness.fake_provider import OTHER_MODEL, FakeProvider, openai_text, openai_tool_call

CREDIT_TASK = "csm-goodwill-cap"
CREDIT_600 = {"account_id": 10201, "case_id": 10201, "amount": "600.00", "reason": "Goodwill: outage"}
READ = ("get_account", '{"account_id": 10201}')


def agent_for(url: str) -> OpenAIAgent:
    agent = OpenAIAgent.from_env("gpt-test", {"temperature": 0.6}, env={"OPENAI_BASE_URL": url})
    agent.attempts, agent.base_delay = 2, 0.0
    return agent


def audit_one(sandbox, results, agent, **kw):
    agent_adapter("test", "test/<name>")(lambda rest, sampling: agent)
    return audit(
        models=["test/agent"],
        k=1,
        tasks=[CREDIT_TASK],
        concurrency=1,
        results=results,
        sandbox=sandbox,
        show_progress=False,
        max_attempts=kw.pop("max_attempts", 1),
        **kw,
    )


@pytest.mark.parametrize(
    ("asked", "served", "ok"),
    [
        ("gpt-4o", "gpt-4o", True),
        ("gpt-4o", "gpt-4o-2024-08-06", True),  # the provider's dated form of the same name
        ("gpt-3.5-turbo", "gpt-3.5-turbo-0301", True),
        ("claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022", True),
        ("gpt-4o", "gpt-3.5-turbo-0301", False),  # the attack: another model entirely
        ("gpt-4o", "gpt-4o-mini-2024-07-18", False),  # a smaller sibling is not a dated form
        ("gpt-4o", "gpt-4o-evil", False),
        ("gpt-4o", "gpt-4", False),
        ("qwen", "/models/qwen.gguf", False),
    ],
)
def test_which_served_ids_answer_a_request(asked, served, ok):
    assert accepted(asked, served) is ok


def test_an_alias_is_accepted_only_when_declared():
    assert not accepted("qwen", "/models/qwen.gguf")
    assert accepted("qwen", "/models/qwen.gguf", ["/models/qwen.gguf"])


def test_a_served_id_that_changes_within_a_run_is_refused():
    assert served_problem("gpt-4o", [], "gpt-4o-2024-08-06") is None
    assert served_problem("gpt-4o", ["gpt-4o-2024-08-06"], "gpt-4o-2024-08-06") is None
    assert "changed" in served_problem("gpt-4o", ["gpt-4o-2024-05-13"], "gpt-4o-2024-08-06")
    assert "changed" in served_problem("gpt-4o", [None], "gpt-4o")  # unnamed, then named
    assert "changed" in served_problem("gpt-4o", ["gpt-4o"], None)
    assert served_problem("gpt-4o", [None], None) is None  # a server that never says
    assert OTHER_MODEL in served_problem("gpt-4o", [], OTHER_MODEL)


@pytest.mark.parametrize(
    "text",
    [
        "All done.",
        "<b>bold</b> is fine",
        "I got a 302 Found error from the API",
        "Redirecting you? No.",
        "ok\u200b",
    ],
)
def test_answers_that_only_mention_html_or_redirects_are_answers(text):
    assert not_an_answer(text) is None


def test_the_served_id_is_recorded_in_the_run_and_its_transcript(sandbox, tmp_path):
    with FakeProvider(model="gpt-test-2024-08-06") as fake:
        fake.queue(200, openai_tool_call("c1", *READ))
        fake.queue(200, openai_text("Nothing to credit."))
        outcome = audit_one(sandbox, tmp_path / "r", agent_for(fake.url))
    (record,) = outcome.new
    assert record.status == "valid" and record.served_model == "gpt-test-2024-08-06"
    transcript = json.loads((tmp_path / "r" / "transcripts").glob("*.json").__next__().read_text())
    assert [c["served_model"] for c in transcript["model_calls"]] == ["gpt-test-2024-08-06"] * 2


def test_a_response_from_another_model_never_acts_and_the_run_is_provider_invalid(sandbox, tmp_path):
    """The attack: mid-run, a router answers with another model whose turn issues a $600 credit."""
    with FakeProvider() as fake:
        fake.queue(200, {**openai_tool_call("c1", *READ), "model": "gpt-test"})
        for _ in range(2):  # both provider retries answer from the other model
            fake.queue(
                200, {**openai_tool_call("c2", "issue_credit", json.dumps(CREDIT_600)), "model": OTHER_MODEL}
            )
        outcome = audit_one(sandbox, tmp_path / "r", agent_for(fake.url))
    (record,) = outcome.new
    assert [c["tool"] for c in record.tool_calls] == ["get_account"], "the other model's call must not run"
    assert record.status == "provider_invalid" and record.error.kind == "provider"
    assert OTHER_MODEL in record.error.message and record.verdict.outcome != "FAIL_DAMAGE"


def test_a_change_between_two_dated_snapshots_is_refused(sandbox, tmp_path):
    with FakeProvider() as fake:
        fake.queue(200, {**openai_tool_call("c1", *READ), "model": "gpt-test-2024-05-13"})
        for _ in range(2):
            fake.queue(200, {**openai_text("done"), "model": "gpt-test-2024-08-06"})
        outcome = audit_one(sandbox, tmp_path / "r", agent_for(fake.url))
    (record,) = outcome.new
    assert record.status == "provider_invalid" and "changed within the run" in record.error.message


def test_a_declared_alias_is_accepted_and_is_part_of_the_subjects_config(sandbox, tmp_path):
    with FakeProvider(model="/models/qwen2.5-coder.gguf") as fake:
        fake.queue(200, openai_text("Nothing to credit."))
        refused = audit_one(sandbox, tmp_path / "refused", agent_for(fake.url))
        fake.queue(200, openai_text("Nothing to credit."))
        ok = audit_one(
            sandbox,
            tmp_path / "ok",
            agent_for(fake.url),
            model_aliases=[("test/agent", "/models/qwen2.5-coder.gguf")],
        )
    assert refused.new[0].status == "provider_invalid"
    assert ok.new[0].status == "valid" and ok.new[0].served_model == "/models/qwen2.5-coder.gguf"
    manifest = json.loads((tmp_path / "ok" / "manifest.json").read_text())
    assert manifest["agents"][0]["served_aliases"] == ["/models/qwen2.5-coder.gguf"]
    assert refused.protocol_hash == ok.protocol_hash  # the alias is the subject's, not the protocol's


def test_an_alias_for_a_model_not_audited_is_one_usage_line(sandbox, tmp_path):
    with pytest.raises(UsageError, match="--model-alias gpt-4o=x: 'gpt-4o' is not an audited model"):
        audit_one(sandbox, tmp_path / "r", agent_for("http://127.0.0.1:9"), model_aliases=[("gpt-4o", "x")])


def test_the_scorecards_subject_carries_the_served_ids():
    manifest = {
        "agents": [{"name": "openai/gpt-4o", "kind": "model"}, {"name": "scripted/x", "kind": "scripted"}]
    }

    def record(i, served):
        return {
            "run_id": f"r{i}", "model": "openai/gpt-4o", "task": "t", "condition": "clean", "seed": "s",
            "protocol_hash": "p", "run_index": i, "status": "valid", "served_model": served,
            "verdict": {"outcome": "FAIL_SAFE"},
        }  # fmt: skip

    runs = [facts_of(record(1, "gpt-4o-2024-08-06"), "a"), facts_of(record(2, "gpt-4o-2024-05-13"), "b")]
    subjects = {s.name: s for s in _subjects(manifest, runs)}
    assert subjects["openai/gpt-4o"].served_models == ("gpt-4o-2024-05-13", "gpt-4o-2024-08-06")
    assert subjects["scripted/x"].served_models == ()
