"""`anthropic/<model>`: the Messages API with `tool_use` / `tool_result` blocks.

Base URL and key come from ANTHROPIC_BASE_URL (default https://api.anthropic.com) / ANTHROPIC_API_KEY.
"""

from __future__ import annotations

import os
from typing import Any

from agentrel.harness.agents.base import Usage
from agentrel.harness.agents.chat import (
    INVALID,
    ChatAgent,
    ModelOutputError,
    ToolCallRequest,
    Turn,
    json_kind,
    require_key,
    tokens,
)
from agentrel.harness.agents.registry import agent_adapter
from agentrel.harness.agents.retry import ProviderError

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
MAX_TOKENS = 4096
STOPS = {"end_turn": "end", "stop_sequence": "end", "tool_use": "tool_use", "max_tokens": "length"}
STOPS["refusal"] = "filtered"


class AnthropicWire:
    models_path = "/v1/models"
    sends_seed = False  # the Messages API has no seed field (and refuses unknown ones)

    def __init__(self, model: str, sampling: dict[str, Any]) -> None:
        self.model, self.sampling = model, sampling

    def start(self, system: str, user: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": user}]

    def tool_schema(self, tool: Any) -> dict[str, Any]:
        return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}

    def request(
        self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], seed: int
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
        blocks = body.get("content")
        if not isinstance(blocks, list) or not blocks:
            raise ProviderError("HTTP 200 with zero content blocks", INVALID)
        texts, calls = [], []
        for i, b in enumerate(blocks):
            if not isinstance(b, dict):
                raise ModelOutputError(f"content block {i + 1} is {json_kind(b)}, not an object")
            if b.get("type") == "text":
                if not isinstance(b.get("text"), str):
                    raise ModelOutputError(f"text block {i + 1} holds {json_kind(b.get('text'))}, not text")
                texts.append(b["text"])
            elif b.get("type") == "tool_use":
                call_id = b["id"] if isinstance(b.get("id"), str) and b["id"] else f"toolu_{i + 1}"
                calls.append(ToolCallRequest(call_id, str(b.get("name")), b.get("input", {})))
        usage = body.get("usage")
        reason = body.get("stop_reason")
        return Turn(
            "\n".join(texts) or None,
            calls,
            Usage(tokens(usage, "input_tokens"), tokens(usage, "output_tokens"), 1),
            stop=STOPS.get(reason, reason) if isinstance(reason, str) else None,
            raw={"content": blocks},
            served=body["model"] if isinstance(body.get("model"), str) else None,
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
        wire = AnthropicWire(model, sampling)
        return cls(
            f"anthropic/{model}", model, base_url, headers, wire, sampling, key_var="ANTHROPIC_API_KEY"
        )


@agent_adapter("anthropic", "anthropic/<model>")
def _anthropic(model: str, sampling: dict[str, Any]) -> AnthropicAgent:
    return AnthropicAgent.from_env(model, sampling)
