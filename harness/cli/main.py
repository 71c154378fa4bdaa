"""The `agentrel` root command: builds the typer app and registers one module per command group."""

from __future__ import annotations

import atexit
import gc
import logging
import sys

import typer
from rich.console import Console

try:  # typer vendors its own click from 0.29 on
    from typer._click.exceptions import ClickException
    from typer._click.exceptions import UsageError as ClickUsageError
except ImportError:  # pragma: no cover - an older typer raises click's own
    from click.exceptions import ClickException  # type: ignore[assignment]
    from click.exceptions import UsageError as ClickUsageError  # type: ignore[assignment]

from agentrel.harness.cli import (
    analyze,
    audit,
    certify,
    compare,
    env,
    export,
    faults,
    insure,
    mcp,
    power,
    protocol,
    publish,
    registry,
    sandbox,
    spec,
    tasks,
    view,
)
from agentrel.harness.cli.errors import ExitCode, exit_code
from agentrel.harness.cli.help_format import install as install_help_format
from agentrel.harness.errors import UserError

install_help_format()

app = typer.Typer(
    name="agentrel",
    help="Audit tool-using LLM agents for the damage they do, read from database state over many runs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        from agentrel.distribution import installed_version

        found = installed_version()  # None: a checkout run without an install
        typer.echo(f"agentrel {found}" if found else "agentrel (not installed: no version)")
        raise typer.Exit(0)


@app.callback()
def _root(
    show_version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the installed version and exit."
    ),
) -> None:
    """Audit tool-using LLM agents for the damage they do, read from database state over many runs."""


# One module per command group, each exposing `register(app)`; registered explicitly, so a module that
# fails to import fails the CLI loudly instead of silently dropping its commands.
for _module in (
    sandbox,
    env,
    spec,
    tasks,
    mcp,
    audit,
    analyze,
    export,
    view,
    faults,
    compare,
    registry,
    protocol,
    publish,
    certify,
    insure,
    power,
):
    _module.register(app)


class _Notices(logging.Handler):
    """Notices as `agentrel: …` lines on whatever stderr is when they are said (a test's capture
    replaces it), never on a stream captured at start and closed since."""

    def emit(self, record: logging.LogRecord) -> None:
        sys.stderr.write(f"agentrel: {record.getMessage()}\n")
        sys.stderr.flush()


_NOTICES = _Notices()


def _show_notices() -> None:
    """Slow first-use work (a cluster created, a template built, a wheel fetched) says so on stderr as
    it starts, so no command is silent for seconds (sandbox/notices.py). Once per process."""
    from agentrel.sandbox.notices import LOGGER

    log = logging.getLogger(LOGGER)
    if _NOTICES not in log.handlers:
        log.addHandler(_NOTICES)
    log.setLevel(logging.INFO)
    log.propagate = False


def main() -> None:
    # At exit, what is still alive is left to the operating system: the interpreter's last collection
    # would walk all of it (0.6 s after a 100,000-run analysis) to free memory the process is giving up.
    # Registered first, so it runs after every other exit handler (tool servers, Tryton) has run.
    atexit.register(gc.freeze)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    _show_notices()
    try:
        code = app(standalone_mode=False)
    except UserError as exc:
        err.print(f"agentrel: error: {exc}", markup=False)
        sys.exit(int(exit_code(exc)))
    except ClickUsageError as exc:
        # One line, as for every other bad input: the flag and what is wrong with it, then where help is.
        # (A group called without a command has printed its help already and has no message.)
        if exc.format_message():
            command = exc.ctx.command_path if exc.ctx else "agentrel"
            err.print(f"agentrel: error: {exc.format_message()} (see `{command} --help`)", markup=False)
        sys.exit(int(ExitCode.USAGE))
    except ClickException as exc:
        err.print(f"agentrel: error: {exc.format_message()}", markup=False)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        err.print("agentrel: interrupted", markup=False)
        sys.exit(int(ExitCode.INTERRUPTED))
    sys.exit(code if isinstance(code, int) else 0)
