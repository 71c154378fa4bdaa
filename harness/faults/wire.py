"""Just enough HTTP/1.1 for one request and one response at a time on a persistent connection.

The server, the client and the proxy all frame messages the same way: a start line, headers, and a body
of exactly Content-Length bytes (no chunking, no pipelining). The proxy needs the framing to swallow one
whole response and to read each request's call id; a dependency-free parser keeps the tool server's
start-up to the imports the tools need.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

MAX_HEADER = 16_384
MAX_BODY = 8 * 1024 * 1024  # a list of 10,000-character notes fits; a runaway body does not


class FramingError(Exception):
    """The bytes on the connection are not one of our messages: the connection is dropped."""


@dataclass(frozen=True)
class Message:
    start: str  # "POST /call HTTP/1.1" or "HTTP/1.1 200 OK"
    headers: dict[str, str]
    body: bytes

    @property
    def size(self) -> int:
        return len(encode(self))

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


async def read_message(reader: asyncio.StreamReader) -> Message | None:
    """The next whole message, or None at a clean end of stream (the peer closed between messages)."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise FramingError("connection closed inside a message header") from None
    except asyncio.LimitOverrunError:
        raise FramingError("message header too long") from None
    if len(head) > MAX_HEADER:
        raise FramingError("message header too long")
    lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise FramingError("bad Content-Length") from None
    if not 0 <= length <= MAX_BODY:
        raise FramingError("body too long")
    try:
        body = await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise FramingError("connection closed inside a message body") from None
    return Message(lines[0], headers, body)


def encode(message: Message) -> bytes:
    headers = {**message.headers, "content-length": str(len(message.body))}
    head = message.start + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    return head.encode("latin-1") + message.body


def request(path: str, payload: Any | None = None) -> Message:
    body = b"" if payload is None else json.dumps(payload, separators=(",", ":")).encode()
    method = "GET" if payload is None else "POST"
    return Message(
        f"{method} {path} HTTP/1.1", {"host": "127.0.0.1", "content-type": "application/json"}, body
    )


def response(status: int, payload: Any) -> Message:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 500: "Internal Server Error"}.get(status, "")
    body = json.dumps(payload, separators=(",", ":"), default=str).encode()
    return Message(f"HTTP/1.1 {status} {reason}", {"content-type": "application/json"}, body)


def status_of(message: Message) -> int:
    parts = message.start.split(" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def call_id_of(message: Message) -> str | None:
    """The call id a request carries (what the proxy records), or None for a probe or unreadable body."""
    try:
        payload = message.json()
    except (ValueError, UnicodeDecodeError):
        return None
    value = payload.get("call_id") if isinstance(payload, dict) else None
    return value if isinstance(value, str) else None
