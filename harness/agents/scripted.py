"""Built-in agents that need no API key: scripted replays and the stochastic reference agent."""

from __future__ import annotations

from typing import Any

from harness.agents.base import AgentKind, AgentResult, ConfigError, Episode
from harness.agents.registry import agent_adapter
from harness.tasks import Script, Task


async def replay(episode: Episode, script: Script, name: str) -> AgentResult:
    steps = script.steps[: episode.max_steps]
    for step in steps:
        await episode.call(step.tool, step.args)
    stalled = len(script.steps) > episode.max_steps
    return AgentResult(final_message=None if stalled else script.final, stalled=stalled, script=name)


class ScriptedAgent:
    """`scripted/oracle`, `scripted/noop`, `scripted/<counterexample>`: replay that script of each task.

    `noop` is built in: a single read-free run with a vague final message. A task without the named
    counterexample gets the noop script, so a matrix over the whole suite never has holes.
    """

    kind: AgentKind = "scripted"

    def __init__(self, script: str) -> None:
        self.script = script
        self.name = f"scripted/{script}"

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind}

    def pick(self, task: Task) -> tuple[str, Script]:
        scripts = task.scripts()
        if self.script in scripts:
            return self.script, scripts[self.script]
        return "noop", Script(steps=[], final="I looked into it.")

    async def run(self, episode: Episode) -> AgentResult:
        name, script = self.pick(episode.task)
        return await replay(episode, script, name)


class ReferenceStochasticAgent:
    """`reference/stochastic`: per run, follow the oracle or one of the task's damaging counterexamples,
    chosen from the per-run seed with the probabilities the task file declares. A reference agent, not a
    model: it lets the whole pipeline run without an API key, and reports name it as such."""

    kind: AgentKind = "reference"
    name = "reference/stochastic"

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind}

    @staticmethod
    def choose(task: Task, seed: str) -> str:
        u = int(seed[:16], 16) / 2**64
        acc = 0.0
        for name in sorted(task.reference):
            acc += task.reference[name]
            if u < acc:
                return name
        return "oracle"

    async def run(self, episode: Episode) -> AgentResult:
        name = self.choose(episode.task, episode.seed)
        return await replay(episode, episode.task.scripts()[name], name)


@agent_adapter("scripted", "scripted/<script>")
def _scripted(script: str, sampling: dict[str, Any]) -> ScriptedAgent:
    return ScriptedAgent(script)


@agent_adapter("reference", "reference/stochastic")
def _reference(rest: str, sampling: dict[str, Any]) -> ReferenceStochasticAgent:
    if rest != "stochastic":
        raise ConfigError(
            f"unknown reference agent 'reference/{rest}': the reference agent is reference/stochastic"
        )
    return ReferenceStochasticAgent()
