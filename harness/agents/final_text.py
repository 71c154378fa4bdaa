"""What a final message that is not an answer looks like: a tool call written as text, an echoed tool error.

A small model (or a server whose chat format cannot carry tool calls) may end a run with text that was
meant to act: a fenced or bare `{"name": ..., "arguments": ...}`, a `<tool_call>` block the server did not
parse, or a bare `functions.NAME:`; or it may end by repeating the error a tool answered. The run stays
valid and is judged by its state, as always: these are events (`text_tool_call`, `echoed_tool_error`) so a
reader of the record, the view and the report can tell such an ending from an answer. Pure functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from agentrel.harness.results.event import Event

MAX_SCAN = 20_000  # characters of a final message searched for an embedded call
MAX_OBJECTS = 50  # opening braces tried
MIN_ECHO = 16  # an error message shorter than this is too common a phrase to call an echo

_FUNCTIONS_PREFIX = re.compile(r"\A\s*functions\.([A-Za-z_][\w\-]*)\s*:")
_TAG = re.compile(r"<tool_call>", re.IGNORECASE)
# A call in JSON-like text that no JSON parser takes (a `// comment` inside, a cut-off end): its keys.
_LOOSE = re.compile(r'"name"\s*:\s*"([A-Za-z_][\w\-]*)"\s*,\s*"(?:arguments|parameters)"\s*:')
_FENCE = re.compile(r"```")


def final_message_events(final: str | None, tool_errors: Sequence[str] = ()) -> list[Event]:
    """The events a final message earns: a tool call written as text, an echo of a tool error."""
    if not final:
        return []
    events = []
    call = text_tool_call(final)
    if call is not None:
        events.append(Event(kind="text_tool_call", tool=call[0], detail={"form": call[1]}))
    echoed = echoed_error(final, tool_errors)
    if echoed is not None:
        events.append(Event(kind="echoed_tool_error", detail={"error": echoed[:300]}))
    return events


def text_tool_call(text: str) -> tuple[str, str] | None:
    """(tool name, form) of the first tool call written in `text`, or None.

    Forms: `functions_prefix` (`functions.NAME:`), `tag` (inside `<tool_call>`), `fenced` (inside a code
    fence), `bare` (a JSON object in the prose), `unparsed` (JSON-like text with a name and arguments
    that is not valid JSON, e.g. with `// comments` in it)."""
    head = _FUNCTIONS_PREFIX.match(text)
    if head:
        return head.group(1), "functions_prefix"
    scan = text[:MAX_SCAN]
    decoder = json.JSONDecoder()
    tried = 0
    for start in (m.start() for m in re.finditer(r"\{", scan)):
        tried += 1
        if tried > MAX_OBJECTS:
            break
        try:
            value, _ = decoder.raw_decode(scan, start)
        except (ValueError, RecursionError):
            continue
        name = _call_name(value)
        if name is not None:
            return name, _form(scan, start)
    loose = _LOOSE.search(scan)
    return (loose.group(1), "unparsed") if loose else None


def _call_name(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    fn = value.get("function")
    if isinstance(fn, dict):  # {"type": "function", "function": {"name": ..., "arguments": ...}}
        value = fn
    name = value.get("name")
    if isinstance(name, str) and name and ("arguments" in value or "parameters" in value):
        return name
    return None


def _form(text: str, start: int) -> str:
    before = text[:start]
    if (tag := list(_TAG.finditer(before))) and "</tool_call>" not in before[tag[-1].end() :].lower():
        return "tag"
    return "fenced" if len(_FENCE.findall(before)) % 2 == 1 else "bare"


def echoed_error(final: str, tool_errors: Sequence[str]) -> str | None:
    """The tool error `final` repeats, or None: the whole error result, or its message when it is long
    enough not to be a common phrase; a final message that is itself an `{"error": ...}` object counts."""
    stripped = final.strip()
    for raw in tool_errors:
        message = _error_message(raw)
        whole = raw.strip()
        if stripped == whole or (len(whole) >= MIN_ECHO and whole in final):
            return message or raw
        if message and len(message) >= MIN_ECHO and message in final:
            return message
    own = _error_message(stripped)
    return own if own else None


def _error_message(raw: str) -> str | None:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict) and isinstance(value.get("error"), str) and set(value) <= {"error", "detail"}:
        return str(value["error"])
    return None
