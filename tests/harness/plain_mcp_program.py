"""An agent program with no MCP library: the contract over plain HTTP, standard library only.

    python -S plain_mcp_program.py PLAN.json

It shows the contract needs nothing but HTTP POSTs (any language can implement it), and it measures
AgentRel's own per-run overhead without an SDK's import time (bench/agent_overhead.py). PLAN.json is
{"steps": [[tool, args], ...], "final": "..."}: it initializes an MCP session at AGENTREL_MCP_URL with
the bearer token, makes the calls in order, writes the final message, and exits. Optional keys for the
tests of what outlives a run: "child": a marker to start a sleeping child with on its command line
("child_session": true puts the child in a session of its own), "hang": true to sleep until killed.

Streamable HTTP, as the MCP specification has it: every JSON-RPC message is a POST accepting JSON or an
event stream; the session id the server returns on `initialize` goes on every later request.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path
from typing import Any

URL = os.environ["AGENTREL_MCP_URL"]
HEADERS = {
    "Authorization": f"Bearer {os.environ['AGENTREL_MCP_TOKEN']}",
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}


def post(message: dict[str, Any], session: str | None) -> tuple[dict[str, Any] | None, str | None]:
    headers = dict(HEADERS)
    if session is not None:
        headers["Mcp-Session-Id"] = session
        headers["Mcp-Protocol-Version"] = "2025-06-18"
    request = urllib.request.Request(URL, json.dumps(message).encode(), headers, method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read().decode()
        sid = response.headers.get("Mcp-Session-Id") or session
        if response.headers.get_content_type() == "text/event-stream":
            data = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
            body = data[-1] if data else ""
    return (json.loads(body) if body.strip() else None), sid


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text())
    hello = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "plain-http-agent", "version": "1"},
    }
    _, session = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}, None)
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    for i, (tool, args) in enumerate(plan["steps"], start=1):
        call = {"name": tool, "arguments": args}
        reply, _ = post({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": call}, session)
        failed = reply is None or "error" in reply or reply["result"].get("isError")
        print(f"{tool}: {'error' if failed else 'ok'}", flush=True)
    if plan.get("child") and os.environ["AGENTREL_RUN_ID"] != "probe":
        import subprocess

        sleeper = [sys.executable, "-S", "-c", "import time; time.sleep(600)", plan["child"]]
        subprocess.Popen(sleeper, start_new_session=bool(plan.get("child_session")))
    if plan.get("hang"):
        import time

        time.sleep(600)
    if plan.get("final"):
        Path(os.environ["AGENTREL_FINAL_MESSAGE_FILE"]).write_text(plan["final"], encoding="utf-8")


if __name__ == "__main__":
    main()
