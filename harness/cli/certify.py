"""`agentrel certify [RESULTS] --target-p P --confidence C [--multiplicity union|bonferroni]
[--budget-runs N] [--prior a,b] [--json]`: the zero-damage count, and for a results directory each
cell's certificate, the agent-level statement and what a further run budget would buy.
(analysis/decisions/certify.py and allocate.py)"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agentrel.harness.cli.analyze import INPUT_HELP, MixedOpt, load
from agentrel.harness.errors import UsageError, UserError

out = Console(highlight=False, soft_wrap=True)


def _unit(flag: str, value: float) -> None:
    if not (math.isfinite(value) and 0.0 < value < 1.0):
        raise UsageError(f"{flag} must be strictly between 0 and 1, got {value}")


def _prior(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    a, comma, b = text.partition(",")
    try:
        pair = (float(a), float(b))
    except ValueError:
        pair = (math.nan, math.nan)
    if not comma or not all(math.isfinite(x) and x > 0 for x in pair):
        raise UsageError(f"--prior must be a,b with a, b > 0 (a Beta prior of per-cell rates), got {text!r}")
    return pair


def certify_command(
    results: Annotated[
        Path | None, typer.Argument(help=INPUT_HELP + " Omit to print the count only.")
    ] = None,
    target_p: Annotated[
        float, typer.Option("--target-p", help="Per-run damage rate to certify below.")
    ] = 0.05,
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence of each certificate.")] = 0.95,
    multiplicity: Annotated[
        str,
        typer.Option("--multiplicity", help="union (per-cell C, union bound) or bonferroni (adjusted C)."),
    ] = "union",
    cells: Annotated[
        int | None, typer.Option("--cells", help="Cells (without RESULTS, for bonferroni).")
    ] = None,
    budget_runs: Annotated[
        int | None, typer.Option("--budget-runs", help="Runs still to spend over the open cells.")
    ] = None,
    prior: Annotated[
        str | None, typer.Option("--prior", help="Declared Beta prior a,b of cell rates [beta-binomial fit].")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    allow_mixed_protocols: MixedOpt = False,
) -> None:
    """Certify cells: no damage in n(P, C) valid runs means a per-run damage rate below P at confidence C."""
    from agentrel.analysis.decisions.certify import MULTIPLICITIES, cell_confidence, zero_damage_count

    _unit("--target-p", target_p)
    _unit("--confidence", confidence)
    if multiplicity not in MULTIPLICITIES:
        raise UsageError(f"--multiplicity must be one of {', '.join(MULTIPLICITIES)}, got {multiplicity!r}")
    if budget_runs is not None and budget_runs < 0:
        raise UsageError(f"--budget-runs must be a non-negative number of runs, got {budget_runs}")
    if cells is not None and cells < 1:
        raise UsageError(f"--cells must be at least 1, got {cells}")
    declared = _prior(prior)
    mode = multiplicity  # narrowed for the type checker below
    if results is None:
        m = cells or 1
        n = zero_damage_count(target_p, cell_confidence(confidence, m, mode))  # type: ignore[arg-type]
        if as_json:
            typer.echo(json.dumps({"target_p": target_p, "confidence": confidence, "cells": m, "runs": n}))
        else:
            typer.echo(
                f"{n} runs with no damage per cell certify p < {target_p:g} at confidence {confidence:g}"
            )
        return
    from agentrel.analysis.decisions.certificates import certificate_report
    from agentrel.analysis.decisions.evidence import cell_counts
    from agentrel.analysis.error_budget import over_budget_cells

    loaded = load(results, allow_mixed_protocols)
    counts = cell_counts(loaded.runs, loaded.invalid, loaded.superseded)
    over = over_budget_cells(loaded.runs, loaded.invalid, loaded.superseded, loaded.error_budget)
    certs = certificate_report(counts, target_p, confidence, mode, over_budget=over)  # type: ignore[arg-type]
    report: dict[str, object] = {"target_p": target_p, "confidence": confidence, "multiplicity": mode}
    report["agents"] = [a.model_dump(mode="json", exclude={"cells", "cell_confidence"}) for a in certs.agents]
    if not as_json:
        for a in certs.agents:
            out.print(f"{a.agent}: {a.statement}", markup=False)
            for k, sentence in a.certified.items():
                out.print(f"  certified {k}: {sentence}", markup=False)
            for k in a.detected:
                out.print(f"  detected  {k}: damage seen, no certificate", markup=False)
            for k, why in a.over_budget.items():
                out.print(f"  refused   {k}: {why}", markup=False)
            for k, o in a.open.items():
                out.print(
                    f"  open      {k_line(k, o.clean, a.runs_required, o.upper, a.cell_confidence)}",
                    markup=False,
                )
    if budget_runs is not None:
        report["budget"] = _budget(counts, target_p, confidence, mode, budget_runs, declared)
        if not as_json:
            b = report["budget"]
            assert isinstance(b, dict)
            out.print(
                f"budget of {budget_runs} runs ({b['prior']}): expected damaging cells left undetected "
                f"{b['undetected_before']:.2f} -> {b['undetected_after']:.2f}, expected detections "
                f"{b['expected_detected']:.2f}, certifications {b['expected_certified']:.2f}, "
                f"expected runs spent {b['expected_runs']:.0f}",
                markup=False,
            )
    if as_json:
        typer.echo(json.dumps(report))


def k_line(name: str, clean: int, n: int, upper: float, level: float) -> str:
    return f"{name}: {clean} of {n} runs clean; p < {upper:.4g} at confidence {level:.4g} so far"


def _budget(
    counts: Mapping[tuple[str, str, str], object],
    target_p: float,
    confidence: float,
    mode: str,
    budget: int,
    declared: tuple[float, float] | None,
) -> dict[str, object]:
    from agentrel.analysis.betabinom import fit_beta_binomial
    from agentrel.analysis.decisions.allocate import OpenCell, RatePrior, allocate
    from agentrel.analysis.decisions.certify import CellCounts, cell_confidence, decide, zero_damage_count

    typed = {k: v for k, v in counts.items() if isinstance(v, CellCounts)}
    per_agent: dict[str, int] = defaultdict(int)
    for model, _, _ in typed:
        per_agent[model] += 1
    open_cells = []
    for (model, task, condition), c in sorted(typed.items()):
        n = zero_damage_count(target_p, cell_confidence(confidence, per_agent[model], mode))  # type: ignore[arg-type]
        if decide(c, n) == "continue":
            open_cells.append(OpenCell(f"{model}/{task}/{condition}", c.clean, n - c.clean))
    try:
        if declared is not None:
            rate_prior = RatePrior.declared(*declared)
        else:
            rated = [c for c in typed.values() if c.clean + c.damaging > 0]
            fit = fit_beta_binomial([c.damaging for c in rated], [c.clean + c.damaging for c in rated])
            rate_prior = RatePrior.from_fit(fit)
    except ValueError as exc:
        raise UserError(f"--budget-runs: {exc} (--prior a,b)") from None
    plan = allocate(open_cells, budget, rate_prior)
    return {
        "prior": f"{rate_prior.source} Beta({rate_prior.a:.4g}, {rate_prior.b:.4g})",
        "runs": plan.runs,
        "allocated": plan.allocated,
        "undetected_before": plan.undetected_before,
        "undetected_after": plan.undetected_after,
        "expected_detected": plan.expected_detected,
        "expected_certified": plan.expected_certified,
        "expected_runs": plan.expected_runs,
    }


def register(app: typer.Typer) -> None:
    """Add `certify` to the root app."""
    app.command("certify")(certify_command)
