"""The tool loop shared by chat-model adapters, and their HTTP plumbing.

An adapter only knows its wire format: how to start a conversation, send one request, read a turn
(text + tool calls + usage), and append tool results. The loop, the step budget, retries and error
classification live here once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from harness.agents.base import AgentKind, AgentResult, ConfigError, Episode, Usage
from harness.agents.retry import ProviderError, RetryDecision, classify_status, with_retries


@dataclass
class ToolCallRequest:
    id: str
    name: str
    arguments: Any  # a JSON string (OpenAI) or an object (Anthropic); malformed JSON stays a string


@dataclass
class Turn:
    text: str | None
    tool_calls: list[ToolCallRequest]
    usage: Usage
    raw: dict[str, Any] = field(default_factory=dict)


class Wire(Protocol):
    """A provider's wire format. Stateless: one instance serves concurrent runs."""

    def start(self, system: str, user: str) -> list[dict[str, Any]]: ...
    def request(
        self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> tuple[str, dict[str, Any]]: ...
    def parse(self, body: dict[str, Any]) -> Turn: ...
    def tool_schema(self, tool: Any) -> dict[str, Any]: ...
    def append(
        self, messages: list[dict[str, Any]], turn: Turn, results: list[tuple[str, str, bool]]
    ) -> None: ...


class ChatAgent:
    """A model behind an HTTP API, driven through the task's tools until it answers without a tool call."""

    kind: AgentKind = "model"

    def __init__(
        self,
        name: str,
        model: str,
        base_url: str,
        headers: dict[str, str],
        wire: Wire,
        sampling: dict[str, Any],
        timeout_s: float = 120.0,
        attempts: int = 6,
        base_delay: float = 1.0,
    ) -> None:
        self.name, self.model, self.base_url = name, model, base_url.rstrip("/")
        self._headers = headers  # holds the API key: never logged, never in config()
        self.wire, self.sampling = wire, sampling
        self.timeout_s, self.attempts, self.base_delay = timeout_s, attempts, base_delay

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "model": self.model,
            "base_url": self.base_url,
            "sampling": self.sampling,
            "timeout_s": self.timeout_s,
        }

    def preflight(self) -> None:
        """Stop before any run when the endpoint cannot be reached at all."""
        try:
            httpx.get(self.base_url, timeout=10)
        except httpx.HTTPError as exc:
            raise ConfigError(
                f"{self.name}: cannot reach {self.base_url} ({type(exc).__name__}); "
                "check the base URL and the network"
            ) from None

    async def _send(
        self,
        client: httpx.AsyncClient,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
    ) -> Turn:
        path, body = self.wire.request(system, messages, tools)
        try:
            resp = await client.post(self.base_url + path, json=body, headers=self._headers)
        except httpx.TimeoutException:
            raise ProviderError("request timed out", RetryDecision(True, "transient")) from None
        except httpx.TransportError as exc:
            raise ProviderError(
                f"transport error {type(exc).__name__}", RetryDecision(True, "transient")
            ) from None
        if resp.status_code != 200:
            detail = resp.text[:200].replace("\n", " ")
            raise ProviderError(
                f"HTTP {resp.status_code}: {detail}",
                classify_status(resp.status_code, resp.headers.get("retry-after")),
            )
        try:
            return self.wire.parse(resp.json())
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ProviderError(f"unreadable response ({type(exc).__name__})", RetryDecision(True)) from None

    async def run(self, episode: Episode) -> AgentResult:
        task = episode.task
        messages = self.wire.start(task.system_prompt, task.user_prompt)
        tools = [self.wire.tool_schema(t) for t in episode.tools.values()]
        usage = Usage()
        async with httpx.AsyncClient(timeout=self.timeout_s) as client:
            for _ in range(episode.max_steps):
                try:
                    turn = await with_retries(
                        lambda: self._send(client, task.system_prompt, messages, tools),
                        attempts=self.attempts,
                        base_delay=self.base_delay,
                    )
                except ProviderError as exc:
                    return AgentResult(
                        final_message=None, error=f"provider: {exc}", usage=usage, transcript=messages
                    )
                usage.add(turn.usage)
                if not turn.tool_calls:
                    self.wire.append(messages, turn, [])
                    return AgentResult(final_message=turn.text or "", usage=usage, transcript=messages)
                results = []
                for call in turn.tool_calls:
                    args = call.arguments
                    if isinstance(args, str):
                        try:
                            args = json.loads(args) if args.strip() else {}
                        except json.JSONDecodeError as exc:
                            results.append(
                                (
                                    call.id,
                                    json.dumps({"error": f"arguments are not valid JSON: {exc.msg}"}),
                                    True,
                                )
                            )
                            continue
                    result = await episode.call(call.name, args)
                    results.append((call.id, result.text(), not result.ok))
                self.wire.append(messages, turn, results)
        return AgentResult(final_message=None, stalled=True, usage=usage, transcript=messages)


def require_key(env: dict[str, str], var: str, name: str) -> str:
    key = env.get(var)
    if not key:
        raise ConfigError(f"{name}: set {var} (the API key) before auditing this model")
    return key
