"""`agentrel mcp serve --results DIR`: a person's MCP session recorded as one run of DIR, through the
audit (manifest, protocol, record, dump): the calls made through it are the record's, its verdict the
in-process scripted agent's for the same calls; a session nobody connected to is not_exposed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.tasks import load_suite
from tests.harness.test_mcp import REPO, server_env, wait_for_log

TASK = "csm-double-charge"


def serve(tmp_path, results, log_name: str) -> subprocess.Popen[bytes]:
    args = ["mcp", "serve", "--task", TASK, "--transport", "http", "--port", "0", "--results", str(results)]
    return subprocess.Popen(
        [sys.executable, "-m", "agentrel.harness.cli", *args, "--k", "2"],
        cwd=REPO,
        env={**os.environ, **server_env()},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / log_name).open("w"),
    )


def test_a_session_is_recorded_as_one_run_and_an_unused_one_is_not_exposed(sandbox, tmp_path):
    task = load_suite(patterns=[TASK])[0]
    results = tmp_path / "results"
    proc = serve(tmp_path, results, "one.log")
    try:
        url = wait_for_log(tmp_path / "one.log", r"listening on (\S+)", proc, timeout=120)

        async def drive() -> None:
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                for step in task.oracle.steps:
                    await session.call_tool(step.tool, step.args)

        anyio.run(drive)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0, (tmp_path / "one.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    (record,) = ResultsDir(results).records()
    assert (record.model, record.agent_kind, record.run_index, record.status) == (
        "agent/interactive",
        "external",
        1,
        "valid",
    )
    assert record.verdict.outcome == "PASS" and record.after_digest is not None
    assert [c["tool"] for c in record.tool_calls] == [s.tool for s in task.oracle.steps]

    proc = serve(tmp_path, results, "two.log")  # the next run of the cell; nobody connects
    try:
        wait_for_log(tmp_path / "two.log", r"listening on (\S+)", proc, timeout=120)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 0, (tmp_path / "two.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    first, second = ResultsDir(results).records()
    assert first == record
    assert (second.run_index, second.status) == (2, "not_exposed")
    assert "no MCP client connected" in second.error.message
