"""A slow, deterministic agent for Ray tests: each task's oracle, with a pause before every call, so that
attempts are still in flight when a test kills an actor or the driver."""

from __future__ import annotations

import asyncio
from typing import Any

from agentrel.harness.agents.base import AgentKind, AgentResult, Episode
from agentrel.harness.agents.registry import agent_adapter


class SlowOracle:
    kind: AgentKind = "scripted"

    def __init__(self, pause_s: float) -> None:
        self.pause_s = pause_s
        self.name = f"slow/{pause_s:g}"

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "pause_s": self.pause_s}

    async def run(self, episode: Episode) -> AgentResult:
        oracle = episode.task.oracle
        for step in oracle.steps:
            await asyncio.sleep(self.pause_s)
            await episode.call(step.tool, step.args)
        await asyncio.sleep(self.pause_s)
        return AgentResult(final_message=oracle.final, script="oracle")


def register() -> None:
    """Run in the driver and, as the executor's setup hook, in every actor."""
    agent_adapter("slow", "slow/<seconds>")(lambda rest, sampling: SlowOracle(float(rest)))
