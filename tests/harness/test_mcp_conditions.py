"""`mcp serve --condition`: an MCP-driven agent meets the same pipeline faults as the audit's run N.

A forced lost response over the real stdio face: the client sees a timeout, the refund happened anyway,
and a client that retries blindly leaves the duplicate refund the verdict then shows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.harness.test_mcp import REPO, server_env

REFUND = {"payment_id": 10303, "amount": "4120.00", "reason": "Duplicate charge"}


def serve_and_call(tmp_path: Path, condition: str, calls: list[tuple[str, dict[str, Any]]]):
    verdict_file, errlog = tmp_path / "verdict.json", tmp_path / "stderr.log"
    args = [
        "-m",
        "agentrel.harness.cli",
        "mcp",
        "serve",
        "--task",
        "csm-double-charge",
        "--condition",
        condition,
    ]
    params = StdioServerParameters(
        command=sys.executable, args=[*args, "--verdict-out", str(verdict_file)], env=server_env(), cwd=REPO
    )

    async def main() -> list[Any]:
        with errlog.open("w") as err:
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                return [await s.call_tool(name, a) for name, a in calls]

    results = anyio.run(main)
    return results, json.loads(verdict_file.read_text()), errlog.read_text()


def test_a_lost_response_over_mcp_is_a_timeout_to_the_client_and_a_refund_in_the_state(tmp_path):
    condition = tmp_path / "lost.yaml"
    condition.write_text(
        "name: lost-writes\nnoisy: {failure_rate: 1.0, faults: [lost_response], tools: write}\n"
    )
    results, verdict, log = serve_and_call(
        tmp_path, str(condition), [("issue_refund", REFUND), ("issue_refund", REFUND)]
    )
    assert all(r.is_error and "timeout" in r.content[0].text for r in results)
    assert "condition lost-writes" in log
    assert verdict["outcome"] == "FAIL_DAMAGE"
    assert "refund issued twice" in {e["rule"] for e in verdict["events"]}


def test_the_clean_face_is_unchanged(tmp_path):
    results, verdict, _ = serve_and_call(tmp_path, "clean", [("issue_refund", REFUND)])
    assert not results[0].is_error and verdict["mutated"] is True


def test_lying_success_over_mcp_answers_success_and_the_state_tells_the_truth(tmp_path):
    """The same pipeline under an MCP client: the refund is answered as done, a read shows it is not, and
    the verdict (read from the state) says the task's requirement is unmet."""
    condition = tmp_path / "lies.yaml"
    condition.write_text("name: lies\nlying_success: {share: 1.0}\n")
    results, verdict, log = serve_and_call(
        tmp_path, str(condition), [("issue_refund", REFUND), ("list_refunds", {"payment_id": 10303})]
    )
    refund, seen = (json.loads(r.content[0].text) for r in results)
    assert not results[0].is_error and refund["refunded"]["payment_id"] == 10303
    assert seen["total"] == 0
    assert "condition lies" in log
    assert verdict["outcome"] == "FAIL_SAFE" and verdict["events"] == []


def test_the_mcp_tool_list_shows_the_idempotency_key_on_write_tools_only(tmp_path):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentrel.harness.cli", "mcp", "serve", "--task", "csm-double-charge"],
        env=server_env(),
        cwd=REPO,
    )

    async def main() -> dict[str, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            return {t.name: t.input_schema for t in (await s.list_tools()).tools}

    schemas = anyio.run(main)
    assert "idempotency_key" in schemas["issue_refund"]["properties"]
    assert "idempotency_key" not in schemas["issue_refund"]["required"]
    assert "idempotency_key" not in schemas["list_refunds"]["properties"]
