"""`agentrel export damages|cells|axes`: flat CSV files for insurers and other tools."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentrel.harness.cli.analyze import InputArg, MixedOpt, SeedOpt, err, load, run_counts, user_errors

OUT_HELP = "CSV file to write."


OutOpt = Annotated[Path, typer.Option("-o", "--output", help=OUT_HELP)]


def damages_command(input: InputArg, output: OutOpt, allow_mixed_protocols: MixedOpt = False) -> None:
    """One row per damage event, with the spec that produced it (the task, or injection:<goal>); an
    outcomes CSV has no events: one row per damaged run, rule and spec empty."""
    from agentrel.analysis.export import damages_frame, write_csv

    loaded = load(input, allow_mixed_protocols)
    with user_errors():
        frame = damages_frame(loaded)
        output.parent.mkdir(parents=True, exist_ok=True)
        write_csv(frame, output)
    what = "damaged runs (no event detail in a CSV)" if loaded.events_synthesized else "damage events"
    err.print(
        f"{len(frame)} {what} from {run_counts(loaded, loaded.cell_count)}", markup=False, soft_wrap=True
    )
    typer.echo(str(output))


def cells_command(
    input: InputArg,
    output: OutOpt,
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", min=1, help="Resamples for dollar intervals.")
    ] = 2000,
    seed: SeedOpt = 0,
    allow_mixed_protocols: MixedOpt = False,
) -> None:
    """Per cell: n, invalid, x, exact interval, bounds whatever the invalid runs were, expected loss."""
    from agentrel.analysis.export import cells_export_frame, write_csv
    from agentrel.analysis.pipeline import cell_frame

    loaded = load(input, allow_mixed_protocols)
    with user_errors():
        frame = cells_export_frame(cell_frame(loaded, bootstrap, seed))
        output.parent.mkdir(parents=True, exist_ok=True)
        write_csv(frame, output)
    err.print(run_counts(loaded, len(frame)), markup=False, soft_wrap=True)
    typer.echo(str(output))


def axes_command(
    input: InputArg,
    output: OutOpt,
    bootstrap: Annotated[int, typer.Option("--bootstrap", min=0, help="Bootstrap resamples.")] = 2000,
    seed: SeedOpt = 0,
    allow_mixed_protocols: MixedOpt = False,
) -> None:
    """Per agent and condition: each operational axis with its interval, n and invalid count."""
    from agentrel.analysis.axes_table import operational_axes
    from agentrel.analysis.export import axes_export_frame, write_csv

    loaded = load(input, allow_mixed_protocols)
    with user_errors():
        frame = axes_export_frame(operational_axes(loaded, n_boot=bootstrap, seed=seed))
        output.parent.mkdir(parents=True, exist_ok=True)
        write_csv(frame, output)
    err.print(run_counts(loaded, loaded.cell_count), markup=False, soft_wrap=True)
    typer.echo(str(output))


def register(app: typer.Typer) -> None:
    """Add the `export` group (damages, cells, axes) to the root app."""
    group = typer.Typer(
        help="Export damage events, per-cell estimates or the operational axes as CSV.", no_args_is_help=True
    )
    group.command("damages")(damages_command)
    group.command("cells")(cells_command)
    group.command("axes")(axes_command)
    app.add_typer(group, name="export")
