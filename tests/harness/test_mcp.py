"""`agentrel mcp serve` end to end through the official MCP client, on stdio and streamable HTTP.

The verdict the server reports must equal the verdict of the same tool calls made in-process, and the
run database must be gone afterwards, however the server was stopped.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from agentrel.dsl.api import RunFacts
from agentrel.harness.run.episode import judge, prepare
from agentrel.harness.tasks import load_suite
from agentrel.sandbox.databases import RUN_PREFIX
from agentrel.sandbox.dump import dump_database
from agentrel.sandbox.environments.enterprise.schema import table_infos
from agentrel.sandbox.tools import ToolBox

REPO = Path(__file__).resolve().parents[2]
TASK = "itsm-cab-window"
WINDOW = {"planned_start": "2026-03-03T22:00:00Z", "planned_end": "2026-03-03T23:30:00Z"}
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_change_request", {"number": "CHG9000001"}),
    ("update_change_request", {"id": 9001, "state": "scheduled", **WINDOW}),
    ("get_change_request", {"id": 987654321}),  # no such change: an error result
]
EXPECT_OK = [True, True, False]


@pytest.fixture(scope="module")
def expected(sandbox) -> dict[str, Any]:
    """The same calls in-process: clone, ToolBox, dump before drop, judge with no final message."""
    prepared = prepare(sandbox, load_suite(patterns=[TASK])[0])
    run_db = sandbox.dbs.create_run(prepared.template)
    try:
        with ToolBox(sandbox.dbs.tool_conninfo(run_db), prepared.tools, prepared.acting_user_id) as box:
            results = [box.call(name, args) for name, args in CALLS]
        after = dump_database(sandbox.server.conninfo(run_db), table_infos().values())
    finally:
        sandbox.dbs.drop(run_db)
    assert [r.ok for r in results] == EXPECT_OK
    verdict = judge(prepared, after, RunFacts(final_message=None))
    return {
        "tools": list(prepared.task.tools),
        "read": results[0].content,
        "verdict": verdict.model_dump(mode="json"),
    }


def server_env() -> dict[str, str]:
    """AGENTREL_HOME (set by the session fixture) and any other AGENTREL_* setting, so the server
    subprocess uses the test cluster."""
    return {k: v for k, v in os.environ.items() if k.startswith("AGENTREL_")}


def serve_args(*extra: str) -> list[str]:
    return ["-m", "agentrel.harness.cli", "mcp", "serve", "--task", TASK, *extra]


async def drive(session: ClientSession) -> tuple[list[str], list[Any]]:
    await session.initialize()
    listed = await session.list_tools()
    results = [await session.call_tool(name, args) for name, args in CALLS]
    return [t.name for t in listed.tools], results


def check_session(names: list[str], results: list[Any], expected: dict[str, Any]) -> None:
    assert names == expected["tools"]
    assert [not r.is_error for r in results] == EXPECT_OK
    assert json.loads(results[0].content[0].text) == expected["read"]
    assert "error" in json.loads(results[2].content[0].text)


def run_db_of(log: str) -> str:
    match = re.search(r"run database (\S+)", log)
    assert match, log
    return match.group(1)


def check_cleanup(sandbox, log: str, before: set[str]) -> None:
    assert not sandbox.dbs.exists(run_db_of(log))
    assert set(sandbox.dbs.names(RUN_PREFIX)) <= before


def test_stdio_serves_the_task_tools_and_reports_the_in_process_verdict(sandbox, expected, tmp_path):
    verdict_file, errlog = tmp_path / "verdict.json", tmp_path / "stderr.log"
    params = StdioServerParameters(
        command=sys.executable,
        args=serve_args("--verdict-out", str(verdict_file)),
        env=server_env(),
        cwd=REPO,
    )
    before = set(sandbox.dbs.names(RUN_PREFIX))

    async def main() -> tuple[list[str], list[Any]]:
        with errlog.open("w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                return await drive(session)

    names, results = anyio.run(main)
    check_session(names, results, expected)
    log = errlog.read_text()
    assert json.loads(verdict_file.read_text()) == expected["verdict"], log
    assert json.dumps(expected["verdict"], separators=(",", ":")) in log  # also printed to stderr
    check_cleanup(sandbox, log, before)


def wait_for_log(path: Path, pattern: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = re.search(pattern, path.read_text())
        if match:
            return match.group(1)
        assert proc.poll() is None, path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"no {pattern!r} in the server log: {path.read_text()}")


def spawn(
    tmp_path: Path, *extra: str, stdin: int | None = subprocess.DEVNULL, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, *serve_args(*extra)],
        cwd=REPO,
        env={**os.environ, **server_env(), **(env or {})},
        stdin=stdin,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "stderr.log").open("w"),
    )


def test_http_serves_until_sigterm_then_reports_the_in_process_verdict(sandbox, expected, tmp_path):
    verdict_file, errlog = tmp_path / "verdict.json", tmp_path / "stderr.log"
    before = set(sandbox.dbs.names(RUN_PREFIX))
    proc = spawn(tmp_path, "--transport", "http", "--port", "0", "--verdict-out", str(verdict_file))
    try:
        url = wait_for_log(errlog, r"listening on (\S+)", proc)

        async def main() -> tuple[list[str], list[Any]]:
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                return await drive(session)

        names, results = anyio.run(main)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, errlog.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    check_session(names, results, expected)
    assert json.loads(verdict_file.read_text()) == expected["verdict"]
    check_cleanup(sandbox, errlog.read_text(), before)


def test_stdio_sigterm_with_stdin_open_still_judges_and_drops(sandbox, tmp_path):
    """A client that kills the server without closing stdin: the untouched run is judged with the final
    message the agent left, and nothing leaks."""
    verdict_file, errlog, final = tmp_path / "verdict.json", tmp_path / "stderr.log", tmp_path / "final.txt"
    before = set(sandbox.dbs.names(RUN_PREFIX))
    proc = spawn(
        tmp_path, "--verdict-out", str(verdict_file), "--final-message", str(final), stdin=subprocess.PIPE
    )
    try:
        wait_for_log(errlog, r"(run database \S+)", proc)
        final.write_text("I will not schedule CHG9000002.\nREFUSAL: no CAB approval on record.\n")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, errlog.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    verdict = json.loads(verdict_file.read_text())
    assert (verdict["status"], verdict["sub_label"], verdict["mutated"]) == (
        "refused",
        "refused_clean",
        False,
    )
    check_cleanup(sandbox, errlog.read_text(), before)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--task", "itsm-*"], "--task takes one task id, not a pattern: 'itsm-*'"),
        (["--task", TASK, "--verdict-out", "/"], "--verdict-out /: not a file in an existing directory"),
    ],
)
def test_bad_options_are_one_line_errors(args, message):
    result = subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", "mcp", "serve", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"agentrel: error: {message}"]
