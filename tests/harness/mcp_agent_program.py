"""A tiny external agent program for the tests: the official MCP SDK client over streamable HTTP.

    python mcp_agent_program.py PLAN.json MODE

PLAN.json: {"steps": [[tool, args], ...], "final": "..."}; the final message, when there is one, goes to
AGENTREL_FINAL_MESSAGE_FILE. It reads only the AGENTREL_* contract from its environment.
MODE:
  plan           make the plan's calls in order, then report usage and exit 0
  stdio          the same through `agentrel mcp stdio-proxy`, spawned as its stdio MCP server
  plan-then-crash  make the first call, then exit 3 (its own crash after acting)
  unknown-tool   call a tool the task does not have, then the plan
  hang           never connect; sleep until killed (its budget passes)
  hang-after-connect  connect, then sleep past its budget while its child (argv[3] on its command line,
                 for the test to look for) also sleeps
  flood          connect, then write many megabytes to stdout
  escape         connect, start a child in its own session (out of the group; argv[3] on its command
                 line), then the plan
  exit-at-once   exit 1 at once, saying why on stderr
  env            print what it was given (argv, AGENTREL_* names, prompt bytes) as one `SEEN {json}` line
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


@asynccontextmanager
async def connect(mode: str) -> AsyncIterator[ClientSession]:
    if mode == "stdio":  # the agent spawns its MCP server itself: AgentRel's stdio proxy
        proxy = StdioServerParameters(
            command=sys.executable,
            args=["-m", "agentrel.harness.cli", "mcp", "stdio-proxy"],
            env=dict(os.environ),
        )
        async with stdio_client(proxy) as (read, write), ClientSession(read, write) as session:
            yield session
        return
    headers = {"Authorization": f"Bearer {os.environ['AGENTREL_MCP_TOKEN']}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(os.environ["AGENTREL_MCP_URL"], http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        yield session


async def act(steps: list[list[object]], mode: str) -> None:
    async with connect(mode) as session:
        await session.initialize()
        await session.list_tools()
        if mode == "flood":
            chunk = "x" * 65536 + "\n"
            for _ in range(400):  # ~26 MB
                sys.stdout.write(chunk)
            sys.stdout.flush()
            return
        if mode == "hang-after-connect":
            # A child in the same process group that would outlive the agent if only the agent were killed.
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", sys.argv[3]])
            time.sleep(600)
        if mode == "escape":
            # A child in a session of its own (as MCP client libraries start stdio servers), out of the
            # agent's process group, holding the run's environment.
            subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(600)", sys.argv[3]], start_new_session=True
            )
        if mode == "unknown-tool":
            await session.call_tool("drop_all_tables", {})
        for i, (tool, args) in enumerate(steps):
            result = await session.call_tool(str(tool), args)  # type: ignore[arg-type]
            print(f"{tool}: {'error' if result.is_error else 'ok'}", flush=True)
            if mode == "plan-then-crash" and i == 0:
                sys.stderr.write("agent: giving up after the first call\n")
                os._exit(3)


def main() -> None:
    plan, mode = Path(sys.argv[1]), sys.argv[2]
    plan_doc = json.loads(plan.read_text())
    steps = plan_doc["steps"]
    if mode == "exit-at-once":
        sys.stderr.write("agent: no model configured\n")
        sys.exit(1)
    if mode == "hang":
        time.sleep(600)
    if mode == "env":
        seen = {
            "argv": sys.argv,
            "agentrel_vars": sorted(k for k in os.environ if k.startswith("AGENTREL_")),
            "system": Path(os.environ["AGENTREL_SYSTEM_PROMPT_FILE"]).read_bytes().decode("utf-8"),
            "user": Path(os.environ["AGENTREL_USER_PROMPT_FILE"]).read_bytes().decode("utf-8"),
            "run_id": os.environ["AGENTREL_RUN_ID"],
            "token_in_argv": any(os.environ["AGENTREL_MCP_TOKEN"] in a for a in sys.argv),
            "url": os.environ["AGENTREL_MCP_URL"],
        }
        if seen["run_id"] != "probe":
            print("SEEN " + json.dumps(seen), flush=True)
        steps = []
    anyio.run(act, steps, mode)
    if plan_doc.get("final"):
        Path(os.environ["AGENTREL_FINAL_MESSAGE_FILE"]).write_text(plan_doc["final"], encoding="utf-8")
    usage = {"input_tokens": 1200, "output_tokens": 300, "model": "gpt-4o-mini"}
    Path(os.environ["AGENTREL_USAGE_FILE"]).write_text(json.dumps(usage))
    print(f"done; token {os.environ['AGENTREL_MCP_TOKEN']}", flush=True)  # redacted from the transcript


if __name__ == "__main__":
    main()
