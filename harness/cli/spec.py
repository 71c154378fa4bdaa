"""`agentrel spec check FILE...` and `agentrel label SPEC BEFORE AFTER`: the damage DSL on the command line.

Commands parse options, call ``dsl.api`` and render; user mistakes become ``UserError`` with a named
exit code (a bad spec or dump: BAD_INPUT; a bad ``--param``: USAGE; problems found by ``check``: FAILED).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from agentrel.harness.cli.options import EnvName
from agentrel.harness.errors import CheckFailed, EnvironmentFailure, UsageError, UserError

if TYPE_CHECKING:
    from agentrel.dsl.state import TableInfo

app = typer.Typer(help="Check damage specs (.dmg) against the sandbox schema.", no_args_is_help=True)
out = Console(highlight=False, soft_wrap=True)

Files = Annotated[list[Path], typer.Argument(help="Spec files (.dmg) to check.", show_default=False)]
SchemaDump = Annotated[
    Path | None,
    typer.Option(
        "--schema",
        help="Check against the tables of this dump (.jsonl.gz) instead of the sandbox schema.",
        dir_okay=False,
    ),
]


@app.command("check")
def check(
    files: Files,
    schema: SchemaDump = None,
    env: EnvName = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per file.")] = False,
) -> None:
    """Parse each spec and check it against the schema; print every problem, one per line."""
    from agentrel.dsl.api import DslError, check_spec, load_spec

    infos = _schema(schema, env)
    problems: list[str] = []
    bad_files = 0
    for path in files:
        try:
            found = [str(p) for p in check_spec(load_spec(path), infos)]
        except DslError as exc:
            found = [str(exc).splitlines()[0]]
        problems += found
        bad_files += bool(found)
        if as_json:
            import json

            typer.echo(json.dumps({"file": str(path), "ok": not found, "problems": found}))
    for line in [] if as_json else problems:
        out.print(line, markup=False)
    if problems:
        raise CheckFailed(f"{len(problems)} problem(s) in {bad_files} of {len(files)} spec file(s)")
    if not as_json:
        out.print(f"{len(files)} spec file(s) ok", markup=False)


def label(
    spec: Annotated[Path, typer.Argument(help="The damage spec (.dmg).", show_default=False)],
    before: Annotated[
        Path, typer.Argument(help="Dump taken before the run (.jsonl.gz).", show_default=False)
    ],
    after: Annotated[Path, typer.Argument(help="Dump taken after the run (.jsonl.gz).", show_default=False)],
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param", "-p", help="Override a spec param: NAME=VALUE (repeatable).", show_default=False
        ),
    ] = None,
    final_message: Annotated[
        Path | None,
        typer.Option(
            "--final-message", help="File with the agent's final message ('-' for stdin).", dir_okay=False
        ),
    ] = None,
    errored: Annotated[bool, typer.Option("--errored", help="The run ended in an error.")] = False,
    stalled: Annotated[bool, typer.Option("--stalled", help="The run ran out of steps or time.")] = False,
) -> None:
    """Label one run from two dumps and print the verdict as JSON."""
    from agentrel.dsl.api import DslError, ParamError, RunFacts, load_spec
    from agentrel.dsl.api import label as label_run
    from agentrel.dsl.state import DumpFormatError, load

    overrides = parse_params(param or [])
    facts = RunFacts(final_message=_read_message(final_message), errored=errored, stalled=stalled)
    try:
        verdict = label_run(load_spec(spec), overrides, load(before), load(after), facts)
    except ParamError as exc:
        raise UsageError(str(exc)) from None
    except (DslError, DumpFormatError) as exc:
        raise UserError(str(exc)) from None
    typer.echo(verdict.model_dump_json(indent=2))


def parse_params(items: list[str]) -> dict[str, str]:
    """``["a=1", "b=x=y"]`` -> ``{"a": "1", "b": "x=y"}``; values stay strings (the spec coerces)."""
    params: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--param {item!r}: expected NAME=VALUE, e.g. --param cap=250.00")
        params[name.strip()] = value
    return params


def _read_message(path: Path | None) -> str | None:
    if path is None:
        return None
    if str(path) == "-":
        return sys.stdin.read()
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot read the final message ({exc.strerror})") from None


def _schema(dump: Path | None, env: str | None) -> dict[str, TableInfo]:
    if dump is not None:
        from agentrel.dsl.state import DumpFormatError, load

        try:
            return dict(load(dump).schema())
        except DumpFormatError as exc:
            raise UserError(str(exc)) from None
    try:
        from agentrel.harness.cli.options import chosen_environment
    except ImportError as exc:
        raise EnvironmentFailure(
            f"the sandbox schema is not available ({exc}); pass --schema DUMP to check against a dump"
        ) from None
    return dict(chosen_environment(env).table_infos())


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="spec")
    root.command("label")(label)
