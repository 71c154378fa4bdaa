"""`agentrel env ...`: list the installed environments and check one against the contract."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from agentrel.harness.cli.errors import ExitCode
from agentrel.harness.cli.options import Backend, Dsn, Image
from agentrel.harness.cli.sandbox import sandbox_errors
from agentrel.harness.cli.tables import emit
from agentrel.harness.errors import UsageError

app = typer.Typer(
    help="List the installed environments and check one against the contract.", no_args_is_help=True
)
out = Console()
err = Console(stderr=True, highlight=False)


# Not the checked `--env` of the other commands: the list is where a wrong name is found out.
Marked = Annotated[
    str | None,
    typer.Option("--env", envvar="AGENTREL_ENV", help="Mark this environment as the selected one."),
]


@app.command("list")
def list_(env: Marked = None) -> None:
    """Every environment this installation can audit on: built-in and from installed packages; the one
    `--env` (or AGENTREL_ENV) selects is marked."""
    from agentrel.sandbox.environments.registry import DEFAULT, load, names
    from agentrel.sandbox.servers.base import SandboxError

    rows: list[list[str]] = []
    selected = env or DEFAULT
    for name in names():
        try:
            found = load(name)
        except SandboxError as exc:
            rows.append([name, "-", "-", f"cannot load: {exc}"])
            continue
        mark = " (selected)" if name == selected else ""
        rows.append([name + mark, found.fingerprint()[:12], ", ".join(found.verticals), found.describe()])
    emit(["name", "fingerprint", "verticals", "description"], rows, console=out)


@app.command()
def check(
    name: Annotated[str, typer.Argument(help="The environment to check (`agentrel env list`).")],
    tasks: Annotated[
        list[str] | None, typer.Option("--task", help="Check only these task ids or globs (repeatable).")
    ] = None,
    dsn: Dsn = None,
    backend: Backend = None,
    image: Image = None,
) -> None:
    """Check ENV: seed built twice equal, primary keys, oracle replays equal, clock pinned, read-only tools
    read only, tools confined to their run database, and `tasks prove` on its suite. Exits 1 on any
    failure, each named by its table, task or tool."""
    from agentrel.harness.env_check import check_environment
    from agentrel.harness.tasks import load_suite
    from agentrel.sandbox.environments.registry import UnknownEnvironment, load
    from agentrel.sandbox.sandbox import Sandbox

    try:
        env = load(name)
    except UnknownEnvironment as exc:
        raise UsageError(str(exc)) from None
    suite = load_suite(patterns=tasks, env=env)

    def say(message: str) -> None:  # on stderr, piped or not: a check takes minutes
        err.print(f"agentrel: env check {name}: {message}", markup=False, soft_wrap=True)

    say(f"{len(suite)} task(s)")
    with sandbox_errors():
        sb = Sandbox.open(dsn, backend, image=image, env=env)
        problems = check_environment(sb, suite, say)
    for p in problems:
        out.print(f"FAIL {p}", markup=False, highlight=False)
    if problems:
        out.print(f"environment {name}: {len(problems)} problem(s)", markup=False)
        raise typer.Exit(int(ExitCode.FAILED))
    out.print(f"environment {name} conforms: {len(suite)} task(s), fingerprint {env.fingerprint()[:12]}")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="env")
