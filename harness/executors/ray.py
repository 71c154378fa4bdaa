"""`--executor ray`: one Ray actor per worker slot, each owning a sandbox; the driver records every attempt.

Each actor (`harness.executors.slot`) opens its own sandbox and context once, then attempts
`--concurrency` runs at once; attempts are dispatched to the least-loaded actor. A run's seed and id come
from its plan, never from where it lands, so the same audit gives the same runs on any number of actors.
Attempts come back as state deltas and only the driver writes the results directory, so resume, kill -9
safety and the protocol check are the local executor's.

An actor that dies mid-run (killed, out of memory, its node lost) leaves its attempts `harness_invalid`,
recorded like any other, so the run is attempted again under the cap on a live actor; the dead slot is
replaced (its cluster survives in its home) up to `MAX_RESTARTS` times. What each actor observed (host,
actor id, Postgres version) is in `facts()`, for the execution-environment record, never the protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrel.harness.errors import EnvironmentFailure, UsageError
from agentrel.harness.executors import Executor, ExecutorFactory
from agentrel.harness.executors.slot import SlotActor, SlotFacts, SlotSpec
from agentrel.harness.executors.transfer import TransferError, lost_attempt, unship
from agentrel.harness.run.matrix import RunPlan
from agentrel.harness.run.recipe import RunRecipe
from agentrel.harness.run.runner import Attempt, RunContext

INSTALL_HINT = "pip install -e '.[ray]' in the AgentRel checkout"
LOOPBACK = "127.0.0.1"
MAX_RESTARTS = 3  # replacements per slot; past them the slot is given up and the others carry on
OBJECT_STORE_BYTES = 256 * 2**20  # attempts travel as deltas: Ray's default (30% of RAM) is waste
CLOSE_TIMEOUT_S = 60.0


def import_ray(local: bool) -> Any:
    """Ray, or one line saying how to install it. `local`: this process will start its own Ray, which
    must then listen on loopback only."""
    # Ray sends usage statistics home unless told not to; an audit reaches only what it audits.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if local:
        # Ray binds its servers to the node's address, and on Linux resolves even 127.0.0.1 to the
        # machine's outward one; this switch (read at import, and by every child process it starts) is
        # the one that keeps the node on loopback. Set before the import, and again after it for a
        # process that imported Ray already.
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    try:
        import ray
    except ImportError:
        raise UsageError(f"--executor ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    if local:
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False
    return ray


def start_local_ray(num_cpus: int) -> None:
    """A Ray instance on this machine alone: `num_cpus` slots, no dashboard, every port on loopback."""
    ray = import_ray(local=True)
    ray.init(
        address="local",  # never whatever RAY_ADDRESS names: that is what --ray-address is for
        num_cpus=num_cpus,
        include_dashboard=False,
        _node_ip_address=LOOPBACK,
        object_store_memory=OBJECT_STORE_BYTES,
        logging_level="WARNING",
        log_to_driver=False,
    )
    node_ip = ray.util.get_node_ip_address()
    if node_ip != LOOPBACK:
        ray.shutdown()
        raise EnvironmentFailure(f"the local Ray node came up on {node_ip}, not {LOOPBACK}; refused")


def connect_ray(ray: Any, address: str) -> None:
    """Join the running cluster at `address` as its driver, or one line saying why not."""
    try:
        ray.init(address=address, logging_level="WARNING", log_to_driver=False)
    except (ConnectionError, RuntimeError, ray.exceptions.AuthenticationError) as exc:
        # Ray's message is a paragraph wrapping a traceback in text; the fix is one of two things.
        if _refused_token(exc):
            raise EnvironmentFailure(
                f"--ray-address {address}: the Ray cluster refused this driver's token: set "
                "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH to the file holding the cluster's token "
                "(as on its nodes)"
            ) from None
        raise EnvironmentFailure(
            f"--ray-address {address}: no Ray cluster answered there: start its head (ray start --head) "
            "or name the head's address and GCS port"
        ) from None


def _refused_token(exc: BaseException | None) -> bool:
    """Whether a failed connection was Ray's token check (raised, or quoted as text in a wrapper)."""
    seen = 0
    while exc is not None and seen < 10:
        if type(exc).__name__ == "AuthenticationError" or "InvalidAuthToken" in str(exc):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


@dataclass
class _Slot:
    index: int
    actor: Any = None
    facts: SlotFacts | None = None
    incarnation: int = 0
    load: int = 0
    deaths: int = 0
    opening: asyncio.Task[None] | None = None
    lost: str = ""  # why the slot was given up

    @property
    def ready(self) -> bool:
        return self.actor is not None and self.facts is not None


@dataclass
class RayExecutor:
    """`workers` actors (default: one per CPU of the Ray cluster), `concurrency` attempts on each."""

    recipe: RunRecipe
    ctx: RunContext
    concurrency: int
    address: str | None = None  # an existing Ray cluster; None starts one on this machine
    workers: int | None = None
    home: Path | None = None  # where slot i keeps its cluster: <home>/slot-<i> on its node
    setup: Callable[[], None] | None = None
    max_restarts: int = MAX_RESTARTS
    slots: int = 0
    _slots: list[_Slot] = field(default_factory=list)
    _facts: list[SlotFacts] = field(default_factory=list)
    _changed: asyncio.Condition | None = None
    _owns_ray: bool = False
    _actor_cls: Any = None

    def __post_init__(self) -> None:
        self.slots = (self.workers or 1) * self.concurrency

    def facts(self) -> list[SlotFacts]:
        return list(self._facts)

    def in_flight(self) -> dict[int, int]:
        """Attempts in flight per slot index."""
        return {s.index: s.load for s in self._slots}

    def actor(self, slot: int) -> Any:
        """The live actor handle of `slot`, or None while it is down or being replaced."""
        return self._slots[slot].actor if self._slots[slot].ready else None

    async def start(self) -> None:
        ray = import_ray(local=on_loopback(self.address) and not _ray_running())
        if not ray.is_initialized():
            if self.address is None:
                start_local_ray(self.workers or os.cpu_count() or 1)
            else:
                connect_ray(ray, self.address)
            self._owns_ray = True
        n = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.slots = n * self.concurrency
        self._changed = asyncio.Condition()
        self._actor_cls = ray.remote(
            num_cpus=1, max_concurrency=self.concurrency + 2, max_restarts=0, scheduling_strategy="SPREAD"
        )(SlotActor)
        self._slots = [_Slot(i) for i in range(n)]
        try:
            await asyncio.gather(*(self._open(slot) for slot in self._slots))
        except BaseException:
            await self.close()
            raise

    async def _open(self, slot: _Slot) -> None:
        from agentrel.sandbox.servers.local import default_home

        slot.incarnation += 1
        home = (self.home or default_home() / "ray") / f"slot-{slot.index}"
        spec = SlotSpec(
            slot=slot.index,
            incarnation=slot.incarnation,
            recipe=self.recipe,
            home=str(home),
            seed=self.ctx.sandbox.seed,
            scale=self.ctx.sandbox.scale,
            env=self.ctx.sandbox.env.name,
            templates={tid: p.template.digest for tid, p in self.ctx.prepared.items()},
            setup=self.setup,
            receipts=str(self.ctx.receipts) if self.ctx.receipts else None,
            concurrency=self.concurrency,
        )
        actor = self._actor_cls.remote(spec)
        slot.actor = actor
        try:
            facts = await actor.open.remote()
        except Exception as exc:
            slot.actor = None
            _kill(actor)
            raise _cause(exc) from None
        if slot.actor is actor:
            slot.facts = facts
            self._facts.append(facts)
            await self._notify()

    async def attempt(self, plan: RunPlan, attempt: int) -> Attempt:
        import ray

        slot = await self._acquire()
        actor, facts = slot.actor, slot.facts
        assert facts is not None
        ref = actor.attempt.remote(plan, attempt)
        try:
            shipped = await ref
        except asyncio.CancelledError:
            ray.cancel(ref)
            raise
        except (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError) as exc:
            why = f"ray actor {facts.actor_id[:12]} (slot {slot.index} on {facts.host}) died mid-run"
            self._died(slot, actor, f"{why}: {type(exc).__name__}")
            return lost_attempt(self.ctx, plan, attempt, f"{why}: {_first_line(exc)}")
        except ray.exceptions.RayTaskError as exc:
            raise _cause(exc) from None
        finally:
            slot.load -= 1
            await self._notify()
        try:
            return unship(shipped, self.ctx.prepared[plan.task].before)
        except TransferError as exc:
            return lost_attempt(self.ctx, plan, attempt, f"slot {slot.index} on {facts.host}: {exc}")

    async def _acquire(self) -> _Slot:
        """The least-loaded live slot with room, waiting for one when every slot is full or reopening."""
        assert self._changed is not None, "start() first"
        async with self._changed:
            while True:
                free = [s for s in self._slots if s.ready and s.load < self.concurrency]
                if free:
                    slot = min(free, key=lambda s: (s.load, s.index))
                    slot.load += 1
                    return slot
                if not any(s.ready or s.opening for s in self._slots):
                    why = "; ".join(f"slot {s.index}: {s.lost}" for s in self._slots)
                    raise EnvironmentFailure(
                        f"every Ray actor is gone ({why}); run the same command to resume"
                    )
                await self._changed.wait()

    def _died(self, slot: _Slot, actor: Any, why: str) -> None:
        if slot.actor is not actor:  # another attempt on the same actor saw its death first
            return
        _kill(actor)
        slot.actor, slot.facts = None, None
        slot.deaths += 1
        slot.lost = why
        if slot.deaths <= self.max_restarts:
            slot.opening = asyncio.create_task(self._reopen(slot))
        asyncio.get_running_loop().create_task(self._notify())

    async def _reopen(self, slot: _Slot) -> None:
        try:
            await self._open(slot)
        except Exception as exc:
            slot.lost = f"its replacement did not open: {_first_line(exc)}"
        finally:
            slot.opening = None
            await self._notify()

    async def _notify(self) -> None:
        if self._changed is not None:
            async with self._changed:
                self._changed.notify_all()

    async def close(self) -> None:
        import ray

        for slot in self._slots:
            if slot.opening is not None:
                slot.opening.cancel()
        live = [s.actor for s in self._slots if s.ready]
        if live:
            closing = asyncio.gather(*(a.close.remote() for a in live), return_exceptions=True)
            # Past the timeout the actors are killed below all the same.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(closing, CLOSE_TIMEOUT_S)
        for slot in self._slots:
            if slot.actor is not None:
                _kill(slot.actor)
                slot.actor = None
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
            self._owns_ray = False


def ray_executor(
    address: str | None = None,
    workers: int | None = None,
    home: Path | None = None,
    setup: Callable[[], None] | None = None,
) -> ExecutorFactory:
    """The factory `harness.run.audit.audit(executor=...)` takes; --concurrency is each actor's."""

    def make(recipe: RunRecipe, ctx: RunContext, concurrency: int) -> Executor:
        return RayExecutor(recipe, ctx, concurrency, address=address, workers=workers, home=home, setup=setup)

    return make


def on_loopback(address: str | None) -> bool:
    """Whether this process's Ray node is on this machine alone: one it starts, or one at 127.0.0.1."""
    if address is None:
        return True
    host = address.removeprefix("ray://").rsplit(":", 1)[0].strip("[]")
    return host in ("127.0.0.1", "localhost", "::1")


def _ray_running() -> bool:
    ray = sys.modules.get("ray")
    return ray is not None and bool(ray.is_initialized())


def _kill(actor: Any) -> None:
    import ray

    with contextlib.suppress(Exception):  # already gone, or Ray itself is shutting down
        ray.kill(actor, no_restart=True)


def _cause(exc: BaseException) -> BaseException:
    """The actor's own exception (an AuthFailure, a SandboxError) rather than Ray's wrapper of it."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
