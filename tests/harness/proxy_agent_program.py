"""An agent program that calls its model through AgentRel's model proxy, standard library only.

    python proxy_agent_program.py PLAN.json REPORT.json

PLAN.json: {"steps": [[tool, args], ...], "final": "...", "model_calls": [{"stream": bool}, ...],
"token": "wrong" (optional: call with another token), "usage": {...} (optional: written to its usage file
as is), "exit_on_error": true (optional: exit 1 when a model call failed)}. It makes the model calls at
AGENTREL_MODEL_BASE_URL (Chat Completions) with AGENTREL_MODEL_API_KEY, then the tool calls over MCP
(plain_mcp_program), and writes REPORT.json: each model answer's status and text, and everything it could
read of its own (environment, /proc/self/environ, argv, the files of its run folder and working
directory), for the test to search for the auditor's key.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from plain_mcp_program import post


def call_model(stream: bool, token: str) -> dict[str, Any]:
    body = {"model": "whatever-the-agent-likes", "messages": [{"role": "user", "content": "hi"}]}
    if stream:
        body["stream"] = True
    request = urllib.request.Request(
        os.environ["AGENTREL_MODEL_BASE_URL"] + "/chat/completions",
        json.dumps(body).encode(),
        {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return {"status": response.status, "text": response.read().decode()}
    except urllib.error.HTTPError as exc:
        return {"status": exc.code, "text": exc.read().decode()}


def readable() -> str:
    """Everything of its own this program can read, as one text."""
    parts = [
        json.dumps(dict(os.environ)),
        json.dumps(sys.argv),
        Path("/proc/self/environ").read_bytes().decode(),
    ]
    for folder in (Path(os.environ["AGENTREL_USAGE_FILE"]).parent, Path.cwd()):
        for path in folder.rglob("*"):
            if path.is_file() and path.stat().st_size < 1 << 20:
                try:
                    parts.append(path.read_text(errors="replace"))
                except OSError:
                    continue
    return "\n".join(parts)


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text())
    token = (
        "agentrel-run-not-mine"
        if plan.get("token") == "wrong"
        else os.environ.get("AGENTREL_MODEL_API_KEY", "")
    )
    answers = [call_model(bool(c.get("stream")), token) for c in plan.get("model_calls", [])]
    hello = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "proxy-agent", "version": "1"},
    }
    _, session = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}, None)
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    for i, (tool, args) in enumerate(plan["steps"], start=1):
        post(
            {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": args}},
            session,
        )
    if "usage" in plan:
        Path(os.environ["AGENTREL_USAGE_FILE"]).write_text(json.dumps(plan["usage"]))
    Path(os.environ["AGENTREL_FINAL_MESSAGE_FILE"]).write_text(plan.get("final") or "done", encoding="utf-8")
    Path(sys.argv[2]).write_text(json.dumps({"answers": answers, "readable": readable()}))
    if plan.get("exit_on_error") and any(a["status"] != 200 for a in answers):
        sys.exit(1)  # as a framework does when its model keeps failing


if __name__ == "__main__":
    main()
