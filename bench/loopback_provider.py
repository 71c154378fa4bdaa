"""A loopback OpenAI-compatible provider for benchmarks: it answers each task's scripted tool calls, one
per model call, after a set latency (with jitter), the way a hosted model costs wall time and no CPU.

The provider is stateless per run: it finds the task by the conversation's user prompt and the step by
how many assistant turns the conversation already holds, so any number of runs may be in flight at once.
Step i < len(steps) answers with the script's i-th tool call; the step after the last answers with the
script's final text. A call's jitter is drawn from the request's `seed` (AgentRel derives it from the
run's seed and the call's ordinal), so the same audit waits the same on every bench run.

    python bench/loopback_provider.py --plans plans.json --latency 2 --jitter 0.25 --model loopback

prints `port=<n>` once it listens on 127.0.0.1 (or `--host`: the Ray cluster test serves its hosts from
an address private to its network namespaces), then serves until killed. GET /v1/models lists the model;
GET /stats says how many requests it answered, the most it held at once (`peak_in_flight`) and when each
call waited (`waits`: start, end, step).
A plain asyncio HTTP/1.1 server with keep-alive: 128 clients waiting cost it no thread and little CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

# plans.json: {"<user prompt>": {"steps": [{"tool": name, "args": {...}}, ...], "final": text}, ...}
Plans = dict[str, dict[str, Any]]


def plans_of(tasks: list[Any]) -> Plans:
    """Each task's oracle script, keyed by its user prompt (what the provider sees of the task)."""
    plans: Plans = {}
    for task in tasks:
        steps = [{"tool": s.tool, "args": s.args} for s in task.oracle.steps]
        plans[task.user_prompt] = {"steps": steps, "final": task.oracle.final or "Done."}
    return plans


def delay_of(seed: Any, latency: float, jitter: float) -> float:
    """`latency` plus a uniform draw in [-jitter, +jitter] taken from the request's seed (mean: latency)."""
    if jitter <= 0:
        return latency
    u = int(hashlib.sha256(str(seed).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return max(0.0, latency + jitter * (2 * u - 1))


class LoopbackProvider:
    def __init__(self, plans: Plans, model: str, latency: float, jitter: float) -> None:
        self.plans, self.model = plans, model
        self.latency, self.jitter = latency, jitter
        self.in_flight = 0
        self.peak_in_flight = 0
        self.answered = 0
        # Each model call's wait: (start, end, step), on this process's monotonic clock; the bench's
        # steady-state efficiency is the share of its slots' time spent in these while runs were queued.
        self.waits: list[tuple[float, float, int]] = []

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body.get("messages") or []
        user = next((m.get("content") for m in messages if m.get("role") == "user"), None)
        plan = self.plans.get(user) if isinstance(user, str) else None
        if plan is None:
            return 400, {"error": {"type": "invalid_request_error", "message": "unknown task"}}
        step = sum(1 for m in messages if m.get("role") == "assistant")
        steps = plan["steps"]
        if step < len(steps):
            call = steps[step]
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{step + 1}",
                        "type": "function",
                        "function": {"name": call["tool"], "arguments": json.dumps(call["args"])},
                    }
                ],
            }
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": plan["final"]}, "stop"
        return 200, {
            "id": f"chatcmpl-{step}",
            "object": "chat.completion",
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100 * (step + 1), "completion_tokens": 20},
        }

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                status, payload = await self.route(method, path, raw)
                data = json.dumps(payload).encode()
                writer.write(
                    f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                    "Connection: keep-alive\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def route(self, method: str, path: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        if method == "GET" and path.endswith("/models"):
            return 200, {"object": "list", "data": [{"id": self.model, "object": "model"}]}
        if method == "GET" and path.endswith("/stats"):
            stats = {"answered": self.answered, "peak_in_flight": self.peak_in_flight, "waits": self.waits}
            return 200, stats
        if method == "POST" and path.endswith("/stats/reset"):
            self.answered, self.peak_in_flight, self.waits = 0, self.in_flight, []
            return 200, {}
        if method != "POST" or not path.endswith("/chat/completions"):
            return 404, {"error": {"type": "not_found", "message": path}}
        body = json.loads(raw)
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        start = time.monotonic()
        try:
            await asyncio.sleep(delay_of(body.get("seed"), self.latency, self.jitter))
            return self.reply(body)
        finally:
            self.in_flight -= 1
            self.answered += 1
            step = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
            self.waits.append((start, time.monotonic(), step))


async def serve(provider: LoopbackProvider, host: str = "127.0.0.1") -> None:
    server = await asyncio.start_server(provider.handle, host, 0, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(f"port={port}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=Path, required=True)
    parser.add_argument("--model", default="loopback")
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per model call (mean)")
    parser.add_argument("--jitter", type=float, default=0.0, help="uniform +/- seconds around it")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    args = parser.parse_args(argv)
    plans = json.loads(args.plans.read_text())
    try:
        asyncio.run(serve(LoopbackProvider(plans, args.model, args.latency, args.jitter), args.host))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
