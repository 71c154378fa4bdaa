"""`agentrel tasks ...`: list, show, validate and prove the task suite."""

from __future__ import annotations

from typing import Annotated, Any

import typer
import yaml
from rich.console import Console

from agentrel.harness.cli.errors import ExitCode
from agentrel.harness.cli.options import Backend, Dsn, EnvName, chosen_environment
from agentrel.harness.cli.sandbox import sandbox_errors
from agentrel.harness.cli.tables import emit
from agentrel.harness.errors import UserError

app = typer.Typer(help="List, show, validate and prove the task suite.", no_args_is_help=True)
out = Console()
Ids = Annotated[list[str] | None, typer.Argument(help="Task ids or globs (default: all).")]


@app.command("list")
def list_(
    env: EnvName = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """A table of every task: id, vertical, lever, irreversibility, priced."""
    from agentrel.harness.cli.tables import emit, emit_json
    from agentrel.harness.tasks import load_suite

    headers = ("id", "vertical", "lever", "irreversibility", "priced", "k", "title")
    suite = load_suite(env=chosen_environment(env))
    if as_json:
        emit_json(
            headers, [(t.id, t.vertical, t.lever, t.irreversibility, t.priced, t.k, t.title) for t in suite]
        )
        return
    rows = [
        (t.id, t.vertical, t.lever, t.irreversibility, "$" if t.priced else "-", str(t.k), t.title)
        for t in suite
    ]
    emit(headers, rows, console=out)


@app.command()
def show(
    task_id: Annotated[str, typer.Argument(help="Task id.")],
    env: EnvName = None,
    prompt: Annotated[
        str | None,
        typer.Option(
            "--prompt",
            help="Print only this prompt (user or system), byte for byte as a model subject receives it.",
        ),
    ] = None,
) -> None:
    """Print one task: prompts, tools, params and scripts."""
    import sys

    from agentrel.harness.errors import UsageError
    from agentrel.harness.tasks import load_suite

    if prompt not in (None, "user", "system"):
        raise UsageError(f"--prompt {prompt!r}: use user or system")
    matches = [t for t in load_suite(patterns=[task_id], env=chosen_environment(env)) if t.id == task_id]
    if not matches:
        raise UsageError(f"no task {task_id!r}: `agentrel tasks list` shows the ids")
    task = matches[0]
    if prompt is not None:
        sys.stdout.write(task.user_prompt if prompt == "user" else task.system_prompt)
        sys.stdout.flush()
        return
    # Written as is (not through rich, which would re-wrap it), multi-line strings as literal blocks: the
    # default style folds them into quoted scalars with doubled quotes and a blank line per line break.
    sys.stdout.write(
        yaml.dump(task.model_dump(mode="json"), Dumper=_LiteralDumper, sort_keys=False, width=110)
    )


def _literal(dumper: Any, value: str) -> Any:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


class _LiteralDumper(yaml.SafeDumper):
    pass


_LiteralDumper.add_representer(str, _literal)


@app.command()
def validate(ids: Ids = None, dsn: Dsn = None, backend: Backend = None, env: EnvName = None) -> None:
    """Check every task: schema, tool names, spec against the sandbox schema, params, fixture SQL applies."""
    from agentrel.dsl.api import DslError, check_spec, load_spec
    from agentrel.dsl.params import resolve_params
    from agentrel.harness.run.episode import prepare
    from agentrel.harness.tasks import load_suite
    from agentrel.sandbox.sandbox import Sandbox

    environment = chosen_environment(env)
    tasks = load_suite(patterns=ids, env=environment)
    schema = dict(environment.table_infos())
    problems: list[str] = []
    for task in tasks:
        where = f"tasks/{task.vertical}/{task.id}.yaml"
        try:
            spec = load_spec(task.spec_path)
            problems += [f"{where}: spec: {p}" for p in check_spec(spec, schema)]
            resolve_params(spec, task.params)
        except DslError as exc:
            problems.append(f"{where}: {exc}".splitlines()[0])
    with sandbox_errors():
        sb = Sandbox.open(dsn, backend, env=environment)
        for task in tasks:
            try:
                prepare(sb, task)
            except UserError as exc:
                problems.append(str(exc))
    for p in problems:
        out.print(p, markup=False, highlight=False)
    if problems:
        raise typer.Exit(int(ExitCode.FAILED))
    out.print(f"{len(tasks)} task(s) valid")


@app.command()
def prove(ids: Ids = None, dsn: Dsn = None, backend: Backend = None, env: EnvName = None) -> None:
    """Run every oracle and counterexample on a real sandbox; exit non-zero on any mismatch."""
    from agentrel.harness.prove import prove_task
    from agentrel.harness.run.episode import prepare
    from agentrel.harness.tasks import load_suite
    from agentrel.sandbox.sandbox import Sandbox

    environment = chosen_environment(env)
    tasks = load_suite(patterns=ids, env=environment)
    rows: list[list[str]] = []
    bad = 0
    with sandbox_errors():
        sb = Sandbox.open(dsn, backend, env=environment)
        with out.status("proving tasks") as status:
            for task in tasks:
                status.update(f"proving {task.id}")
                for row in prove_task(sb, prepare(sb, task)):
                    bad += not row.ok
                    ok = "ok" if row.ok else f"MISMATCH {row.detail}"
                    rows.append([row.task, row.script, row.expected, row.got, ok])
    emit(["task", "script", "expected", "got", "ok"], rows, console=out)
    if bad:
        out.print(f"{bad} mismatch(es)", markup=False)
        raise typer.Exit(int(ExitCode.FAILED))
    out.print(f"all {len(tasks)} task(s) proved")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="tasks")
