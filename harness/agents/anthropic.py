"""`anthropic/<model>`: the Messages API with `tool_use` / `tool_result` blocks.

Base URL and key come from ANTHROPIC_BASE_URL (default https://api.anthropic.com) / ANTHROPIC_API_KEY.
"""

from __future__ import annotations

import os
from typing import Any

from harness.agents.base import Usage
from harness.agents.chat import ChatAgent, ToolCallRequest, Turn, require_key

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
MAX_TOKENS = 4096


class AnthropicWire:
    def __init__(self, model: str, sampling: dict[str, Any]) -> None:
        self.model, self.sampling = model, sampling

    def start(self, system: str, user: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": user}]

    def tool_schema(self, tool: Any) -> dict[str, Any]:
        return tool.anthropic_schema()

    def request(
        self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> tuple[str, dict[str, Any]]:
        return "/v1/messages", {
            "model": self.model,
            "max_tokens": MAX_TOKENS,
            "system": system,
            "messages": messages,
            "tools": tools,
            **self.sampling,
        }

    def parse(self, body: dict[str, Any]) -> Turn:
        blocks = body["content"]
        text = "\n".join(b["text"] for b in blocks if b.get("type") == "text") or None
        calls = [
            ToolCallRequest(b["id"], b["name"], b.get("input", {}))
            for b in blocks
            if b.get("type") == "tool_use"
        ]
        usage = body.get("usage") or {}
        return Turn(
            text,
            calls,
            Usage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), 1),
            raw={"content": blocks},
        )

    def append(
        self, messages: list[dict[str, Any]], turn: Turn, results: list[tuple[str, str, bool]]
    ) -> None:
        messages.append({"role": "assistant", "content": turn.raw["content"]})
        if results:
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": cid, "content": content, "is_error": is_error}
                        for cid, content, is_error in results
                    ],
                }
            )


class AnthropicAgent(ChatAgent):
    @classmethod
    def from_env(
        cls, model: str, sampling: dict[str, Any], env: dict[str, str] | None = None
    ) -> AnthropicAgent:
        env = dict(os.environ if env is None else env)
        key = require_key(env, "ANTHROPIC_API_KEY", f"anthropic/{model}")
        base_url = env.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
        headers = {"x-api-key": key, "anthropic-version": API_VERSION}
        return cls(f"anthropic/{model}", model, base_url, headers, AnthropicWire(model, sampling), sampling)
