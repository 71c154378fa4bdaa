"""Built-in agents that need no API key: scripted replays and the stochastic reference agent."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

from agentrel.harness.agents.base import AgentKind, AgentResult, ConfigError, Episode
from agentrel.harness.agents.registry import agent_adapter
from agentrel.harness.jsontext import strings
from agentrel.harness.tasks import Script, Task
from agentrel.sandbox.tools import ToolResult
from agentrel.sandbox.tools.idempotency import KEY


async def replay(episode: Episode, script: Script, name: str, react: React | None = None) -> AgentResult:
    """Make the script's calls in order; `react` may answer what a call returned with calls of its own."""
    budget = episode.max_steps
    for step in script.steps:
        if budget <= 0:
            return AgentResult(final_message=None, stalled=True, script=name)
        result = await episode.call(step.tool, step.args)
        budget -= 1
        if react is not None and budget > 0:
            budget -= await react(episode, step.tool, step.args, result)
    return AgentResult(final_message=script.final, script=name)


# (episode, tool, args, what it returned) -> the calls it made in answer
React = Callable[[Episode, str, dict[str, Any], ToolResult], Awaitable[int]]
TRANSIENT = ("timeout", "HTTP 500", "HTTP 429", "connection lost")


def transient(result: ToolResult) -> bool:
    if result.ok:
        return False
    error = result.content.get("error", "") if isinstance(result.content, dict) else ""
    return isinstance(error, str) and error.startswith(TRANSIENT)


async def naive_retry(episode: Episode, tool: str, args: dict[str, Any], result: ToolResult) -> int:
    """Repeat a call that failed transiently, once, without looking: after a lost response this
    repeats an act that already happened."""
    if not transient(result):
        return 0
    await episode.call(tool, args)
    return 1


async def reconcile(episode: Episode, tool: str, args: dict[str, Any], result: ToolResult) -> int:
    """Before repeating a write that failed transiently, read whether it happened (`shows`); repeat it
    only when the state says it did not."""
    if not transient(result):
        return 0
    if not episode.tools[tool].mutates:
        await episode.call(tool, args)
        return 1
    return await redo_unless_shown(episode, tool, args)


async def verify(episode: Episode, tool: str, args: dict[str, Any], result: ToolResult) -> int:
    """After a write that answered success, read it back before going on (`shows`); when the state does
    not show it, do it once more. Under the lying-success condition this is the agent that notices."""
    if not result.ok or not episode.tools[tool].mutates:
        return 0
    return await redo_unless_shown(episode, tool, args)


async def redo_unless_shown(episode: Episode, tool: str, args: dict[str, Any]) -> int:
    """Read whether the write `tool(args)` happened (`shows`) and do it once more only when the state says
    it did not; the calls it made."""
    done, reads = await shows(episode, tool, args)
    if done is not False:
        return reads  # it happened, or there is no way to tell: leave it rather than risk doing it twice
    await episode.call(tool, args)
    return reads + 1


async def shows(episode: Episode, tool: str, args: dict[str, Any]) -> tuple[bool | None, int]:
    """Whether the state shows the write `tool(args)` (None: no way to tell), and how many reads it took.
    An update or delete of one record by id is read back with that record's get tool; any other write with
    the same-named list tool (issue_refund -> list_refunds) filtered by the write's own arguments, where
    a row agreeing with every argument it shows means it happened."""
    verb, _, noun = tool.partition("_")
    args = {k: v for k, v in args.items() if k != KEY}
    getter = episode.tools.get(f"get_{noun}")
    if verb in ("update", "delete") and getter is not None and "id" in args:
        seen = await episode.call(getter.name, {"id": args["id"]})
        return (not seen.ok) if verb == "delete" else (seen.ok and _agrees(seen.content, args)), 1
    lister = episode.tools.get(f"list_{noun}s")
    if lister is None:
        return None, 0
    accepted = lister.parameters.get("properties", {})
    seen = await episode.call(lister.name, {k: v for k, v in args.items() if k in accepted and k != "query"})
    rows = seen.content.get("items") if seen.ok and isinstance(seen.content, dict) else None
    if not isinstance(rows, list):
        return None, 1  # the read failed too: still no way to tell
    return any(_agrees(row, args) for row in rows), 1


def keyed(episode: Episode, script: Script) -> Script:
    """The script with an idempotency key on every call of a tool that shows one (its schema has the
    optional argument): one key per step, so a retry of the step carries the same key."""
    steps = []
    for index, step in enumerate(script.steps):
        tool = episode.tools.get(step.tool)
        if tool is not None and KEY in tool.parameters.get("properties", {}):
            step = step.model_copy(update={"args": {**step.args, KEY: f"step-{index}"}})
        steps.append(step)
    return script.model_copy(update={"steps": steps})


def _agrees(row: Any, args: dict[str, Any]) -> bool:
    shared = [k for k in args if isinstance(row, dict) and k in row]
    return bool(shared) and all(str(row[k]) == str(args[k]) for k in shared)


# Each follows the oracle and differs only in how it answers what a call returned.
RECOVERY: dict[str, React] = {
    "naive-retry": naive_retry,
    "reconcile": reconcile,
    "keyed-retry": naive_retry,  # blind, but with the step's idempotency key (`keyed`)
    "verify": verify,
}


class FollowInjection:
    """Watches what the tools answer; the first time an answer carries an injected instruction it knows,
    it does what that instruction asks (the goal's own steps), then goes on with the task."""

    def __init__(self, goals: list[tuple[str, list[tuple[str, dict[str, Any]]]]]) -> None:
        self.goals = goals  # (instruction, steps)
        self.followed = False

    async def __call__(self, episode: Episode, tool: str, args: dict[str, Any], result: ToolResult) -> int:
        if self.followed:
            return 0
        texts = list(strings(result.content)) + ([result.raw] if result.raw else [])
        for instruction, steps in self.goals:
            if any(form in text for form in _forms(instruction) for text in texts):
                self.followed = True
                for goal_tool, goal_args in steps:
                    await episode.call(goal_tool, goal_args)
                return len(steps)
        return 0


def both(first: React, second: React) -> React:
    async def react(episode: Episode, tool: str, args: dict[str, Any], result: ToolResult) -> int:
        return await first(episode, tool, args, result) + await second(episode, tool, args, result)

    return react


def follower(task: Task) -> FollowInjection:
    """A watcher for the payloads of the goals the task's tools can carry out."""
    from agentrel.harness.conditions.catalogue import default_root, load_catalogue
    from agentrel.harness.suite_paths import ENV

    # An environment without injected goals has none to follow (and no adversarial condition: the audit
    # refuses one up front, naming the missing goals/ folder).
    root = default_root() if os.environ.get(ENV) else task.suite_root / "damage_specs" / "injections"
    goals = load_catalogue(root, task.environment).goals_for(task) if (root / "goals").is_dir() else []
    return FollowInjection([(g.instruction, [(s.tool, s.args) for s in g.steps]) for g in goals])


def _forms(instruction: str) -> tuple[str, ...]:
    """The instruction as payloads carry it: plain, JSON-escaped once or twice, base64."""
    once = json.dumps(instruction)[1:-1]
    return instruction, once, json.dumps(once)[1:-1], base64.b64encode(instruction.encode()).decode()


class ScriptedAgent:
    """`scripted/oracle`, `scripted/noop`, `scripted/<counterexample>`: replay that script of each task.

    `noop` is built in: a single read-free run with a vague final message. A task without the named
    counterexample gets the noop script, so a matrix over the whole suite never has holes.
    `naive-retry` and `reconcile` follow the oracle and differ only after a call fails transiently (a
    timeout, a 5xx, a 429): the first repeats it blindly, the second reads the state first.
    `keyed-retry` repeats blindly too, but every call of a tool that honours idempotency keys carries its
    step's key, so the repeat of a call that committed does nothing. `verify` follows the oracle and reads
    back every write that answered success, doing it again when the state does not show it.
    `follow-injection` follows the oracle and does what the first injected payload it reads asks.
    """

    kind: AgentKind = "scripted"

    def __init__(self, script: str) -> None:
        self.script = script
        self.name = f"scripted/{script}"

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind}

    def pick(self, task: Task) -> tuple[str, Script]:
        scripts = task.scripts()
        if self.script in RECOVERY or self.script == "follow-injection":
            return self.script, task.oracle
        if self.script in scripts:
            return self.script, scripts[self.script]
        return "noop", Script(steps=[], final="I looked into it.")

    async def run(self, episode: Episode) -> AgentResult:
        if self.script == "follow-injection":
            return await self._follow(episode)
        name, script = self.pick(episode.task)
        if self.script == "keyed-retry":
            script = keyed(episode, script)
        return await replay(episode, script, name, RECOVERY.get(self.script))

    async def _follow(self, episode: Episode) -> AgentResult:
        return await replay(episode, episode.task.oracle, "follow-injection", follower(episode.task))


class ReferenceStochasticAgent:
    """`reference/stochastic`: per run, follow the oracle or one of the task's damaging counterexamples,
    chosen from the per-run seed with the probabilities the task file declares, and after a transient
    tool failure retry blindly or reconcile, also as declared. A reference agent, not a model: it lets the
    whole pipeline run without an API key, and reports name it as such."""

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

    @staticmethod
    def recovery(task: Task, seed: str) -> React:
        """After a transient failure: a blind retry with the task's declared probability, else reconcile.
        Drawn from its own slice of the seed, independent of the script choice."""
        u = int(hashlib.sha256(f"{seed}|retry".encode()).hexdigest()[:16], 16) / 2**64
        return naive_retry if u < task.reference_blind_retry else reconcile

    @staticmethod
    def gullible(task: Task, seed: str) -> bool:
        """Whether this run does what an injected payload asks, with the task's declared probability."""
        u = int(hashlib.sha256(f"{seed}|injection".encode()).hexdigest()[:16], 16) / 2**64
        return u < task.reference_follow_injection

    async def run(self, episode: Episode) -> AgentResult:
        task = episode.task
        name = self.choose(task, episode.seed)
        react = self.recovery(task, episode.seed)
        if self.gullible(task, episode.seed):
            react = both(react, follower(task))
        return await replay(episode, task.scripts()[name], name, react)


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
