"""A local model served right (issue 25 items 3-7): the model-call timeout, task-major order, a seed per
request, the server's self-description in the subject's config, and final messages that are not answers.

Every provider is a loopback fake; one of them renders each request through a model's own chat template,
as AgentRel's local server does, and computes its reply from what the model was shown.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from agentrel.harness.agents.chat import SEED_RULE, request_seed
from agentrel.harness.agents.final_text import echoed_error, final_message_events, text_tool_call
from agentrel.harness.agents.openai import OpenAIAgent
from agentrel.harness.agents.registry import agent_adapter
from agentrel.harness.errors import UsageError
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.run.audit import audit
from agentrel.harness.run.matrix import expand
from tests.browser.support import served
from tests.harness.chat_templates import HERMES_STYLE
from tests.harness.fake_provider import OPENAI_LIES, FakeProvider, openai_text, openai_tool_call

TASK = "itsm-cab-window"
TASKS = ["itsm-cab-window", "csm-goodwill-cap"]
READ = ("list_cab_approvals", '{"change_id": 9002}')
AGENTREL = [sys.executable, "-m", "agentrel.harness.cli"]


def agent_for(url: str) -> OpenAIAgent:
    agent = OpenAIAgent.from_env("qwen-local", {"temperature": 0.6}, env={"OPENAI_BASE_URL": url})
    agent.attempts, agent.base_delay = 2, 0.0
    return agent


def run_audit(sandbox, results, agent, tasks=(TASK,), k=1, **kw):
    agent_adapter("local", "local/<name>")(lambda rest, sampling: agent)
    return audit(
        models=["local/qwen"],
        k=k,
        tasks=list(tasks),
        concurrency=1,
        results=results,
        sandbox=sandbox,
        show_progress=False,
        max_attempts=kw.pop("max_attempts", 1),
        **kw,
    )


# --- item 5: a seed per request, from the run seed and the call's ordinal ----------------------------


def test_each_request_carries_the_seed_of_its_run_and_ordinal_and_a_retry_the_same(sandbox, tmp_path):
    with FakeProvider() as fake:
        for _ in range(2):  # run 1: a lie, retried with the same seed, then two calls; run 2: two calls
            if not fake.replies:
                fake.queue_reply(OPENAI_LIES["zero_width_space_content"])
            fake.queue(200, openai_tool_call("c1", *READ))
            fake.queue(200, openai_text("Nothing to schedule."))
        outcome = run_audit(sandbox, tmp_path / "r", agent_for(fake.url), k=2)
    one, two = sorted(outcome.new, key=lambda r: r.run_index)
    sent = [r["body"]["seed"] for r in fake.requests]
    assert sent == [
        request_seed(one.seed, 1),  # the lie
        request_seed(one.seed, 1),  # its retry: the same request, the same seed
        request_seed(one.seed, 2),
        request_seed(two.seed, 1),
        request_seed(two.seed, 2),
    ]
    assert len(set(sent)) == 4 and all(0 <= s < 2**31 for s in sent)
    rd = ResultsDir(tmp_path / "r")
    transcript = json.loads(rd.transcript_path(one.run_id, 1).read_text())
    assert [(c["ordinal"], c["seed"]) for c in transcript["model_calls"]] == [
        (1, request_seed(one.seed, 1)),
        (2, request_seed(one.seed, 2)),
    ]
    manifest = json.loads(rd.manifest.read_text())
    assert manifest["agents"][0]["request_seed"] == SEED_RULE


def test_the_seed_is_a_known_function_of_the_run_seed_and_ordinal():
    import hashlib

    digest = hashlib.sha256(b"abc|model_call|3").hexdigest()
    assert request_seed("abc", 3) == int(digest[:8], 16) % 2**31
    assert request_seed("abc", 3) != request_seed("abc", 4) != request_seed("abd", 4)


# --- item 3: --model-timeout ---------------------------------------------------------------------------


def test_the_model_timeout_is_an_option_recorded_in_the_subjects_config(sandbox, tmp_path):
    held = threading.Event()
    try:
        with FakeProvider(hold=held) as fake:  # the server never answers until the test lets it
            fake.queue(200, openai_text("late"))
            agent = agent_for(fake.url)
            agent.attempts = 1
            outcome = run_audit(sandbox, tmp_path / "r", agent, model_timeout_s=0.5)
            held.set()
    finally:
        held.set()
    (record,) = outcome.new
    assert record.status == "provider_invalid" and "timed out" in record.error.message
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["agents"][0]["timeout_s"] == 0.5


def test_a_timeout_that_is_not_a_positive_number_is_one_usage_line(sandbox, tmp_path):
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(UsageError, match="--model-timeout must be a positive number"):
            run_audit(sandbox, tmp_path / "r", agent_for("http://127.0.0.1:9"), model_timeout_s=bad)


# --- item 4: --order task ------------------------------------------------------------------------------


def test_task_major_order_keeps_the_cells_seeds_and_ids():
    run_major = expand(["m"], ["t1", "t2"], ["clean"], 3)
    task_major = expand(["m"], ["t1", "t2"], ["clean"], 3, order="task")
    assert [(p.task, p.run_index) for p in run_major][:2] == [("t1", 1), ("t2", 1)]
    assert [(p.task, p.run_index) for p in task_major] == [
        ("t1", 1), ("t1", 2), ("t1", 3), ("t2", 1), ("t2", 2), ("t2", 3),
    ]  # fmt: skip
    assert sorted(p.run_id for p in run_major) == sorted(p.run_id for p in task_major)
    assert {p.run_id: p.seed for p in run_major} == {p.run_id: p.seed for p in task_major}


def test_an_audit_in_task_order_runs_task_by_task_under_the_same_protocol(sandbox, tmp_path):
    with FakeProvider() as fake:
        for _ in range(4):
            fake.queue(200, openai_text("Nothing to do."))
        by_task = run_audit(sandbox, tmp_path / "t", agent_for(fake.url), tasks=TASKS, k=2, order="task")
        for _ in range(4):
            fake.queue(200, openai_text("Nothing to do."))
        by_run = run_audit(sandbox, tmp_path / "r", agent_for(fake.url), tasks=TASKS, k=2)
    assert [(r.task, r.run_index) for r in by_task.new] == [
        ("csm-goodwill-cap", 1), ("csm-goodwill-cap", 2), ("itsm-cab-window", 1), ("itsm-cab-window", 2),
    ]  # fmt: skip
    assert [r.run_index for r in by_run.new] == [1, 1, 2, 2]
    assert by_task.protocol_hash == by_run.protocol_hash
    with pytest.raises(UsageError, match="--order must be one of run, task"):
        run_audit(sandbox, tmp_path / "x", agent_for(fake.url), order="model")


# --- item 6: what the server says about itself, and --model-meta -------------------------------------

LISTING = {
    "object": "list",
    "data": [
        {
            "id": "qwen-local",
            "object": "model",
            "created": 1764630000,  # per request on llama.cpp: never part of the identity
            "owned_by": "llamacpp",
            "meta": {"n_params": 1543714304, "size": 1117320768, "n_ctx_train": 32768},
        }
    ],
}


def props(template: str) -> dict[str, object]:
    return {
        "model_path": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "chat_template": template,
        "build_info": "b6000-abc",
        "total_slots": 1,
        "is_sleeping": False,  # state, not identity: dropped
        "default_generation_settings": {"n_ctx": 16384, "id_slot": 0},
    }


def test_the_servers_self_description_is_in_the_subjects_config(sandbox, tmp_path):
    with FakeProvider(listing=LISTING, props=props(HERMES_STYLE.source)) as fake:
        fake.queue(200, openai_text("Nothing to do."))
        run_audit(sandbox, tmp_path / "r", agent_for(fake.url + "/v1"))
    assert fake.gets == ["/v1/models", "/props"]
    server = json.loads((tmp_path / "r" / "manifest.json").read_text())["agents"][0]["server"]
    assert server["provenance"] == "claimed"  # the server's word, recorded as such
    assert server["models"] == [
        {"id": "qwen-local", "owned_by": "llamacpp", "meta": LISTING["data"][0]["meta"]}
    ]
    import hashlib

    assert server["props"] == {
        "model_path": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "build_info": "b6000-abc",
        "total_slots": 1,
        "chat_template_sha256": hashlib.sha256(HERMES_STYLE.source.encode()).hexdigest(),
        "n_ctx": 16384,
    }


def test_the_same_alias_behind_another_template_is_another_subject(sandbox, tmp_path):
    """The attack: resume an audit of `openai/<alias>` against a server whose weights or template
    changed; the runs would pool as one subject. Now the subject's config differs and it is refused."""
    with FakeProvider(listing=LISTING, props=props(HERMES_STYLE.source)) as fake:
        fake.queue(200, openai_text("Nothing to do."))
        run_audit(sandbox, tmp_path / "r", agent_for(fake.url + "/v1"), k=1)
    with (
        FakeProvider(listing=LISTING, props=props(HERMES_STYLE.source + " ")) as other,
        pytest.raises(
            UsageError, match=r"the protocol differs: subject_config_hash \S+ -> \S+ \(changed: agents\)"
        ),
    ):
        run_audit(sandbox, tmp_path / "r", agent_for(other.url + "/v1"), k=1)
    assert len(ResultsDir(tmp_path / "r").records()) == 1


def test_a_big_listing_keeps_only_the_asked_models_entry(sandbox, tmp_path):
    many = {
        "data": [{"id": f"model-{i}", "created": i} for i in range(30)]
        + [{"id": "qwen-local-2024-08-06"}, {"id": "qwen-local", "owned_by": "system", "created": 7}]
    }
    with FakeProvider(listing=many) as fake:
        fake.queue(200, openai_text("Nothing to do."))
        run_audit(sandbox, tmp_path / "r", agent_for(fake.url))
    server = json.loads((tmp_path / "r" / "manifest.json").read_text())["agents"][0]["server"]
    # The asked id only: a snapshot the API adds later must not make the same subject another one.
    assert server == {"provenance": "claimed", "models": [{"id": "qwen-local", "owned_by": "system"}]}


def test_model_meta_joins_the_subjects_config_and_a_bad_field_is_one_line(sandbox, tmp_path):
    meta = tmp_path / "meta.yaml"
    meta.write_text(
        "weights: qwen2.5-coder-1.5b-instruct-q4_k_m.gguf\n"
        "weights_sha256: cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046\n"
        "server: llama.cpp\nserver_version: b6000\nchat_template: '{{ messages }}'\n"
    )
    with FakeProvider() as fake:
        fake.queue(200, openai_text("Nothing to do."))
        run_audit(sandbox, tmp_path / "r", agent_for(fake.url), model_meta=meta)
    declared = json.loads((tmp_path / "r" / "manifest.json").read_text())["agents"][0]["declared"]
    assert declared["weights_sha256"].startswith("cc324af0") and declared["server"] == "llama.cpp"
    assert "chat_template" not in declared and len(declared["chat_template_sha256"]) == 64

    meta.write_text("weights_sha256: not-a-digest\n")
    with FakeProvider() as fake:
        proc = subprocess.run(
            [*AGENTREL, "audit", "-m", "openai/qwen", "--k", "1", "--tasks", TASK, "--results",
             str(tmp_path / "bad"), "--model-meta", str(meta)],
            capture_output=True, text=True, timeout=300, env={**os.environ, "OPENAI_BASE_URL": fake.url},
        )  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 3 and len(lines) == 1, proc.stderr
    assert str(meta) in lines[0] and "weights_sha256" in lines[0]
    assert fake.requests == [] and not (tmp_path / "bad" / "runs.jsonl").exists()


# --- item 7: a final message that is a tool call written as text, or an echoed tool error ------------


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (
            '```json\n{"name": "schedule_change", "arguments": {"change_id": 9002}}\n```',
            ("schedule_change", "fenced"),
        ),
        ('I will call {"name": "schedule_change", "arguments": {}} now.', ("schedule_change", "bare")),
        ('<tool_call>\n{"name": "schedule_change", "parameters": {"id": 1}}', ("schedule_change", "tag")),
        ("functions.update_change_request:", ("update_change_request", "functions_prefix")),
        (
            '{"type": "function", "function": {"name": "get_change", "arguments": "{}"}}',
            ("get_change", "bare"),
        ),
        ("Scheduled CHG9000001.\nREFUSAL: CHG9000002 has no CAB approval on record.", None),
        ('The config is {"name": "x"} with no arguments.', None),
        ("{ not json", None),
        # As Qwen2.5-Coder-1.5B wrote in make pilot-local: a comment makes it no JSON, still a call.
        (
            '```json\n{\n  "name": "issue_credit",\n  "arguments": {\n    "account_id": 12345, // Assuming\n',
            ("issue_credit", "unparsed"),
        ),
    ],
)
def test_a_tool_call_written_as_text_is_recognised(text, found):
    assert text_tool_call(text) == found


def test_an_echoed_tool_error_is_recognised():
    error = '{"error":"change_id 9009 does not exist"}'
    assert (
        echoed_error("Error: change_id 9009 does not exist. Sorry.", [error])
        == "change_id 9009 does not exist"
    )
    assert echoed_error(error, [error]) == "change_id 9009 does not exist"
    # As Qwen2.5-Coder-1.5B ended a make pilot-local run: the error result, JSON-escaped, in a made-up block.
    quoted = '{"error":"case_id must be integer or null, got \\"CS0110201\\""}'
    assert echoed_error(f"<tool_response>\n{quoted}\n</tool_response>", [quoted]) == (
        'case_id must be integer or null, got "CS0110201"'
    )
    assert echoed_error('{"error": "whatever went wrong"}', []) == "whatever went wrong"
    assert echoed_error("Scheduled CHG9000001.", [error]) is None
    assert echoed_error("It does not exist.", ['{"error":"not found"}']) is None  # too short to call an echo
    assert final_message_events(None) == [] and final_message_events("All done.") == []


def test_a_run_ending_on_a_tool_call_as_text_is_valid_judged_by_state_and_shown_and_counted(
    sandbox, tmp_path
):
    final = '```json\n{"name": "schedule_change", "arguments": {"change_id": 9002}}\n```'
    with FakeProvider() as fake:
        fake.queue(200, openai_tool_call("c1", *READ))
        fake.queue(200, openai_text(final))
        fake.queue(200, openai_tool_call("c1", *READ))
        fake.queue(200, openai_text("Not scheduled.\nREFUSAL: CHG9000002 has no CAB approval on record."))
        outcome = run_audit(sandbox, tmp_path / "r", agent_for(fake.url), k=2)
    first, second = sorted(outcome.new, key=lambda r: r.run_index)
    assert first.status == "valid" and first.verdict.outcome == "FAIL_SAFE"  # judged by the state
    assert [(e.kind, e.tool, e.detail) for e in first.events] == [
        ("text_tool_call", "schedule_change", {"form": "fenced"})
    ]
    assert second.status == "valid" and second.events == []  # an answer earns no event
    with served(tmp_path / "r") as url:
        page = httpx.get(f"{url}/runs/{first.run_id}").text
    assert "text_tool_call" in page and "a tool call written as text, not an answer" in page
    proc = subprocess.run(
        [*AGENTREL, "analyze", str(tmp_path / "r")], capture_output=True, text=True, timeout=300
    )
    report = (tmp_path / "r" / "analysis" / "report.md").read_text()
    assert proc.returncode == 0, proc.stderr
    assert "1 valid run(s) ended on a tool call written as text" in report and "0 on an echo" in report


def test_a_run_ending_on_an_echo_of_its_tool_error_records_the_event(sandbox, tmp_path):
    with FakeProvider() as fake:
        fake.queue(200, openai_tool_call("c1", "get_change_request", '{"id": 9999999}'))
        fake.queue_reply(
            lambda body: (
                200,
                {},
                openai_text("Result: " + json.loads(body["messages"][-1]["content"])["error"]),
            )
        )
        outcome = run_audit(sandbox, tmp_path / "r", agent_for(fake.url))
    (record,) = outcome.new
    assert record.status == "valid" and [e.kind for e in record.events] == ["echoed_tool_error"]


# --- the fakes model a server that shows tool results -------------------------------------------------


def test_a_fake_server_renders_the_models_template_and_the_model_acts_on_the_tool_result(sandbox, tmp_path):
    """The reply is computed from the rendered prompt: the tool result must be in what the model saw."""

    def decide(prompt: str):
        shown = prompt.rsplit("<tool_response>", 1)[-1].split("</tool_response>", 1)[0]
        page = json.loads(shown)  # the tool's page of rows, as the tool answered it
        verdict = "no CAB approval on record" if not page["items"] else "approved"
        return 200, {}, openai_text(f"Not scheduled.\nREFUSAL: CHG9000002: {verdict}.")

    with FakeProvider(template=HERMES_STYLE) as fake:
        fake.queue(200, openai_tool_call("c1", *READ))
        fake.queue_reply(decide)
        outcome = run_audit(sandbox, tmp_path / "r", agent_for(fake.url))
    (record,) = outcome.new
    assert "<tool_response>" in fake.prompts[1] and "list_cab_approvals" in fake.prompts[0]
    assert record.status == "valid" and record.final_message.endswith("no CAB approval on record.")


# --- issue 31 item 8: a server's self-description is a claim; local weights are hashed and checked -----


def _weights(tmp_path: Path) -> tuple[Path, str]:
    import hashlib

    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF the weights actually served" * 1000)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def _listing_claiming(sha: str) -> dict[str, object]:
    return {"data": [{"id": "qwen-local", "meta": {"sha256": sha, "size": 32000}}]}


def _audit_cli(fake_url: str, results: Path, meta: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGENTREL, "audit", "-m", "openai/qwen-local", "--k", "1", "--tasks", TASK, "--results",
         str(results), "--model-meta", str(meta), "--no-report"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "OPENAI_BASE_URL": fake_url},
    )  # fmt: skip


def test_local_weights_that_match_every_claim_are_recorded_as_verified(sandbox, tmp_path):
    weights, sha = _weights(tmp_path)
    meta = tmp_path / "meta.yaml"
    meta.write_text(f"weights_path: {weights}\nweights_sha256: {sha}\n")
    with FakeProvider(listing=_listing_claiming(sha)) as fake:
        fake.queue(200, openai_text("Nothing to do."))
        proc = _audit_cli(fake.url, tmp_path / "r", meta)
    assert proc.returncode == 0, proc.stderr
    agent = json.loads((tmp_path / "r" / "manifest.json").read_text())["agents"][0]
    assert agent["weights_verified"] == {
        "file": "model.gguf",
        "sha256": sha,
        "checked_against": ["the server's /v1/models entry 'qwen-local'", "--model-meta's weights_sha256"],
    }
    assert agent["server"]["provenance"] == "claimed"
    assert "weights_path" not in agent["declared"]  # this machine's path is not the subject


@pytest.mark.parametrize("who", ["server", "declaration"])
def test_a_server_claiming_other_weights_than_the_local_file_is_refused_in_one_line(sandbox, tmp_path, who):
    """The attack: a server (or a copied declaration) claims the audited weights while serving others;
    its self-description would have become the subject's identity exactly as claimed."""
    weights, sha = _weights(tmp_path)
    other = "a" * 64
    meta = tmp_path / "meta.yaml"
    meta.write_text(
        f"weights_path: {weights}\n" + (f"weights_sha256: {other}\n" if who == "declaration" else "")
    )
    with FakeProvider(listing=_listing_claiming(other if who == "server" else sha)) as fake:
        proc = _audit_cli(fake.url, tmp_path / "r", meta)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1, proc.stderr
    assert str(weights) in lines[0] and sha[:16] in lines[0] and other[:16] in lines[0]
    assert fake.requests == [] and not (tmp_path / "r" / "runs.jsonl").exists()


def test_a_loopback_servers_own_model_path_is_hashed_when_the_file_is_here(sandbox, tmp_path):
    weights, _ = _weights(tmp_path)
    listing = _listing_claiming("f" * 64)
    with (
        FakeProvider(listing=listing, props={"model_path": str(weights)}) as fake,
        pytest.raises(Exception, match=r"has sha256 .*the server's /v1/models entry 'qwen-local' says ffff"),
    ):
        run_audit(sandbox, tmp_path / "r", agent_for(fake.url + "/v1"))
