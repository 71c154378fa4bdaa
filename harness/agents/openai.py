"""`openai/<model>`: any OpenAI-compatible chat-completions endpoint with tool calling.

OpenAI, OpenRouter, vLLM, Ollama and llama.cpp servers all speak it. Base URL and key come from
OPENAI_BASE_URL / OPENAI_API_KEY; a local server (a base URL on localhost) needs no key.
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import urlparse

from agentrel.harness.agents.base import Usage
from agentrel.harness.agents.chat import (
    INVALID,
    ChatAgent,
    ModelOutputError,
    ToolCallRequest,
    Turn,
    require_key,
    text_of,
    tokens,
)
from agentrel.harness.agents.registry import agent_adapter
from agentrel.harness.agents.retry import ProviderError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
STOPS = {"stop": "end", "tool_calls": "tool_use", "function_call": "tool_use", "length": "length"}
STOPS["content_filter"] = "filtered"


class OpenAIWire:
    models_path = "/models"
    sends_seed = True  # OpenAI's field; vLLM, llama.cpp and Ollama honour it

    def __init__(self, model: str, sampling: dict[str, Any]) -> None:
        self.model, self.sampling = model, sampling

    def start(self, system: str, user: str) -> list[dict[str, Any]]:
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def tool_schema(self, tool: Any) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
        }

    def request(
        self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], seed: int
    ) -> tuple[str, dict[str, Any]]:
        # tool_choice "auto" is OpenAI's default, but llama.cpp-style servers (llama-cpp-python's
        # chatml-function-calling) leave the tools out of the prompt unless it is sent.
        return "/chat/completions", {
            "model": self.model,
            "messages": messages,
            "tools": tools,
            **({"tool_choice": "auto"} if tools else {}),
            "seed": seed,
            **self.sampling,
        }

    def parse(self, body: dict[str, Any]) -> Turn:
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ProviderError("HTTP 200 with no choices", INVALID)
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise ProviderError("HTTP 200 with a choice that has no message", INVALID)
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise ModelOutputError("tool_calls is not a list")
        calls = []
        for i, c in enumerate(raw_calls):
            fn = c.get("function") if isinstance(c, dict) else None
            if not isinstance(fn, dict):
                raise ModelOutputError(f"tool call {i + 1} has no function")
            call_id = c["id"] if isinstance(c.get("id"), str) and c["id"] else f"call_{i + 1}"
            calls.append(ToolCallRequest(call_id, str(fn.get("name")), fn.get("arguments") or ""))
        usage = body.get("usage")
        reason = choices[0].get("finish_reason")
        return Turn(
            text_of(message.get("content")),
            calls,
            Usage(tokens(usage, "prompt_tokens"), tokens(usage, "completion_tokens"), 1),
            stop=STOPS.get(reason, reason) if isinstance(reason, str) else None,
            raw=message,
            served=body["model"] if isinstance(body.get("model"), str) else None,
        )

    def append(
        self, messages: list[dict[str, Any]], turn: Turn, results: list[tuple[str, str, bool]]
    ) -> None:
        # "" rather than null beside tool calls: OpenAI takes either, llama-cpp-python's server refuses
        # null with a 500 (its request model types `content` as a string).
        assistant: dict[str, Any] = {"role": "assistant", "content": turn.text or ""}
        if turn.tool_calls:
            assistant["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": _text(c.arguments)},
                }
                for c in turn.tool_calls
            ]
        messages.append(assistant)
        messages.extend(
            {"role": "tool", "tool_call_id": cid, "content": content} for cid, content, _ in results
        )


def _text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)


class OpenAIAgent(ChatAgent):
    @classmethod
    def from_env(cls, model: str, sampling: dict[str, Any], env: dict[str, str] | None = None) -> OpenAIAgent:
        env = dict(os.environ if env is None else env)
        base_url = env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        local = urlparse(base_url).hostname in ("localhost", "127.0.0.1", "::1")
        key = env.get("OPENAI_API_KEY") if local else require_key(env, "OPENAI_API_KEY", f"openai/{model}")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        wire = OpenAIWire(model, sampling)
        return cls(f"openai/{model}", model, base_url, headers, wire, sampling, key_var="OPENAI_API_KEY")


@agent_adapter("openai", "openai/<model>")
def _openai(model: str, sampling: dict[str, Any]) -> OpenAIAgent:
    return OpenAIAgent.from_env(model, sampling)
