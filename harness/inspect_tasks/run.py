"""The solver: one run of a task through AgentRel's MCP face, from Inspect's tool loop.

The face (`agentrel mcp serve --task ID` on stdio) clones a fresh run database when it starts and, when
its client disconnects, dumps the final state, judges it with the task's damage spec and writes the
verdict to `--verdict-out`. So the solver holds one MCP connection open for the whole sample (Inspect
otherwise connects per tool call, which would be one run database per call), runs the model's tool
loop inside it, hands the final message over for refusal detection, disconnects, and keeps what the
face reported in the sample's store for the scorer.

Damage once done is not erased by a later failure (as in an audit): a provider error during the tool
loop is recorded, and the run is still judged from its state; it is invalid only if that state shows
no damage. Inspect's own stops (a message, token or time limit, an operator's cancel) pass through
untouched: the run is judged and Inspect scores it as usual.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import mcp_server_stdio
from inspect_ai.util import LimitExceededError

STORE_KEY = "agentrel"
# Passed on to the face so it opens the same sandbox (home, backend, DSN, suite) as this process would.
FORWARDED_PREFIXES = ("AGENTREL_", "PYTHONPATH")


def _stops() -> tuple[type[BaseException], ...]:
    """Exceptions that end a sample on purpose (not a failure of the run)."""
    try:  # where Inspect keeps its operator-cancel exception (a RuntimeError); private, so looked up
        from inspect_ai._util.exception import TerminateSampleError
    except ImportError:
        return (LimitExceededError,)
    return (LimitExceededError, TerminateSampleError)


def face_command(task_id: str, condition: str, run_index: int, verdict: Path, final: Path) -> list[str]:
    """The face's argv (after the interpreter): this interpreter, so the same AgentRel."""
    return [
        "-P",  # the working directory never goes on the face's path: a user's `harness/` cannot shadow ours
        "-m",
        "agentrel.harness.cli",
        "mcp",
        "serve",
        "--task",
        task_id,
        "--condition",
        condition,
        "--run-index",
        str(run_index),
        "--verdict-out",
        str(verdict),
        "--final-message",
        str(final),
    ]


def forwarded_env() -> dict[str, str]:
    """The MCP SDK starts a server with a minimal environment; AgentRel's settings go with it."""
    return {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_PREFIXES)}


def failure_kind(exc: BaseException) -> str:
    """The RunError kind of a failure in the loop: harness when the face's connection broke, else provider."""
    leaves: list[BaseException] = [exc]
    while leaves:
        e = leaves.pop()
        if isinstance(e, BaseExceptionGroup):
            leaves.extend(e.exceptions)
            continue
        broken = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)
        if isinstance(e, broken) or type(e).__module__.split(".")[0] in ("mcp", "mcp_types"):
            return "harness"
        if e.__cause__ is not None:
            leaves.append(e.__cause__)
    return "provider"


def _error(kind: str, exc: BaseException) -> dict[str, str]:
    return {"kind": kind, "message": f"{type(exc).__name__}: {exc}"}


def read_verdict(path: Path) -> dict[str, Any] | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) else None


@solver
def mcp_run(task_id: str, condition: str = "clean") -> Solver:
    """Run the model's tool loop on one run database of `task_id`; the verdict goes to the store.

    The epoch is the run index, so epoch N meets the faults an audit's run N meets under `condition`.
    """
    stops = _stops()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        outcome: dict[str, Any] = {"task": task_id, "condition": condition, "run_index": state.epoch}
        with tempfile.TemporaryDirectory(prefix="agentrel-inspect-") as tmp:
            verdict, final = Path(tmp) / "verdict.json", Path(tmp) / "final-message.txt"
            face = mcp_server_stdio(
                name=f"agentrel {task_id}",
                command=sys.executable,
                args=face_command(task_id, condition, state.epoch, verdict, final),
                env=forwarded_env(),
            )
            try:
                async with face:
                    state.tools = await face.tools()
                    try:
                        state = await generate(state)
                    except stops:
                        raise
                    except Exception as exc:
                        outcome["error"] = _error(failure_kind(exc), exc)
                    finally:  # read by the face at shutdown, whatever ended the loop
                        final.write_text(state.output.completion, encoding="utf-8")
            except stops:
                raise
            except Exception as exc:  # the face did not start, or its connection broke
                outcome.setdefault("error", _error("harness", exc))
            finally:
                outcome["verdict"] = read_verdict(verdict)
                state.store.set(STORE_KEY, outcome)
        return state

    return solve
