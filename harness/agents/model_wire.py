"""What the model proxy reads off a provider's answer, per wire protocol: pure functions, no I/O.

Three protocols pass through the proxy (`model_proxy`): OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages, each as one JSON body or as a server-sent event stream. From either form this module
reads the tokens the provider counted, the model id that served the answer, and (for a stream) whether
the stream reached its documented end, so a cut stream is told from a finished one:

- Chat Completions: `usage.prompt_tokens` / `completion_tokens`; a stream carries usage in its last chunk
  only when asked (`stream_options.include_usage`, which the proxy sets) and ends with `data: [DONE]`;
- Responses: `usage.input_tokens` / `output_tokens` on the response; a stream's `response.completed`
  (or `.failed` / `.incomplete`) event carries the whole response and ends it;
- Messages: `usage.input_tokens` / `output_tokens`; a stream's `message_start` holds the input count,
  each `message_delta` the output count so far, and `message_stop` ends it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from agentrel.harness.agents.chat import tokens

Protocol = Literal["chat", "responses", "messages"]
PATHS: dict[str, Protocol] = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
}
# The path each protocol is posted to below an upstream's base URL (OpenAI's ends in /v1, Anthropic's not).
UPSTREAM_PATHS: dict[Protocol, str] = {
    "chat": "/chat/completions",
    "responses": "/responses",
    "messages": "/v1/messages",
}
RESPONSE_ENDS = frozenset({"response.completed", "response.failed", "response.incomplete"})


@dataclass
class Reading:
    """What one answer said about itself: tokens, the serving model, and (streams) whether it ended."""

    input_tokens: int = 0
    output_tokens: int = 0
    served: str | None = None
    ended: bool = False


def read_body(protocol: Protocol, body: Any) -> Reading:
    """A whole JSON answer's reading (a Responses body and a Messages body share the usage names)."""
    if not isinstance(body, dict):
        return Reading()
    usage = body.get("usage")
    model = body.get("model")
    served = model if isinstance(model, str) else None
    if protocol == "chat":
        return Reading(tokens(usage, "prompt_tokens"), tokens(usage, "completion_tokens"), served, True)
    return Reading(tokens(usage, "input_tokens"), tokens(usage, "output_tokens"), served, True)


class StreamReader:
    """Reads a server-sent event stream as it passes, chunk by chunk, into one `Reading`."""

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self.reading = Reading()
        self._pending = b""

    def feed(self, chunk: bytes) -> None:
        self._pending += chunk
        # Events are separated by a blank line; only whole events are read (a chunk may split one).
        *events, self._pending = self._pending.replace(b"\r\n", b"\n").split(b"\n\n")
        for event in events:
            self._event(event.decode("utf-8", errors="replace"))

    def _event(self, text: str) -> None:
        data = "\n".join(line[5:].lstrip() for line in text.split("\n") if line.startswith("data:"))
        if not data:
            return
        if data == "[DONE]":
            self.reading.ended = self.protocol == "chat"
            return
        try:
            payload = json.loads(data)
        except (ValueError, RecursionError):
            return
        if isinstance(payload, dict):
            self._payload(payload)

    def _payload(self, payload: dict[str, Any]) -> None:
        r, kind = self.reading, payload.get("type")
        if self.protocol == "chat":
            if isinstance(payload.get("model"), str):
                r.served = r.served or payload["model"]
            if isinstance(payload.get("usage"), dict):
                r.input_tokens = tokens(payload["usage"], "prompt_tokens")
                r.output_tokens = tokens(payload["usage"], "completion_tokens")
        elif self.protocol == "responses":
            response = payload.get("response")
            if isinstance(response, dict):
                whole = read_body("responses", response)
                r.served = whole.served or r.served
                if kind in RESPONSE_ENDS:
                    r.input_tokens, r.output_tokens, r.ended = whole.input_tokens, whole.output_tokens, True
        elif kind == "message_start" and isinstance(payload.get("message"), dict):
            message = payload["message"]
            r.served = message["model"] if isinstance(message.get("model"), str) else r.served
            r.input_tokens = tokens(message.get("usage"), "input_tokens")
            r.output_tokens = tokens(message.get("usage"), "output_tokens")
        elif kind == "message_delta":
            usage = payload.get("usage")
            # The count is cumulative; a later delta may also restate the input (cache reads included).
            r.output_tokens = tokens(usage, "output_tokens") or r.output_tokens
            r.input_tokens = tokens(usage, "input_tokens") or r.input_tokens
        elif kind == "message_stop":
            r.ended = True
