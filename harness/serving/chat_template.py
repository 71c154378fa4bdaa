"""A model's own chat template, rendered with tools and tool results, and its `<tool_call>` output parsed.

The pure half of AgentRel's local model server (`llama_server`): no llama.cpp here, only the template
engine, so `make test` covers it without the server installed.

Why not a generic function-calling chat format: one that renders a `tool` message with no content (the
model never sees a tool result), drops tool descriptions, or cannot let the model answer in text turns
the server's artefacts into agent behaviour. A Hermes-style template (Qwen2.5's, embedded in its GGUF
as `tokenizer.chat_template`) lists the tools' JSON schemas in the system turn, writes each assistant
call as `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` and each result inside
`<tool_response>` in a user turn; the model answers in text or in such blocks, which `parse_reply`
reads back.

`check_template` renders a probe conversation before the server accepts any request and refuses a
template that drops a tool result, a tool's description or the assistant's own call.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
FENCED = re.compile(r"```(?:json)?[ \t]*\n(.*?)\n?```", re.DOTALL | re.IGNORECASE)
PROBE_RESULT = "PROBE-RESULT-7f3a"
PROBE_DESCRIPTION = "PROBE-DESCRIPTION-2b9c"


class TemplateError(Exception):
    """The chat template cannot render a conversation, or renders one without what the model must see."""


def _tojson(value: Any, indent: int | None = None) -> str:
    # As the templates were written for: plain JSON, non-ASCII kept, no HTML escaping of < > &.
    return json.dumps(value, ensure_ascii=False, indent=indent)


def _raise(message: str) -> None:
    raise TemplateError(f"the chat template refused the conversation: {message}")


def _strftime_now(fmt: str) -> str:
    return datetime.now(UTC).strftime(fmt)


@dataclass(frozen=True)
class ChatTemplate:
    """A chat template as a GGUF carries it, with the special tokens it names."""

    source: str
    bos_token: str = ""
    eos_token: str = ""

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
        """The prompt for the model's next turn: the conversation (tool calls' arguments as objects,
        as the templates expect) and the tools, ending with the assistant's generation prompt."""
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = _strftime_now
        try:
            template = env.from_string(self.source)
            return template.render(
                messages=[_for_template(m) for m in messages],
                tools=tools or None,
                add_generation_prompt=True,
                bos_token=self.bos_token,
                eos_token=self.eos_token,
            )
        except TemplateError:
            raise
        except jinja2.TemplateError as exc:
            raise TemplateError(f"the chat template cannot render: {type(exc).__name__}: {exc}") from None


def _for_template(message: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions message as templates read it: `content` a string, each tool call's
    `arguments` an object (the wire carries JSON text; a template's `tojson` would quote it again)."""
    out = dict(message)
    content = out.get("content")
    if isinstance(content, list):  # text parts
        out["content"] = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    elif content is None:
        out["content"] = ""
    calls = out.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [_call_for_template(c) for c in calls if isinstance(c, dict)]
    return out


def _call_for_template(call: dict[str, Any]) -> dict[str, Any]:
    fn = dict(call.get("function") or {})
    arguments = fn.get("arguments")
    if isinstance(arguments, str):
        # the model's own unreadable text is shown to it as it wrote it
        with contextlib.suppress(ValueError, RecursionError):
            fn["arguments"] = json.loads(arguments) if arguments.strip() else {}
    return {**call, "function": fn, "name": fn.get("name"), "arguments": fn.get("arguments")}


@dataclass
class Reply:
    """One generated turn as the chat-completions wire carries it."""

    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"

    def message(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = self.tool_calls
        return out


def parse_reply(text: str, call_prefix: str = "call", tools: Collection[str] = ()) -> Reply:
    """The model's generated text as text and tool calls.

    Each `<tool_call>` block holding a JSON object with a string `name` becomes a call (its `arguments`
    re-encoded as JSON text, as the wire carries them; a block cut off by the token limit is read up
    to the end). Where the text has no such block, a fenced code block (```json) holding such an object
    that names one of the offered `tools` is read as a call too, as llama.cpp's parser for this format
    (`llama-server --jinja`) reads it: small models write their calls that way. Anything else stays in
    the text: the model wrote it, and the harness records a final message that looks like a call as a
    `text_tool_call` event."""
    found = [(m, _call_of(m.group(1))) for m in CALL.finditer(text)]
    if not any(call for _, call in found) and tools:
        found = [
            (m, call) for m in FENCED.finditer(text) if (call := _call_of(m.group(1))) and call[0] in tools
        ]
    calls: list[dict[str, Any]] = []
    kept: list[str] = []
    last = 0
    for m, call in found:
        if call is None:
            continue
        kept.append(text[last : m.start()])
        last = m.end()
        name, arguments = call
        calls.append(
            {
                "id": f"{call_prefix}_{len(calls) + 1}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
        )
    kept.append(text[last:])
    content = "".join(kept).strip()
    return Reply(content or (None if calls else ""), calls)


def _call_of(body: str) -> tuple[str, str] | None:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return value["name"], text


def check_template(template: ChatTemplate) -> None:
    """Refuse a template under which the model would not see what an agent needs: a tool's description,
    its own earlier call, a tool's result (each a probe marker that must appear in the prompt)."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "probe_lookup",
                "description": PROBE_DESCRIPTION,
                "parameters": {"type": "object", "properties": {"key": {"type": "string"}}},
            },
        }
    ]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "system"},
        {"role": "user", "content": "user"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "probe_lookup", "arguments": '{"key": "probe-key"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": PROBE_RESULT},
    ]
    prompt = template.render(messages, tools)
    missing = [
        what
        for what, marker in (
            ("a tool's description", PROBE_DESCRIPTION),
            ("the assistant's own tool call", "probe-key"),
            ("a tool's result", PROBE_RESULT),
        )
        if marker not in prompt
    ]
    if missing:
        raise TemplateError(
            "the chat template does not show the model " + ", ".join(missing) + "; serve a model whose "
            "template renders tools and tool results (e.g. a Hermes-style one), or give one with --template"
        )
