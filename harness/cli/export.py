"""`agentrel export damages|runs|cells|axes|faults`: flat CSV files for insurers and other tools."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from agentrel.harness.cli.analyze import (
    INPUT_HELP,
    MixedOpt,
    SeedOpt,
    err,
    load,
    run_counts,
    user_errors,
)
from agentrel.harness.errors import UsageError

OUT_HELP = "CSV file to write; - writes to standard output."


OutOpt = Annotated[Path | None, typer.Option("-o", "--output", help=OUT_HELP)]
DescribeOpt = Annotated[
    bool, typer.Option("--describe", help="Print what each column of this file means, and exit.")
]
OptionalInput = Annotated[Path | None, typer.Argument(help=INPUT_HELP, show_default=False)]


def _describe_or_need(kind: str, describe: bool, input: Path | None, output: Path | None) -> bool:
    """Print the column dictionary for --describe (True: done); else insist on an input and -o."""
    from agentrel.analysis.columns import BY_KIND
    from agentrel.analysis.columns import describe as describe_file

    if describe:
        typer.echo(describe_file(BY_KIND[kind]), nl=False)
        return True
    if input is None:
        raise UsageError(f"export {kind}: give a results directory or an outcomes CSV")
    if output is None:
        raise UsageError(f"export {kind}: give -o/--output FILE (or -o - for standard output)")
    return False


def _write(frame: Any, output: Path) -> bool:
    """Write the CSV to `output`, or to standard output for `-` (True: it went to standard output)."""
    from agentrel.analysis.export import write_csv

    if str(output) == "-":
        try:
            frame.to_csv(sys.stdout, index=False, lineterminator="\n", na_rep="")
            sys.stdout.flush()
        except BrokenPipeError:  # `| head`: the reader has what it wanted; not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return True
    output.parent.mkdir(parents=True, exist_ok=True)
    write_csv(frame, output)
    return False


def damages_command(
    input: OptionalInput = None,
    output: OutOpt = None,
    allow_mixed_protocols: MixedOpt = False,
    describe: DescribeOpt = False,
) -> None:
    """One row per damage event, with the spec that produced it (the task, or injection:<goal>); an
    outcomes CSV has no events: one row per damaged run, rule and spec empty."""
    from agentrel.analysis.export import damages_frame, unpriced_counts
    from agentrel.harness.damage_pricing import damage_pricing

    if _describe_or_need("damages", describe, input, output):
        return
    assert input is not None and output is not None
    loaded = load(input, allow_mixed_protocols)
    with user_errors():
        frame = damages_frame(loaded, damage_pricing(input) if loaded.kind == "results" else None)
        to_stdout = _write(frame, output)
    what = "damaged runs (no event detail in a CSV)" if loaded.events_synthesized else "damage events"
    err.print(
        f"{len(frame)} {what} from {run_counts(loaded, loaded.cell_count)}", markup=False, soft_wrap=True
    )
    unpriced, severe = unpriced_counts(frame)
    if unpriced:
        err.print(
            f"{unpriced} event(s) have no price (their rule names none; dollars left empty), "
            f"{severe} of them high or critical severity",
            markup=False,
            soft_wrap=True,
        )
    if not to_stdout:
        typer.echo(str(output))


def runs_command(
    input: OptionalInput = None,
    output: OutOpt = None,
    allow_mixed_protocols: MixedOpt = False,
    describe: DescribeOpt = False,
) -> None:
    """One row per run, valid or invalid, with its cell's valid-run count: the frequency denominator."""
    from agentrel.analysis.export import runs_frame
    from agentrel.harness.damage_pricing import damage_pricing

    if _describe_or_need("runs", describe, input, output):
        return
    assert input is not None and output is not None
    loaded = load(input, allow_mixed_protocols)
    with user_errors():
        frame = runs_frame(loaded, damage_pricing(input) if loaded.kind == "results" else None)
        to_stdout = _write(frame, output)
    err.print(run_counts(loaded, loaded.cell_count), markup=False, soft_wrap=True)
    if not to_stdout:
        typer.echo(str(output))


def cells_command(
    input: OptionalInput = None,
    output: OutOpt = None,
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", min=1, help="Resamples for dollar intervals.")
    ] = 2000,
    seed: SeedOpt = 0,
    allow_mixed_protocols: MixedOpt = False,
    describe: DescribeOpt = False,
) -> None:
    """Per cell: n, invalid, x, exact interval, bounds whatever the invalid runs were, expected loss."""
    from agentrel.analysis.export import cells_export_frame
    from agentrel.analysis.pipeline import cell_frame

    if _describe_or_need("cells", describe, input, output):
        return
    assert input is not None and output is not None
    loaded = load(input, allow_mixed_protocols)
    with user_errors():
        frame = cells_export_frame(cell_frame(loaded, bootstrap, seed))
        to_stdout = _write(frame, output)
    err.print(run_counts(loaded, len(frame)), markup=False, soft_wrap=True)
    if not to_stdout:
        typer.echo(str(output))


def axes_command(
    input: OptionalInput = None,
    output: OutOpt = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", min=0, help="Bootstrap resamples.")] = 2000,
    seed: SeedOpt = 0,
    allow_mixed_protocols: MixedOpt = False,
    describe: DescribeOpt = False,
) -> None:
    """Per agent and condition: each operational axis with its interval, n and invalid count."""
    from agentrel.analysis.axes_table import operational_axes
    from agentrel.analysis.export import axes_export_frame

    if _describe_or_need("axes", describe, input, output):
        return
    assert input is not None and output is not None
    loaded = load(input, allow_mixed_protocols)
    with user_errors():
        frame = axes_export_frame(operational_axes(loaded, n_boot=bootstrap, seed=seed))
        to_stdout = _write(frame, output)
    err.print(run_counts(loaded, loaded.cell_count), markup=False, soft_wrap=True)
    if not to_stdout:
        typer.echo(str(output))


def faults_command(
    input: Annotated[
        Path | None,
        typer.Argument(help="A results directory audited under a fault schedule.", show_default=False),
    ] = None,
    output: OutOpt = None,
    describe: DescribeOpt = False,
) -> None:
    """One row per preregistered fault run: its lifecycle (scheduled, armed, fired, witnessed or not) with
    the evidence of each state, and what the agent then did."""
    import pandas as pd

    from agentrel.analysis.columns import FAULTS
    from agentrel.harness.faults.lifecycle import lifecycles_of, rows

    if _describe_or_need("faults", describe, input, output):
        return
    assert input is not None and output is not None
    lifecycles = lifecycles_of(input)
    if not lifecycles:
        raise UsageError(f"export faults: {input} scheduled no faults (`audit --faults FILE` schedules them)")
    frame = pd.DataFrame(rows(lifecycles), columns=[c.name for c in FAULTS.columns])
    to_stdout = _write(frame, output)
    states = pd.Series([lc.state for lc in lifecycles]).value_counts()
    err.print(
        f"{len(lifecycles)} scheduled fault runs: "
        + ", ".join(
            f"{int(states.get(s, 0))} {s}" for s in ("witnessed", "unwitnessed", "fired", "armed", "missing")
        ),
        markup=False,
        soft_wrap=True,
    )
    if not to_stdout:
        typer.echo(str(output))


def register(app: typer.Typer) -> None:
    """Add the `export` group (damages, cells, axes) to the root app."""
    group = typer.Typer(
        help="Export damage events, runs, per-cell estimates, the operational axes or the fault lifecycles "
        "as CSV.",
        no_args_is_help=True,
    )
    group.command("damages")(damages_command)
    group.command("runs")(runs_command)
    group.command("cells")(cells_command)
    group.command("axes")(axes_command)
    group.command("faults")(faults_command)
    app.add_typer(group, name="export")
