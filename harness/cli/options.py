"""Options shared by several commands, defined once with their environment-variable fallbacks."""

from __future__ import annotations

from typing import Annotated

import typer

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


def _select_environment(value: str | None) -> str | None:
    """Select the environment as the option is parsed, before the command reads any task or table."""
    if value:
        from agentrel.harness.errors import UsageError
        from agentrel.sandbox.environments.registry import UnknownEnvironment, select
        from agentrel.sandbox.servers.base import SandboxError

        try:
            select(value)
        except UnknownEnvironment as exc:
            raise UsageError(f"--env: {exc}") from None
        except SandboxError as exc:
            raise UsageError(f"--env {value}: {exc}") from None
    return value


EnvName = Annotated[
    str | None,
    typer.Option(
        "--env",
        envvar="AGENTREL_ENV",
        help="The environment to audit on (`agentrel env list`; default agentrel-enterprise).",
        callback=_select_environment,
        rich_help_panel="Sandbox",
    ),
]
