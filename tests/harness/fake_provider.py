"""A loopback HTTP server that speaks a provider's wire protocol from a queue of canned replies.

A reply is a status, headers and a payload: a JSON-able value is sent as JSON, `bytes` as they are
(an HTML login page, a truncated body), `CLOSE` as a connection closed with no response at all (a server
process that died mid-request). `lie(kind)` builds each way a provider is known to misbehave.
GET on a models path answers 200 when the request carries `accept_key`, else 401, so preflight is real.

A fake may also model a server as issue 25 asks of one: it says which model served each response
(`model`), describes itself (`listing` for GET /models, `props` for llama.cpp's GET /props), and with a
`template` renders every request through a model's own chat template, as AgentRel's local server does,
so a reply may be computed from what the model was shown (`prompts`): a reply given as a callable is
called with the rendered prompt (or the request body, without a template). `received` is set at each
request and `hold`, when given, keeps the replies after the first `hold_after` back until the test sets
it (`holding` says one is held): a test acts on an event, never on a sleep.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentrel.harness.serving.chat_template import ChatTemplate

Reply = tuple[int, dict[str, str], Any]
CLOSE = object()  # payload: close the connection without answering
LOGIN_PAGE = b"<!doctype html><html><body><form action='/login'>Sign in</form></body></html>"


class FakeProvider:
    def __init__(
        self,
        accept_key: str | None = None,
        llama_cpp: bool = False,
        *,
        model: str | None = None,
        listing: Any = None,
        props: Any = None,
        template: ChatTemplate | None = None,
        hold: threading.Event | None = None,
        hold_after: int = 0,
    ) -> None:
        self.replies: list[Reply | Callable[[Any], Reply]] = []
        self.model = model  # the served id every response carries, unless its payload names one
        self.listing = listing if listing is not None else {"data": []}
        self.props = props  # None: GET /props is a 404, as on servers other than llama.cpp's
        self.template = template
        self.prompts: list[str] = []  # with a template: what the model was shown, request by request
        self.received = threading.Event()
        self.hold, self.hold_after = hold, hold_after  # requests after the first `hold_after` wait on it
        self.holding = threading.Event()  # set when a request is being held back
        self.llama_cpp = llama_cpp  # validate messages as llama-cpp-python's server does
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
                    self._send(200 if ok else 401, {}, provider.listing if ok else auth_error("bad key"))
                elif self.path.endswith("/props") and provider.props is not None:
                    self._send(200, {}, provider.props)
                else:
                    self._send(404, {}, b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with provider._lock:
                    provider.requests.append({"path": self.path, "body": body})
                    provider.headers.append(dict(self.headers))
                    refused = provider.llama_cpp and _llama_cpp_refuses(body)
                    seen: Any = body
                    if provider.template is not None:
                        seen = provider.template.render(body["messages"], body.get("tools"))
                        provider.prompts.append(seen)
                    reply = (
                        LLAMA_CPP["null_content_500"]
                        if refused
                        else provider.replies.pop(0)
                        if provider.replies
                        else (500, {}, {"error": "no reply queued"})
                    )
                    number = len(provider.requests)
                provider.received.set()
                if provider.hold is not None and number > provider.hold_after:
                    provider.holding.set()
                    provider.hold.wait()
                status, headers, payload = reply(seen) if callable(reply) else reply
                if provider.model is not None and isinstance(payload, dict) and status == 200:
                    payload = {"model": provider.model, **payload}
                self._send(status, headers, payload)

            def _send(self, status: int, headers: dict[str, str], payload: Any) -> None:
                if payload is CLOSE:
                    self.close_connection = True
                    return
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

    def queue_reply(self, reply: Reply | Callable[[Any], Reply]) -> None:
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
# Issue 22 §7: a 200 whose text is no model's answer, and a response served by another model than asked.
REDIRECT_TEXT = "302 Found\n\nThe document has moved here: https://sso.example.invalid/login?next=/v1"
EXPRESS_REDIRECT = "Found. Redirecting to /login"
ZERO_WIDTH_SPACE = "\u200b"
OTHER_MODEL = "gpt-3.5-turbo-0301"  # asked of every fake agent: another model (gpt-test, claude-test)


def _openai_says(text: str, **extra: Any) -> Reply:
    return (200, {}, {**openai_text(text), **extra})


def _anthropic_says(text: str, **extra: Any) -> Reply:
    return (200, {}, {**anthropic_text(text), **extra})


OPENAI_LIES.update(
    {
        "html_as_content": _openai_says(LOGIN_PAGE.decode()),
        "redirect_as_content": _openai_says(REDIRECT_TEXT),
        "express_redirect_as_content": _openai_says(EXPRESS_REDIRECT),
        "zero_width_space_content": _openai_says(ZERO_WIDTH_SPACE),
        "bom_and_word_joiner_content": _openai_says("\ufeff\u2060 \u200d"),
        "served_by_another_model": _openai_says("Nothing needs doing here.", model=OTHER_MODEL),
    }
)
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
    "html_as_content": _anthropic_says(LOGIN_PAGE.decode()),
    "redirect_as_content": _anthropic_says(REDIRECT_TEXT),
    "zero_width_space_content": _anthropic_says(ZERO_WIDTH_SPACE),
    "served_by_another_model": _anthropic_says("Nothing needs doing here.", model=OTHER_MODEL),
}

# What llama-cpp-python 0.3.36's server (`--chat_format chatml-function-calling`, SmolLM2-135M) sent to
# `make smoke-local-model`, trimmed: each is a case in tests/harness/test_real_server_cases.py.
LLAMA_CPP: dict[str, Reply] = {
    # A tool call: no text, an id built from the tool name, arguments spaced as the model wrote them, and
    # a legacy `function_call` beside `tool_calls` whose name disagrees with it (a trailing colon).
    "tool_call": (
        200,
        {},
        {
            "id": "chatcmpl-28a6a7fb",
            "object": "chat.completion",
            "model": "smollm2",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call__0_list_cab_approvals_cmpl-b2bd23e0",
                                "type": "function",
                                "function": {
                                    "name": "list_cab_approvals",
                                    "arguments": '{"change_id" : 9002}',
                                },
                            }
                        ],
                        "role": "assistant",
                        "function_call": {"name": "list_cab_approval:", "arguments": '{"change_id" : 9002}'},
                    },
                    "logprobs": None,
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 1175, "completion_tokens": 21, "total_tokens": 1196},
        },
    ),
    # A request the server's validation rejects comes back as a 500, not a 4xx.
    "validation_500": (
        500,
        {},
        {
            "error": {
                "message": "1 validation error:\n  {'type': 'list_type', 'loc': ('body', 'messages'), "
                "'msg': 'Input should be a valid list'}",
                "type": "internal_server_error",
                "param": None,
                "code": None,
            }
        },
    ),
    "context_overflow_400": (
        400,
        {},
        {
            "error": {
                "message": "This model's maximum context length is 8192 tokens. However, you requested "
                "8302 tokens (8302 in the messages, None in the completion). Please reduce the length of "
                "the messages or completion.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    # An assistant turn sent back with `"content": null` beside its tool calls (OpenAI accepts it).
    "null_content_500": (
        500,
        {},
        {
            "error": {
                "message": "7 validation errors:\n  {'type': 'string_type', 'loc': ('body', 'messages', 2, "
                "'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid "
                "string', 'input': None}",
                "type": "internal_server_error",
                "param": None,
                "code": None,
            }
        },
    ),
    # The server process died mid-request (a tool schema whose grammar llama.cpp could not parse).
    "process_died": (200, {}, CLOSE),
}


def _llama_cpp_refuses(body: Any) -> bool:
    """Whether llama-cpp-python's request validation refuses these messages (its 500 above)."""
    messages = body.get("messages") if isinstance(body, dict) else None
    return isinstance(messages, list) and any(
        isinstance(m, dict) and m.get("role") == "assistant" and not isinstance(m.get("content"), str)
        for m in messages
    )
