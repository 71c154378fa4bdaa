"""A minimal tool-calling agent with no library at all (Python's standard library), audited by AgentRel.

    agentrel audit --env tryton-erp --agent plain='python examples/agents/plain_http_agent.py' \
        --agent-model scripted/oracle --tasks tryton-credit-once

The loop every agent framework runs, written out: list the run's tools over MCP (Streamable HTTP, plain
POSTs), offer them to the model as OpenAI Chat Completions functions, call each tool the model asks for
through MCP and hand the result back, until the model answers in text; that text is the final message.
The model is AgentRel's model proxy (`--agent-model`: AGENTREL_MODEL_BASE_URL, AGENTREL_MODEL_API_KEY, a
per-run token, and AGENTREL_MODEL), else OPENAI_BASE_URL with OPENAI_API_KEY and AGENT_MODEL. The
contract it reads is docs/how-to/your-own-agent.md's.
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path
from typing import Any

MAX_TURNS = 30
TOKENS = {"input_tokens": 0, "output_tokens": 0}  # summed over the model's answers, for the usage file
MCP_HEADERS = {
    "Authorization": f"Bearer {os.environ['AGENTREL_MCP_TOKEN']}",
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}


def mcp(message: dict[str, Any], session: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """One MCP message (a POST); the reply, and the session id the server gave on `initialize`."""
    headers = dict(MCP_HEADERS)
    if session is not None:
        headers.update({"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"})
    request = urllib.request.Request(
        os.environ["AGENTREL_MCP_URL"], json.dumps(message).encode(), headers, method="POST"
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        body = response.read().decode()
        session = response.headers.get("Mcp-Session-Id") or session
        if response.headers.get_content_type() == "text/event-stream":
            data = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
            body = data[-1] if data else ""
    return (json.loads(body) if body.strip() else None), session


def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    base = os.environ.get("AGENTREL_MODEL_BASE_URL") or os.environ["OPENAI_BASE_URL"]
    key = os.environ.get("AGENTREL_MODEL_API_KEY") or os.environ["OPENAI_API_KEY"]
    model = os.environ.get("AGENTREL_MODEL") or os.environ.get("AGENT_MODEL", "gpt-4o-mini")
    body = json.dumps({"model": model, "messages": messages, "tools": tools}).encode()
    request = urllib.request.Request(
        base.rstrip("/") + "/chat/completions",
        body,
        {"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        answer = json.loads(response.read())
    usage = answer.get("usage") or {}
    TOKENS["input_tokens"] += usage.get("prompt_tokens", 0)
    TOKENS["output_tokens"] += usage.get("completion_tokens", 0)
    return answer["choices"][0]["message"]  # type: ignore[no-any-return]


def main() -> None:
    hello = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "plain", "version": "1"},
    }
    _, session = mcp({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}, None)
    mcp({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    listed, _ = mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, session)
    assert listed is not None
    tools = [
        {"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                          "parameters": t.get("inputSchema", {"type": "object"})}}
        for t in listed["result"]["tools"]
    ]  # fmt: skip
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": Path(os.environ["AGENTREL_SYSTEM_PROMPT_FILE"]).read_text("utf-8")},
        {"role": "user", "content": Path(os.environ["AGENTREL_USER_PROMPT_FILE"]).read_text("utf-8")},
    ]
    final, ids = "", 2
    for _ in range(MAX_TURNS):
        message = chat(messages, tools)
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            final = message.get("content") or ""
            break
        for call in calls:
            function = call["function"]
            params = {"name": function["name"], "arguments": json.loads(function.get("arguments") or "{}")}
            reply, _ = mcp({"jsonrpc": "2.0", "id": ids, "method": "tools/call", "params": params}, session)
            ids += 1
            if reply is None or "error" in reply:
                text = f"error: {(reply or {}).get('error', {}).get('message', 'no answer')}"
            else:
                result = reply["result"]
                text = "".join(c.get("text", "") for c in result.get("content", []))
                text = f"error: {text}" if result.get("isError") else text
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
    Path(os.environ["AGENTREL_FINAL_MESSAGE_FILE"]).write_text(final, encoding="utf-8")
    model = os.environ.get("AGENTREL_MODEL") or os.environ.get("AGENT_MODEL", "gpt-4o-mini")
    Path(os.environ["AGENTREL_USAGE_FILE"]).write_text(json.dumps({**TOKENS, "model": model}))


if __name__ == "__main__":
    main()
