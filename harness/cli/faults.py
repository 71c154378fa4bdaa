"""`agentrel faults selftest`: run every injector for real, as a no-op and with a tampered witness."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agentrel.harness.cli.errors import ExitCode
from agentrel.harness.cli.options import Backend, Dsn
from agentrel.harness.cli.sandbox import sandbox_errors

app = typer.Typer(help="The fault path's own checks.", no_args_is_help=True)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


@app.command()
def selftest(
    receipts: Annotated[
        Path | None, typer.Option("--receipts", help="Receipt log to append to (default: a temporary file).")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the cases as JSON on stdout instead of the text lines.")
    ] = False,
    json_out: Annotated[
        Path | None, typer.Option("--json-file", help="Also write the cases as JSON to this file.")
    ] = None,
    dsn: Dsn = None,
    backend: Backend = None,
) -> None:
    """Each fault real (must be witnessed), as a no-op and tampered (must be invalid_injection), the
    lost-response known answers, and process/in-process parity. Exit 1 unless every case is as expected."""
    from agentrel.harness.faults.selftest import TASK, run_selftest
    from agentrel.harness.run.episode import prepare
    from agentrel.harness.tasks import load_suite
    from agentrel.sandbox.sandbox import Sandbox

    with sandbox_errors():
        sb = Sandbox.open(dsn, backend)
        prepared = prepare(sb, load_suite(patterns=[TASK])[0])
        with tempfile.TemporaryDirectory() as tmp:
            log = receipts or Path(tmp) / "receipts.jsonl"
            cases = asyncio.run(run_selftest(sb, prepared, log))
    text = err if as_json else out  # with --json, stdout carries the JSON alone
    for case in cases:
        mark = "ok  " if case.ok else "FAIL"
        text.print(
            f"{mark} {case.name:<34} {case.got:<34} ({case.seconds:.1f} s) {case.detail}", markup=False
        )
    failed = [c for c in cases if not c.ok]
    rows = [{**c.__dict__, "ok": c.ok} for c in cases]
    if json_out is not None:
        json_out.write_text(json.dumps(rows, indent=1))
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
    text.print(f"{len(cases) - len(failed)}/{len(cases)} cases as expected", markup=False)
    if failed:
        raise typer.Exit(int(ExitCode.FAILED))


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="faults")
