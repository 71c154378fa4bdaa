"""A Ray executor's worker slot: the actor that owns one sandbox and attempts runs on it.

The actor opens once: it builds its sandbox (a private local cluster in its own home directory, or the
Postgres its node's environment names with AGENTREL_DSN / AGENTREL_BACKEND, as for any agentrel process
there), rebuilds the audit's `RunContext` from the `RunRecipe`, and checks that its task templates are
the driver's, byte for byte. Then it attempts runs with `harness.run.runner.execute` and ships each back as
a state delta (`harness.executors.transfer`); it writes nothing to the results directory.
"""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentrel.harness.errors import EnvironmentFailure
from agentrel.harness.executors import size_thread_pool
from agentrel.harness.executors.capacity import size_server
from agentrel.harness.executors.transfer import Shipped, ship
from agentrel.harness.run.matrix import RunPlan
from agentrel.harness.run.recipe import RunRecipe
from agentrel.harness.run.runner import RunContext

CLOSE_TIMEOUT_S = 60.0


class SlotFacts(BaseModel):
    """What one actor observed about where it ran (one entry per actor, replacements included)."""

    slot: int
    incarnation: int  # 1 for the first actor of the slot, 2 for its first replacement, ...
    actor_id: str
    node_id: str
    host: str
    node_ip: str
    pid: int
    python: str
    backend: str
    postgres_version: str
    home: str | None  # the slot's own cluster home; None on a node's external Postgres
    open_s: float  # building its sandbox and context


@dataclass
class SlotSpec:
    """Everything an actor needs, pickled to wherever Ray places it."""

    slot: int
    incarnation: int
    recipe: RunRecipe
    home: str
    seed: str
    scale: int
    templates: dict[str, str]  # task id -> the driver's template digest
    # Where a fault run fsyncs its receipts before recovery starts: the driver's folder, which a slot on
    # the driver's machine shares; a slot elsewhere writes the same path on its node, and the attempt
    # carries the log's bytes to the driver, which keeps them when its own copy is absent.
    receipts: str | None = None
    setup: Callable[[], None] | None = None  # run first in the actor (e.g. to register an agent adapter)
    env: str = "agentrel-enterprise"  # the driver's environment (sandbox/environments/), by name
    concurrency: int = 1  # the runs this slot holds in flight: its Postgres is sized for them


class SlotActor:
    """One worker slot: its sandbox, its context, the attempts in flight on it."""

    def __init__(self, spec: SlotSpec) -> None:
        self.spec = spec
        self.ctx: RunContext | None = None
        self.inflight: set[asyncio.Task[Any]] = set()
        self.sized = False

    async def open(self) -> SlotFacts:
        import ray

        from agentrel.harness.run.recipe import build_context

        t0 = time.perf_counter()
        if self.spec.setup is not None:
            self.spec.setup()
        from agentrel.sandbox.environments import load

        # The driver's environment, built again here from its name: the slot's sandbox, suite and prices.
        env = load(self.spec.env)
        sandbox = slot_sandbox(Path(self.spec.home), self.spec.seed, self.spec.scale, env)
        size_server(
            sandbox.server,
            self.spec.concurrency,
            lambda m: print(f"agentrel: slot {self.spec.slot}: {m}", file=sys.stderr),
        )
        receipts = Path(self.spec.receipts) if self.spec.receipts else None
        ctx = build_context(self.spec.recipe, sandbox, receipts=receipts)
        gc.freeze()  # as the driver does: keep the template dumps out of the collector's full passes
        version = sandbox.version()
        host = socket.gethostname()
        check_templates(self.spec, ctx, f"slot {self.spec.slot} on {host} (Postgres {version})")
        self.ctx = ctx
        runtime = ray.get_runtime_context()
        private = getattr(sandbox.server, "private", False)
        return SlotFacts(
            slot=self.spec.slot,
            incarnation=self.spec.incarnation,
            actor_id=runtime.get_actor_id() or "",
            node_id=runtime.get_node_id(),
            host=host,
            node_ip=ray.util.get_node_ip_address(),
            pid=os.getpid(),
            python=sys.version.split()[0],
            backend=sandbox.server.name,
            postgres_version=version,
            home=self.spec.home if private else None,
            open_s=round(time.perf_counter() - t0, 3),
        )

    async def attempt(self, plan: RunPlan, attempt: int) -> Shipped:
        from agentrel.harness.run.runner import execute

        assert self.ctx is not None, "open() first"
        if not self.sized:  # in the actor's own event loop, which its attempts share
            size_thread_pool(self.spec.concurrency)
            self.sized = True
        task = asyncio.current_task()
        assert task is not None
        self.inflight.add(task)
        try:
            done = await execute(self.ctx, plan, attempt)
        finally:
            self.inflight.discard(task)
        return ship(done, self.ctx.prepared[plan.task].before)

    async def close(self) -> None:
        """Let cancelled attempts drop their run databases, then stop a cluster this slot owns (its
        files stay, so the next audit on this slot reuses the templates)."""
        if self.inflight:
            await asyncio.wait(set(self.inflight), timeout=CLOSE_TIMEOUT_S / 2)
        if self.ctx is not None and getattr(self.ctx.sandbox.server, "private", False):
            await asyncio.to_thread(self.ctx.sandbox.server.stop)


def slot_sandbox(home: Path, seed: str, scale: int, env: Any = None) -> Any:
    from agentrel.sandbox.sandbox import Sandbox
    from agentrel.sandbox.servers import resolve_server
    from agentrel.sandbox.servers.local import LocalCluster

    external = os.environ.get("AGENTREL_DSN") or os.environ.get("AGENTREL_BACKEND", "local") != "local"
    server = resolve_server() if external else LocalCluster(home)
    sandbox = Sandbox(server, home=home, seed=seed, scale=scale, env=env)
    sandbox.server.ensure_running()
    sandbox.dbs.drop_orphans()  # an earlier actor of this slot killed mid-run left its database
    return sandbox


def check_templates(spec: SlotSpec, ctx: RunContext, where: str) -> None:
    """A slot whose templates differ from the driver's would label runs against another starting
    state than the manifest records: it refuses to run instead."""
    got = {tid: p.template.digest for tid, p in ctx.prepared.items()}
    if set(got) != set(spec.templates):
        raise EnvironmentFailure(
            f"{where}: loads tasks {sorted(set(got) ^ set(spec.templates))} differently from the driver; "
            "install the same agentrel on every node"
        )
    for tid, digest in sorted(got.items()):
        if digest != spec.templates[tid]:
            raise EnvironmentFailure(
                f"{where}: task {tid}'s template is {digest[:12]}, the driver's {spec.templates[tid][:12]}; "
                "every node must build the same sandbox (the same seed and Postgres behaviour)"
            )
