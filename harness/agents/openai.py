"""`openai/<model>`: any OpenAI-compatible chat-completions endpoint with tool calling.

OpenAI, OpenRouter, vLLM, Ollama and llama.cpp servers all speak it. Base URL and key come from
OPENAI_BASE_URL / OPENAI_API_KEY; a local server (a base URL on localhost) needs no key.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse

from harness.agents.base import Usage
from harness.agents.chat import ChatAgent, ToolCallRequest, Turn, require_key

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIWire:
    def __init__(self, model: str, sampling: dict[str, Any]) -> None:
        self.model, self.sampling = model, sampling

    def start(self, system: str, user: str) -> list[dict[str, Any]]:
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def tool_schema(self, tool: Any) -> dict[str, Any]:
        return tool.openai_schema()

    def request(
        self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> tuple[str, dict[str, Any]]:
        return "/chat/completions", {
            "model": self.model,
            "messages": messages,
            "tools": tools,
            **self.sampling,
        }

    def parse(self, body: dict[str, Any]) -> Turn:
        message = body["choices"][0]["message"]
        calls = [
            ToolCallRequest(c["id"], c["function"]["name"], c["function"].get("arguments") or "")
            for c in message.get("tool_calls") or []
        ]
        usage = body.get("usage") or {}
        return Turn(
            message.get("content"),
            calls,
            Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)), 1),
            raw=message,
        )

    def append(
        self, messages: list[dict[str, Any]], turn: Turn, results: list[tuple[str, str, bool]]
    ) -> None:
        assistant = {"role": "assistant", "content": turn.raw.get("content")}
        if turn.raw.get("tool_calls"):
            assistant["tool_calls"] = turn.raw["tool_calls"]
        messages.append(assistant)
        messages.extend(
            {"role": "tool", "tool_call_id": cid, "content": content} for cid, content, _ in results
        )


class OpenAIAgent(ChatAgent):
    @classmethod
    def from_env(cls, model: str, sampling: dict[str, Any], env: dict[str, str] | None = None) -> OpenAIAgent:
        env = dict(os.environ if env is None else env)
        base_url = env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        local = urlparse(base_url).hostname in ("localhost", "127.0.0.1", "::1")
        key = env.get("OPENAI_API_KEY") if local else require_key(env, "OPENAI_API_KEY", f"openai/{model}")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return cls(f"openai/{model}", model, base_url, headers, OpenAIWire(model, sampling), sampling)
