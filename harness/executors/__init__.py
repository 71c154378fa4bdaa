"""Where attempts run. An executor takes (plan, attempt number) and hands back an `Attempt`; the driver
(`harness.run.runner.run_matrix`) alone writes records, dumps and transcripts, whichever executor ran them.

- `LocalExecutor`: this process, `slots` attempts at a time on this machine's sandbox.
- `harness.executors.ray` (optional extra `ray`): Ray actors, each owning a sandbox.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from pydantic import BaseModel

from agentrel.harness.run.matrix import RunPlan
from agentrel.harness.run.recipe import RunRecipe
from agentrel.harness.run.request import EXECUTORS
from agentrel.harness.run.runner import Attempt, RunContext, execute

MAX_THREADS = 256  # past this, more slots share threads: their work is milliseconds between waits


class Executor(Protocol):
    slots: int  # how many attempts may be in flight at once

    async def start(self) -> None: ...

    async def attempt(self, plan: RunPlan, attempt: int) -> Attempt: ...

    async def close(self) -> None: ...

    def facts(self) -> Sequence[BaseModel]:
        """Where the slots ran (host, actor, Postgres version), recorded beside the execution environment;
        empty for this process, whose environment is the one already observed."""
        ...


# (the recipe, the driver's own context, --concurrency) -> the executor the audit runs on
ExecutorFactory = Callable[[RunRecipe, RunContext, int], Executor]


class LocalExecutor:
    def __init__(self, ctx: RunContext, slots: int) -> None:
        self.ctx = ctx
        self.slots = slots

    async def start(self) -> None:
        size_thread_pool(self.slots)

    async def attempt(self, plan: RunPlan, attempt: int) -> Attempt:
        return await execute(self.ctx, plan, attempt)

    async def close(self) -> None:
        pass

    def facts(self) -> Sequence[BaseModel]:
        return []


def size_thread_pool(slots: int) -> None:
    """Give this event loop's default executor a thread per slot. Every run's clone, tool calls, dump,
    label and record go through `asyncio.to_thread`, and asyncio's default pool has min(32, CPUs + 4)
    threads (6 on 2 cores): at 128 runs in flight a tool call that waits a few ms on Postgres queued
    behind dozens of others, and the model's wait no longer hid the harness's (bench/model_bound.py)."""
    loop = asyncio.get_running_loop()
    loop.set_default_executor(
        ThreadPoolExecutor(max_workers=min(MAX_THREADS, slots + 4), thread_name_prefix="agentrel-run")
    )


def local_executor(recipe: RunRecipe, ctx: RunContext, slots: int) -> Executor:
    return LocalExecutor(ctx, slots)


def resolve_executor(
    name: str, ray_address: str | None = None, workers: int | None = None
) -> ExecutorFactory:
    """The factory for `--executor NAME`; Ray's options on the local executor, an unknown name, or Ray
    not installed are one-line usage errors, raised before any sandbox is opened."""
    from agentrel.harness.errors import UsageError

    if name == "local":
        if ray_address is not None or workers is not None:
            raise UsageError("--ray-address and --workers apply to --executor ray only")
        return local_executor
    if name == "ray":
        from agentrel.harness.executors.ray import import_ray, on_loopback, ray_executor

        import_ray(local=on_loopback(ray_address))
        return ray_executor(address=ray_address, workers=workers)
    raise UsageError(f"--executor must be one of {', '.join(EXECUTORS)}, got {name!r}")
