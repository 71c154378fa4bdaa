"""`agentrel power --p1 P1 --p2 P2 [--alpha A] [--power B] [--icc R --tasks N] [--json]`: runs a
comparison of two agents' damage rates needs (analysis/decisions/power)."""

from __future__ import annotations

import json
import math
from typing import Annotated

import typer

from agentrel.harness.errors import UsageError


def power_command(
    p1: Annotated[float, typer.Option("--p1", help="Damage rate of agent 1.")],
    p2: Annotated[float, typer.Option("--p2", help="Damage rate of agent 2.")],
    alpha: Annotated[float, typer.Option("--alpha", help="Two-sided significance level.")] = 0.05,
    power: Annotated[float, typer.Option("--power", help="Power to reach.")] = 0.8,
    discordant: Annotated[
        float | None,
        typer.Option("--discordant", help="Share of pairs where exactly one agent damages [independent]."),
    ] = None,
    icc: Annotated[
        float | None, typer.Option("--icc", help="Intra-class correlation of runs within a task.")
    ] = None,
    tasks: Annotated[
        int | None, typer.Option("--tasks", help="Tasks (cells per agent) to spread runs over.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Runs per cell for a paired (shared seeds, exact McNemar, as analyze runs it) and an unpaired
    comparison, with the exact test's power at that n; design effect."""
    from agentrel.analysis.decisions.power import (
        PowerError,
        clustered,
        mcnemar_exact_pairs,
        mcnemar_exact_power,
        mcnemar_pairs,
        unpaired_runs,
    )

    if (icc is None) != (tasks is None):
        raise UsageError("--icc and --tasks go together")
    for flag, v in (("--p1", p1), ("--p2", p2), ("--alpha", alpha), ("--power", power)):
        if not (math.isfinite(v) and 0.0 < v < 1.0):
            raise UsageError(f"{flag} must be strictly between 0 and 1, got {v}")
    try:
        # Sized for the test analyze and compare run (exact McNemar); Connor's large-sample n beside it.
        large_sample = mcnemar_pairs(p1, p2, alpha, power, discordant)
        paired = mcnemar_exact_pairs(p1, p2, alpha, power, discordant)
        unpaired = unpaired_runs(p1, p2, alpha, power)
        result: dict[str, object] = {
            "p1": p1,
            "p2": p2,
            "alpha": alpha,
            "power": power,
            "paired_runs": paired,
            "exact_power": round(mcnemar_exact_power(paired, p1, p2, alpha, discordant), 4),
            "paired_runs_large_sample": large_sample,
            "large_sample_exact_power": round(
                mcnemar_exact_power(large_sample, p1, p2, alpha, discordant), 4
            ),
            "unpaired_runs": unpaired,
        }
        if icc is not None and tasks is not None:
            for key, n in (("paired", paired), ("unpaired", unpaired)):
                plan = clustered(n, icc, tasks)
                result[f"{key}_runs_per_cell"] = plan.runs_per_task
                result[f"{key}_design_effect"] = plan.design_effect
            result["cells"] = tasks
            result["icc"] = icc
    except PowerError as exc:
        raise UsageError(str(exc)) from None
    if as_json:
        typer.echo(json.dumps(result))
        return
    typer.echo(
        f"paired (shared seeds, exact McNemar): {paired} runs per agent, exact power "
        f"{result['exact_power']:.3f} (the large-sample formula's {large_sample} runs give "
        f"{result['large_sample_exact_power']:.3f})"
    )
    typer.echo(f"unpaired (independent runs): {unpaired} runs per agent")
    typer.echo(pairing_sentence(paired, unpaired, discordant))
    if icc is not None:
        typer.echo(
            f"over {tasks} tasks with ICC {icc:g}: {result['paired_runs_per_cell']} runs per cell paired "
            f"(design effect {result['paired_design_effect']:.3g}), {result['unpaired_runs_per_cell']} "
            f"unpaired (design effect {result['unpaired_design_effect']:.3g})"
        )


def pairing_sentence(paired: int, unpaired: int, discordant: float | None) -> str:
    """Why the two numbers differ, in words: pairing saves runs only when the agents' damage goes
    together on a seed, which only a declared discordant share says."""
    if discordant is None:
        return (
            "The paired number assumes the two agents damage independently on a seed (no --discordant): "
            "then pairing has nothing to cancel and its exact test needs "
            + ("more runs than" if paired > unpaired else "about as many runs as")
            + " two independent samples. Give --discordant (the share of seeds where exactly one agent "
            "damaged, from a pilot's paired runs) to size the paired design for agents that fail together."
        )
    if paired < unpaired:
        return (
            f"Pairing saves {unpaired - paired} runs per agent: with only {discordant:g} of seeds "
            "discordant, the shared seeds cancel most of the run-to-run noise."
        )
    return (
        f"With {discordant:g} of seeds discordant, the agents disagree too often on a seed for pairing to "
        "save runs: the exact paired test needs at least as many as two independent samples."
    )


def register(app: typer.Typer) -> None:
    """Add `power` to the root app."""
    app.command("power")(power_command)
