"""Task files: the pydantic model of a task YAML, and loading the suite with one-line errors.

A task puts an agent in a realistic enterprise situation with a genuine temptation to do damage. Its
file names the prompt, the tools, the fixture SQL that builds its template, its damage spec and params,
and the scripted plans that prove the spec: an oracle that passes and counterexamples that must be
caught (see tasks/README.md).
"""

from __future__ import annotations

import hashlib
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from agentrel.harness.errors import UsageError, UserError
from agentrel.harness.suite_paths import ENV, suite_root, tasks_dir
from agentrel.harness.yamlfile import load_model

if TYPE_CHECKING:
    from agentrel.sandbox.environments.contract import Environment

Lever = Literal[
    "entity_confusability",
    "filter_width",
    "refusal_tension",
    "order_sensitivity",
    "irreversible_create",
    "scope_trap",
]
Outcome = Literal["PASS", "FAIL_SAFE", "FAIL_DAMAGE"]


def _environment(info: ValidationInfo) -> Environment:
    """The environment a task file is read for (`load_task(env=)`); a task validated without one is the
    built-in's."""
    env = (info.context or {}).get("environment")
    if env is None:
        from agentrel.sandbox.environments.registry import default

        env = default()
    return env  # type: ignore[no-any-return]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Step(Strict):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class Expectation(Strict):
    outcome: Outcome
    sub_label: str
    rules: list[str] = Field(default_factory=list, description="damage rule labels that must fire")
    dollars: Decimal | None = None


class Script(Strict):
    """A scripted plan: tool calls in order, then the final message."""

    steps: list[Step] = Field(default_factory=list)
    final: str
    expect: Expectation | None = None


class Task(Strict):
    id: str
    vertical: str = Field(description="one of the environment's verticals (the folder under tasks/)")
    title: str
    lever: Lever
    irreversibility: Literal["substrate", "governance", "reversible"]
    priced: bool = False
    acting_user: str = "svc.agentrel"
    system_prompt: str
    user_prompt: str
    tools: list[str] = Field(min_length=1)
    # Where the environment offers every task its whole toolset (`Environment.whole_toolset`, the τ² ports),
    # a file omits `tools`; one that lists fewer says why here, and the report names it.
    tools_narrowed: str | None = None
    fixture_sql: str = ""
    spec: str
    params: dict[str, Any] = Field(default_factory=dict)
    optimal_steps: int = Field(ge=1)
    k: int = Field(default=16, ge=1)
    reference: dict[str, float] = Field(
        default_factory=dict,
        description="reference/stochastic: probability of each script (oracle or a "
        "counterexample name); the rest goes to the oracle",
    )
    reference_blind_retry: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="reference/stochastic: probability that it repeats a write blindly after a transient "
        "failure (else it reads the state first)",
    )
    reference_follow_injection: float = Field(
        default=0.2,
        ge=0.0,
        le=1.0,
        description="reference/stochastic: probability that it does what an injected payload asks",
    )
    oracle: Script
    counterexamples: dict[str, Script]
    rationale: str = ""
    # The suite folder the file was read from (`load_task`): its `spec` is relative to it, whichever
    # environment another part of the process is working on. Not a field: the file does not say it.
    _suite_root: Path | None = PrivateAttr(default=None)
    _environment: str | None = PrivateAttr(default=None)  # the name of the environment it was read for

    @model_validator(mode="before")
    @classmethod
    def _whole_toolset(cls, data: Any, info: ValidationInfo) -> Any:
        """In an environment that offers every task its whole toolset, no `tools` means all of them, and a
        narrower list must say why: a silently narrowed task cannot show the wrong-tool mistakes the
        environment measures (cancel instead of modify)."""
        if not isinstance(data, dict):
            return data
        env = _environment(info)
        if not env.whole_toolset:
            return data
        every = sorted(env.tools())
        if "tools" not in data:
            return {**data, "tools": every}
        given = data["tools"]
        if isinstance(given, list) and set(given) != set(every) and not data.get("tools_narrowed"):
            raise ValueError(
                f"environment {env.name} offers every task its whole toolset ({len(every)} tools); this file "
                f"lists {len(given)}: drop `tools`, or keep them and say why in `tools_narrowed`"
            )
        return data

    @field_validator("id")
    @classmethod
    def _id_shape(cls, v: str) -> str:
        if not v.replace("-", "").isalnum() or v != v.lower():
            raise ValueError("id must be lower-case letters, digits and dashes")
        return v

    @field_validator("vertical")
    @classmethod
    def _known_vertical(cls, v: str, info: ValidationInfo) -> str:
        env = _environment(info)
        if v not in env.verticals:
            shown = ", ".join(repr(x) for x in env.verticals)
            raise ValueError(f"{v!r} is not a vertical of environment {env.name} (one of {shown})")
        return v

    @model_validator(mode="after")
    def _remember_suite(self, info: ValidationInfo) -> Task:
        context = info.context or {}
        if context.get("suite_root") is not None:
            self._suite_root = Path(context["suite_root"])
        if context.get("environment") is not None:
            self._environment = context["environment"].name
        return self

    @model_validator(mode="after")
    def _scripts(self) -> Task:
        for name, script in self.counterexamples.items():
            if script.expect is None:
                raise ValueError(f"counterexample {name!r} needs an expect block (outcome and sub_label)")
        unknown = set(self.reference) - {"oracle", *self.counterexamples}
        if unknown:
            raise ValueError(f"reference names unknown script(s) {sorted(unknown)}")
        if sum(self.reference.values()) > 1 + 1e-9 or any(p < 0 for p in self.reference.values()):
            raise ValueError("reference probabilities must be >= 0 and sum to at most 1")
        return self

    @property
    def oracle_expect(self) -> Expectation:
        return self.oracle.expect or Expectation(outcome="PASS", sub_label="")

    def scripts(self) -> dict[str, Script]:
        return {"oracle": self.oracle, **self.counterexamples}

    @cached_property
    def spec_path(self) -> Path:
        """The damage spec, in the suite the task was read from (a task built in code: the built-in's,
        or AGENTREL_SUITE_DIR's)."""
        return self.suite_root / self.spec

    @property
    def suite_root(self) -> Path:
        """The folder holding the task's tasks/ and damage_specs/ (its injection catalogue among them)."""
        return self._suite_root or suite_root()

    @property
    def environment(self) -> Environment:
        """The environment the task was read for (`load_task(env=)`; a task built in code: the built-in)."""
        from agentrel.sandbox.environments import registry

        return registry.load(self._environment) if self._environment else registry.default()

    def fixture_digest(self) -> str:
        return hashlib.sha256(self.fixture_sql.encode()).hexdigest()

    def spec_digest(self) -> str:
        return hashlib.sha256(self.spec_path.read_bytes()).hexdigest()


def load_task(path: Path, env: Environment | None = None, suite: Path | None = None) -> Task:
    """One task file, checked against `env`'s verticals and tools (None: the built-in environment's);
    `suite`: the folder holding its tasks/ and damage_specs/ (default: the file's tasks/<vertical>/'s)."""
    if env is None:
        from agentrel.sandbox.environments.registry import default

        env = default()
    root = suite if suite is not None else path.parent.parent.parent
    task = load_model(Task, path, {"environment": env, "suite_root": root})
    if path.stem != task.id:
        raise UserError(f"{path}: field id: {task.id!r} must match the file name {path.stem!r}")
    if path.parent.name in env.verticals and path.parent.name != task.vertical:
        raise UserError(
            f"{path}: field vertical: {task.vertical!r} disagrees with its folder {path.parent.name!r}"
        )
    return task


def task_files(root: Path | None = None, env: Environment | None = None) -> list[Path]:
    """The task files under `root` (default: `env`'s tasks/, the built-in's when None)."""
    root = root or tasks_dir(env)
    if not root.is_dir():
        # Without this a wrong AGENTREL_SUITE_DIR reads as an empty suite.
        raise UserError(f"{root}: no such tasks folder (set {ENV} to a folder holding tasks/)")
    return sorted(root.glob("*/*.yaml"))


def load_suite(
    root: Path | None = None, patterns: list[str] | None = None, env: Environment | None = None
) -> list[Task]:
    """All tasks of `env` (None: the built-in environment), read from `root` (a tasks/ folder; default
    the environment's, or AGENTREL_SUITE_DIR's), optionally filtered by id glob patterns; unknown ids
    are an error. Each task keeps the suite folder it was read from (`Task.spec_path`)."""
    from fnmatch import fnmatch

    if env is None:
        from agentrel.sandbox.environments.registry import default

        env = default()
    root = root or tasks_dir(env)
    files = task_files(root)
    tasks = [load_task(p, env, root.parent) for p in files]
    first: dict[str, Path] = {}
    for path, task in zip(files, tasks, strict=True):
        if task.id in first:
            raise UserError(
                f"task id {task.id!r} is defined twice: {first[task.id]} and {path}; rename or remove one"
            )
        first[task.id] = path
    if patterns:
        chosen = [t for t in tasks if any(fnmatch(t.id, p) for p in patterns)]
        if not chosen:
            raise UsageError(f"no task matches {' '.join(patterns)}; `agentrel tasks list` shows the ids")
        tasks = chosen
    return tasks
