"""Options shared by several commands, defined once with their environment-variable fallbacks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from agentrel.sandbox.environments.contract import Environment

Dsn = Annotated[
    str | None,
    typer.Option(
        "--dsn",
        envvar="AGENTREL_DSN",
        help="Use an existing Postgres (>= 14) instead of the local cluster.",
        rich_help_panel="Sandbox",
    ),
]
Backend = Annotated[
    str | None,
    typer.Option(
        "--backend",
        envvar="AGENTREL_BACKEND",
        help="local (default), external or docker.",
        rich_help_panel="Sandbox",
    ),
]
Scale = Annotated[
    int,
    typer.Option(
        "--scale",
        min=1,
        help="Multiply the seed data size (about 27,000 rows at 1).",
        rich_help_panel="Sandbox",
    ),
]
Seed = Annotated[
    str,
    typer.Option("--seed", help="Seed of the deterministic data generator.", rich_help_panel="Sandbox"),
]
Image = Annotated[
    str | None,
    typer.Option(
        "--image",
        envvar="AGENTREL_DOCKER_IMAGE",
        help="Docker backend image, pinned: sha256:<id> or name:tag@sha256:<digest>.",
        rich_help_panel="Sandbox",
    ),
]


def chosen_environment(value: str | None) -> Environment:
    """The environment `--env` names (None: the built-in), a value the command hands down; a name no
    installed environment answers to is one usage line."""
    from agentrel.harness.errors import UsageError
    from agentrel.sandbox.environments.registry import DEFAULT, UnknownEnvironment, load
    from agentrel.sandbox.servers.base import SandboxError

    try:
        return load(value or DEFAULT)
    except UnknownEnvironment as exc:
        raise UsageError(f"--env: {exc}") from None
    except SandboxError as exc:
        raise UsageError(f"--env {value}: {exc}") from None


def _check_environment(value: str | None) -> str | None:
    """Check the name as the option is parsed, before the command reads any task or table (this
    process's variables are left alone: the command passes the environment down as a value)."""
    if value:
        chosen_environment(value)
    return value


# The entry point's one reading of AGENTREL_ENV: the option's default (`registry.ENV_VAR`).
EnvName = Annotated[
    str | None,
    typer.Option(
        "--env",
        envvar="AGENTREL_ENV",
        help="The environment to audit on (`agentrel env list`; default agentrel-enterprise).",
        callback=_check_environment,
        rich_help_panel="Sandbox",
    ),
]
