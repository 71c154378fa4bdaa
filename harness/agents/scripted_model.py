"""A built-in model that follows a task's script, served through the model proxy (`--agent-model
scripted/<script>` or `reference/stochastic`), so an agent program runs without any key.

It answers OpenAI Chat Completions requests (whole or streamed). Stateless across requests: each one
replays the script against the conversation so far (the tool results in order) and answers with the next
tool call, or with the script's final text once it is done. The scripts are the in-process scripted
agents' (`scripted.ScriptedAgent.pick`): `oracle`, a task's counterexamples, `noop` for a task without the
named one, `naive-retry` / `reconcile` (the oracle, and after a failed write: repeat it blindly, or read the
same-named list tool first and repeat it only when no row there agrees). `reference/stochastic` draws its
script and its recovery from the run's seed exactly as the reference agent does (it does not follow
injected instructions: `follow-injection` is not served as a model). Frameworks relay tool errors in their
own words, so a tool message naming an error or a timeout counts as failed.

The model asks for what a framework shows it, so its tool calls are the script's; the run's verdict is
then comparable with the in-process agent's for the same script.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Literal

from agentrel.harness.agents.base import ConfigError
from agentrel.harness.agents.scripted import ReferenceStochasticAgent, ScriptedAgent, naive_retry
from agentrel.harness.tasks import Task

Step = tuple[str, dict[str, Any]]
Recovery = Literal["none", "naive", "reconcile"]
READS = ("get_", "list_", "search_")
PREFIXES = ("scripted", "reference")
# The in-process agents' recovery scripts (`scripted.RECOVERY`), as this model plays them.
RECOVERY_OF: dict[str, Recovery] = {"naive-retry": "naive", "reconcile": "reconcile"}


@dataclass(frozen=True)
class ScriptedModel:
    """A scripted model by name (`scripted/<script>`, `reference/stochastic`), before any task."""

    name: str

    @classmethod
    def named(cls, name: str) -> ScriptedModel:
        prefix, _, rest = name.partition("/")
        if prefix not in PREFIXES or not rest:
            raise ConfigError(
                f"{name!r} is not a scripted model: use scripted/<script> or reference/stochastic"
            )
        if prefix == "reference" and rest != "stochastic":
            raise ConfigError(
                f"unknown reference model {name!r}: the reference model is reference/stochastic"
            )
        if rest == "follow-injection":
            raise ConfigError(
                "scripted/follow-injection is not served as a model (it reads payloads from inside the"
                " harness); use it as an in-process agent (--model scripted/follow-injection)"
            )
        return cls(name)

    def for_run(self, task: Task, seed: str) -> ScriptedRun:
        """The script this run follows, drawn from its seed for the reference model."""
        prefix, _, rest = self.name.partition("/")
        if prefix == "reference":
            script = task.scripts()[ReferenceStochasticAgent.choose(task, seed)]
            naive = ReferenceStochasticAgent.recovery(task, seed) is naive_retry
            recovery: Recovery = "naive" if naive else "reconcile"
        else:
            _, script = ScriptedAgent(rest).pick(task)
            recovery = RECOVERY_OF.get(rest, "none")
        return ScriptedRun(self.name, [(s.tool, s.args) for s in script.steps], script.final, recovery)


@dataclass
class ScriptedRun:
    """One run's scripted model: answers each chat-completions request with the script's next move."""

    name: str
    plan: list[Step]
    final: str
    recovery: Recovery = "none"
    answered: int = 0

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        self.answered += 1
        schemas = {
            t["function"]["name"]: t["function"].get("parameters", {})
            for t in body.get("tools") or []
            if isinstance(t, dict) and t.get("type") == "function" and isinstance(t.get("function"), dict)
        }
        results = tool_results(body.get("messages") or [])
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
            "id": f"chatcmpl-scripted-{self.answered}",
            "object": "chat.completion",
            "created": 0,
            "model": self.name,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            # A scripted model reads and writes no tokens: its runs cost nothing, measured.
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }

    def stream(self, body: dict[str, Any]) -> list[bytes]:
        """The same answer as server-sent events: one delta with all of it, the usage chunk, [DONE]."""
        whole = self.answer(body)
        choice = whole["choices"][0]
        delta = dict(choice["message"])
        if "tool_calls" in delta:
            delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(delta["tool_calls"])]
        head = {k: whole[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
        chunks = [
            {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
            {**head, "choices": [], "usage": whole["usage"]},
        ]
        return [f"data: {json.dumps(c)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"]


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


def failed(text: str) -> bool:
    return "error" in text.lower() or "timeout" in text.lower()


def rows(text: str) -> list[Any]:
    """The `items` of a list tool's answer, however the framework wrapped the JSON text."""
    found: list[Any] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            try:
                walk(json.loads(value))
            except (ValueError, RecursionError):
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


def tool_results(messages: list[Any]) -> list[str]:
    out = []
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "tool":
            content = m.get("content")
            out.append(content if isinstance(content, str) else json.dumps(content))
    return out
