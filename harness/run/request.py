"""`AuditRequest`: everything an audit is asked to do, as one frozen, typed value.

The CLI maps its options to these fields (`harness/cli/audit.py`), `agentrel.audit` builds one from its
keywords, and `harness.run.audit.audit` runs one. Every cross-option check is a validator here, so a bad
combination is refused the same way (one `UsageError` line naming the option) whoever asks. A new
capability is a field, its validator and an option; what the audit learns while it runs (the resolved
conditions, the fault schedule, the protocol hash) is derived from the request, never spelled again.

Live objects are not requests: an opened sandbox, an executor factory or a person's MCP session are
handed to `audit()` beside the request.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from agentrel.analysis.fault_coverage import read_floor
from agentrel.harness import defaults
from agentrel.harness.agents.external import ExternalSpec
from agentrel.harness.errors import UsageError
from agentrel.harness.fail_on import parse_fail_on
from agentrel.harness.run.matrix import ORDERS, Order
from agentrel.harness.stopping import StoppingRule

__all__ = ["EXECUTORS", "MAX_TEMPERATURE", "AuditRequest"]

MAX_TEMPERATURE = 2.0  # the widest range any provider accepts
EXECUTORS = ("local", "ray")  # where attempts may run (`harness.executors` resolves each)

# The option each field is set by, for the one line a refused value gets.
OPTION = {
    "environment": "--env",
    "models": "--model",
    "agents": "--agent",
    "tasks": "--tasks",
    "conditions": "--condition",
    "faults": "--faults",
    "fault_coverage_floor": "--fault-coverage-floor",
    "fault_timeout_s": "--fault-timeout",
    "k": "--k",
    "max_steps": "--max-steps",
    "max_attempts": "--max-attempts",
    "temperature": "--temperature",
    "until": "--until",
    "cost_per_run": "--cost-per-run",
    "error_budget": "--error-budget",
    "fail_on": "--fail-on",
    "prices": "--prices",
    "order": "--order",
    "model_timeout_s": "--model-timeout",
    "model_aliases": "--model-alias",
    "model_meta": "--model-meta",
    "concurrency": "--concurrency",
    "results": "--results",
    "executor": "--executor",
    "ray_address": "--ray-address",
    "workers": "--workers",
    "dsn": "--dsn",
    "backend": "--backend",
    "image": "--image",
    "plan": "--plan",
    "limit": "limit",
}


class AuditRequest(BaseModel):
    """What to audit, how often, under which conditions, where the runs execute and where they are kept."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # --- what is audited -----------------------------------------------------------------------------
    environment: str | None = None  # None: the opened sandbox's, else the built-in
    models: tuple[str, ...] = ()  # model subjects: openai/<m>, anthropic/<m>, scripted/<s>, reference/...
    agents: tuple[ExternalSpec, ...] = ()  # agent programs, audited as agent/<NAME>
    session: str | None = None  # a person's MCP session recorded under this subject name (`mcp serve`)
    tasks: tuple[str, ...] = (defaults.TASKS,)  # task id globs
    conditions: tuple[str, ...] = (defaults.CONDITION,)  # names or condition YAML files
    faults: str | None = None  # `standard` or a schedule YAML file
    # The share of a fault stratum's runs that must be witnessed for it to publish: one share, or one per
    # fault kind (analysis.fault_coverage); None: every one (the rule before floors).
    fault_coverage_floor: float | dict[str, float] | None = None
    fault_timeout_s: float = Field(defaults.FAULT_TIMEOUT_S, gt=0)
    # --- how much and how -----------------------------------------------------------------------------
    k: int = defaults.K  # runs per cell (the cap under `until`)
    max_steps: int = defaults.MAX_STEPS
    max_attempts: int = defaults.MAX_ATTEMPTS
    temperature: float = defaults.TEMPERATURE
    until: StoppingRule | None = None  # a sequential audit's frozen rule (`--until` and its budget)
    cost_per_run: float | None = None  # US dollars a run costs: a draft plan's dollars
    error_budget: float | None = None  # the most share of a cell's attempts that may be errored
    fail_on: tuple[str, ...] = ()  # what makes the audit fail as a CI gate (`harness.fail_on`; exit 6)
    prices: Path | None = None  # the token price table (YAML)
    order: Order = "run"
    # --- model subjects -------------------------------------------------------------------------------
    model_timeout_s: float | None = None
    model_aliases: tuple[tuple[str, str], ...] = ()  # (asked, served)
    model_meta: Path | None = None  # declared server facts (YAML)
    # --- where it runs and where it is kept -----------------------------------------------------------
    concurrency: int = defaults.CONCURRENCY
    results: Path | None = None  # None: `results_dir()`
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    workers: int | None = None
    dsn: str | None = None  # the sandbox: an external server, a backend, a container image
    backend: str | None = None
    image: str | None = None
    plan: bool = False  # write the preregistered matrix; run nothing
    limit: int | None = None  # attempt at most this many pending runs in this invocation

    @classmethod
    def of(cls, **fields: Any) -> AuditRequest:
        """The request, or one UsageError line naming the first refused option (never pydantic's dump)."""
        try:
            return cls(**fields)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = str(first["loc"][0]) if first["loc"] else ""
            message = str(first["msg"]).removeprefix("Value error, ")
            if first["type"] == "value_error":  # our validators' messages name their options already
                raise UsageError(message) from None
            raise UsageError(f"{OPTION.get(field, field)}: {message}") from None

    # --- one field at a time --------------------------------------------------------------------------

    @field_validator("k", "max_attempts", "concurrency")
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        if value < 1:
            raise ValueError("--k, --concurrency and --max-attempts must be at least 1")
        return value

    @field_validator("max_steps")
    @classmethod
    def _steps(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"--max-steps must be at least 1, got {value}")
        return value

    @field_validator("order", "executor", mode="before")
    @classmethod
    def _choice(cls, value: Any, info: ValidationInfo) -> Any:
        choices = {"order": ORDERS, "executor": EXECUTORS}[str(info.field_name)]
        if value not in choices:
            raise ValueError(
                f"{OPTION[str(info.field_name)]} must be one of {', '.join(choices)}, got {value!r}"
            )
        return value

    @field_validator("fault_coverage_floor", mode="before")
    @classmethod
    def _coverage_floor(cls, value: Any) -> Any:
        """A share, `KIND=SHARE,...` (the option's text), or a mapping; each share in (0, 1]."""
        if value is None:
            return None
        try:
            if isinstance(value, str):
                pairs = [part.partition("=") for part in value.split(",") if part.strip()]
                if len(pairs) == 1 and not pairs[0][1]:
                    value = float(pairs[0][0])
                else:
                    value = {kind.strip(): float(share) for kind, sep, share in pairs if sep}
                    if len(value) != len(pairs):
                        raise ValueError("give SHARE or KIND=SHARE,...")
            return read_floor(value)
        except ValueError as exc:
            raise ValueError(
                f"--fault-coverage-floor {value}: {exc} (a share in (0, 1], or KIND=SHARE per fault kind)"
            ) from None

    @field_validator("fail_on")
    @classmethod
    def _fail_on(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return parse_fail_on(value)  # comma-separated or repeated; ValueError names a bad one

    @field_validator("temperature")
    @classmethod
    def _temperature(cls, value: float) -> float:
        if not (math.isfinite(value) and 0 <= value <= MAX_TEMPERATURE):
            raise ValueError(f"--temperature must lie in [0, {MAX_TEMPERATURE:g}], got {value}")
        return value

    @field_validator("error_budget")
    @classmethod
    def _error_budget(cls, value: float | None) -> float | None:
        if value is not None and not (math.isfinite(value) and 0 <= value < 1):
            raise ValueError(
                f"--error-budget is the most a cell's attempts may be errored, a share in [0, 1); got {value}"
            )
        return value

    @field_validator("model_timeout_s")
    @classmethod
    def _model_timeout(cls, value: float | None) -> float | None:
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ValueError(f"--model-timeout must be a positive number of seconds, got {value}")
        return value

    @field_validator("cost_per_run")
    @classmethod
    def _cost(cls, value: float | None) -> float | None:
        if value is not None and not (0 < value < math.inf):
            raise ValueError(f"--cost-per-run must be a positive number of US dollars, got {value}")
        return value

    @field_validator("workers", "limit")
    @classmethod
    def _positive(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"--workers and limit must be at least 1, got {value}")
        return value

    # --- across fields --------------------------------------------------------------------------------

    @model_validator(mode="before")
    @classmethod
    def _default_subject(cls, data: Any) -> Any:
        """No subject named: the default model, as the CLI's --model default."""
        if isinstance(data, dict) and not any(data.get(f) for f in ("models", "agents", "session")):
            return {**data, "models": (defaults.MODEL,)}
        return data

    @model_validator(mode="after")
    def _subjects(self) -> AuditRequest:
        subjects = [spec.subject for spec in self.agents]
        if len(set(subjects)) != len(subjects) or set(subjects) & set(self.models):
            raise ValueError("two --agent/--agent-file entries share a name; give each agent its own NAME")
        if len(set(self.models)) != len(self.models):
            raise ValueError(f"--model names a subject twice: {', '.join(self.models)}")
        if self.session is not None and self.session in [*self.models, *subjects]:
            raise ValueError(f"{self.session} is also named by --model or --agent")
        names = set(self.models) | {m.partition("/")[2] for m in self.models}
        for asked, served in self.model_aliases:
            if not asked or not served:
                raise ValueError(f"--model-alias {asked}={served}: give it as ASKED=SERVED (both non-empty)")
            if asked not in names:
                raise ValueError(
                    f"--model-alias {asked}={served}: {asked!r} is not an audited model "
                    f"({', '.join(self.models) or 'none'})"
                )
        return self

    @model_validator(mode="after")
    def _faults(self) -> AuditRequest:
        if self.fault_coverage_floor is not None and self.faults is None:
            raise ValueError("--fault-coverage-floor goes with --faults (it is a share of the fault runs)")
        return self

    @model_validator(mode="after")
    def _sequential(self) -> AuditRequest:
        if "uncertified" in self.fail_on and (self.until is None or self.until.until != "detect"):
            raise ValueError("--fail-on uncertified needs --until detect (it is what certifies a cell)")
        return self

    # --- what follows from it -------------------------------------------------------------------------

    @property
    def subjects(self) -> list[str]:
        """Every audited subject's name: the models, the agent programs (agent/<NAME>), the session."""
        session = [self.session] if self.session is not None else []
        return [*self.models, *(spec.subject for spec in self.agents), *session]

    @property
    def sampling(self) -> dict[str, Any]:
        return {"temperature": self.temperature}

    def results_dir(self, environment: str | None = None) -> Path:
        """`results`, else results/<subjects>-k<K>[-<tasks>], prefixed with the environment's name (the
        request's, else `environment`, the sandbox's) when it is not the built-in one: the same audit on
        two environments is two protocols, so it needs two directories."""
        from agentrel.sandbox.environments.registry import DEFAULT

        if self.results is not None:
            return self.results
        environment = self.environment or environment or DEFAULT
        slug = "+".join(m.replace("/", "_") for m in self.subjects)
        patterns = list(self.tasks)
        scope = "" if not patterns or patterns == ["*"] else "-" + "+".join(patterns).replace("*", "x")
        prefix = "" if environment == DEFAULT else environment + "-"
        return Path("results") / f"{prefix}{slug}-k{self.k}{scope}"
