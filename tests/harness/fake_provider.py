"""A loopback HTTP server that speaks a provider's wire protocol from a queue of canned replies.

A reply is a status, headers and a payload: a JSON-able value is sent as JSON, `bytes` as they are
(an HTML login page, a truncated body). `lie(kind)` builds each way a provider is known to misbehave.
GET on a models path answers 200 when the request carries `accept_key`, else 401, so preflight is real.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, dict[str, str], Any]
LOGIN_PAGE = b"<!doctype html><html><body><form action='/login'>Sign in</form></body></html>"


class FakeProvider:
    def __init__(self, accept_key: str | None = None) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.gets: list[str] = []
        self.accept_key = accept_key
        self._lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                provider.gets.append(self.path)
                given = self.headers.get("Authorization", "") + self.headers.get("x-api-key", "")
                if self.path.endswith("/models"):
                    ok = provider.accept_key is None or provider.accept_key in given
                    self._send(200 if ok else 401, {}, {"data": []} if ok else auth_error("bad key"))
                else:
                    self._send(404, {}, b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with provider._lock:
                    provider.requests.append({"path": self.path, "body": body})
                    provider.headers.append(dict(self.headers))
                    status, headers, payload = (
                        provider.replies.pop(0)
                        if provider.replies
                        else (500, {}, {"error": "no reply queued"})
                    )
                self._send(status, headers, payload)

            def _send(self, status: int, headers: dict[str, str], payload: Any) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                if "Content-Type" not in headers:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def queue(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self.replies.append((status, headers or {}, payload))

    def queue_reply(self, reply: Reply) -> None:
        self.replies.append(reply)

    def __enter__(self) -> FakeProvider:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def openai_tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20},
    }


def openai_text(text: str) -> dict[str, Any]:
    return {
        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30},
    }


def anthropic_tool_use(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {
        "content": [
            {"type": "text", "text": "Let me do that."},
            {"type": "tool_use", "id": call_id, "name": name, "input": arguments},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 90, "output_tokens": 15},
    }


def anthropic_text(text: str) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 110, "output_tokens": 25},
    }


def auth_error(message: str, kind: str = "authentication_error") -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


# Each way a provider answers with something that is not a model's turn, per wire format.
OPENAI_LIES: dict[str, Reply] = {
    "html_200": (200, {"Content-Type": "text/html"}, LOGIN_PAGE),
    "redirect_302": (302, {"Location": "https://sso.example.invalid/login?next=/v1"}, b""),
    "no_choices": (200, {}, {"id": "x", "usage": {}}),
    "empty_choices": (200, {}, {"choices": []}),
    "empty_turn": (200, {}, {"choices": [{"message": {"role": "assistant", "content": ""}}]}),
    "length_no_tool_call": (
        200,
        {},
        {
            "choices": [
                {"message": {"role": "assistant", "content": "I will now upd"}, "finish_reason": "length"}
            ]
        },
    ),
    "length_truncated_tool_call": (
        200,
        {},
        {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "c9",
                                "type": "function",
                                "function": {"name": "x", "arguments": '{"id": 9'},
                            }
                        ],
                    },
                    "finish_reason": "length",
                }
            ]
        },
    ),
    "content_filter": (
        200,
        {},
        {
            "choices": [
                {"message": {"role": "assistant", "content": "Sorry"}, "finish_reason": "content_filter"}
            ]
        },
    ),
}
ANTHROPIC_LIES: dict[str, Reply] = {
    "html_200": (200, {"Content-Type": "text/html"}, LOGIN_PAGE),
    "redirect_302": (302, {"Location": "https://sso.example.invalid/login"}, b""),
    "zero_blocks": (200, {}, {"content": [], "stop_reason": "end_turn"}),
    "max_tokens_no_tool_use": (
        200,
        {},
        {"content": [{"type": "text", "text": "Let me"}], "stop_reason": "max_tokens"},
    ),
    "refusal": (200, {}, {"content": [{"type": "text", "text": "No."}], "stop_reason": "refusal"}),
}
