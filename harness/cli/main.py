"""The `agentrel` root command: builds the typer app and registers one module per command group."""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console

from harness.cli.errors import ExitCode, exit_code
from harness.errors import UserError

app = typer.Typer(
    name="agentrel",
    help="Audit tool-using LLM agents for the damage they do, read from database state over many runs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)

# Each module exposes `register(app)`; a module that is not built yet is simply absent.
COMMAND_MODULES = ("sandbox", "spec", "tasks", "mcp", "audit", "analyze", "export")

for _name in COMMAND_MODULES:
    try:
        _module = importlib.import_module(f"harness.cli.{_name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"harness.cli.{_name}":
            raise
        continue
    _module.register(app)


def main() -> None:
    try:
        app()
    except UserError as exc:
        Console(stderr=True, highlight=False, soft_wrap=True).print(f"agentrel: error: {exc}", markup=False)
        sys.exit(int(exit_code(exc)))
    except KeyboardInterrupt:
        Console(stderr=True).print("agentrel: interrupted", markup=False)
        sys.exit(int(ExitCode.INTERRUPTED))
