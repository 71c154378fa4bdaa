"""A loopback OpenAI-compatible Chat Completions server whose "model" follows a script.

Stateless: every request replays the script against the conversation so far (the tool results in order)
and answers with the next tool call, or with the final text once the script is done. Recovery after a
failed write: `naive` repeats the write once without looking; `reconcile` first reads the same-named
list tool (issue_refund -> list_refunds, filtered by the write's own arguments the lister accepts) and
repeats the write only when no row there agrees with it. Frameworks relay tool errors in their own words,
so any tool message naming an error counts as failed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Generator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Step = tuple[str, dict[str, Any]]
Recovery = Literal["none", "naive", "reconcile"]
READS = ("get_", "list_", "search_")


def policy(
    plan: list[Step], recovery: Recovery, schemas: dict[str, dict[str, Any]]
) -> Generator[Step, str, None]:
    for tool, args in plan:
        result = yield (tool, args)
        if recovery == "none" or tool.startswith(READS) or not failed(result):
            continue
        if recovery == "naive":
            yield (tool, args)
            continue
        lister = f"list_{tool.split('_', 1)[-1]}s"
        accepted = schemas.get(lister, {}).get("properties", {})
        seen = yield (lister, {k: v for k, v in args.items() if k in accepted and k != "query"})
        if not any(_agrees(row, args) for row in rows(seen)):
            yield (tool, args)


def failed(text: str) -> bool:
    return "error" in text.lower() or "timeout" in text.lower()


def rows(text: str) -> list[Any]:
    """The `items` of a list tool's answer, however the framework wrapped the JSON text."""
    found: list[Any] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            try:
                walk(json.loads(value))
            except ValueError:
                return
        elif isinstance(value, dict):
            if isinstance(value.get("items"), list):
                found.extend(value["items"])
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(text)
    return found


def _agrees(row: Any, args: dict[str, Any]) -> bool:
    shared = [k for k in args if isinstance(row, dict) and k in row]
    return bool(shared) and all(str(row[k]) == str(args[k]) for k in shared)


def tool_results(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in messages:
        if m.get("role") == "tool":
            content = m.get("content")
            out.append(content if isinstance(content, str) else json.dumps(content))
    return out


def next_action(
    plan: list[Step], recovery: Recovery, schemas: dict[str, dict[str, Any]], results: list[str]
) -> Step | None:
    gen = policy(plan, recovery, schemas)
    try:
        action = next(gen)
        for result in results:
            action = gen.send(result)
    except StopIteration:
        return None
    return action


class ScriptedModel:
    def __init__(self, plan: list[Step], final: str, recovery: Recovery = "none") -> None:
        self.plan, self.final, self.recovery = plan, final, recovery
        self.requests = 0
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                model.requests += 1
                if body.get("stream"):
                    self._send(400, {"error": {"message": "the scripted model does not stream"}})
                    return
                self._send(200, model.answer(body))

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages", [])
        schemas = {
            t["function"]["name"]: t["function"].get("parameters", {})
            for t in body.get("tools", [])
            if t.get("type") == "function"
        }
        results = tool_results(messages)
        action = next_action(self.plan, self.recovery, schemas, results)
        if action is None:
            message: dict[str, Any] = {"role": "assistant", "content": self.final}
            finish = "stop"
        else:
            call = {
                "id": f"call_{len(results) + 1}",
                "type": "function",
                "function": {"name": action[0], "arguments": json.dumps(action[1])},
            }
            message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        return {
            "id": f"chatcmpl-{self.requests}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }

    def __enter__(self) -> ScriptedModel:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
