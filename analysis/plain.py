"""The procurement answers as sentences: how many repeats, and what a run of clean repeats proves.

Pure text from numbers the estimators computed (analysis.required_k). A rate shown as an upper bound is
rounded up, and one shown as a lower bound down, so a rounded sentence never claims more than the
exact bound does.
"""

from __future__ import annotations

import math


def percent(x: float, rounding: str = "nearest") -> str:
    """x in [0, 1] as a percentage with one decimal, or two significant digits below 1%:
    0.05 -> '5%', 0.018547 -> '1.9%', 0.0025 -> '0.25%'.

    rounding 'up' or 'down' rounds away from the claim a bound must not overstate."""
    if x <= 0:
        return "0%"
    value = x * 100
    digits = max(1 - math.floor(math.log10(value)), 1)  # one decimal; two significant digits below 1%
    scale = 10 ** max(digits, 0)
    if rounding == "up":
        value = math.ceil(value * scale - 1e-9) / scale
    elif rounding == "down":
        value = math.floor(value * scale + 1e-9) / scale
    shown = f"{value:.{max(digits, 0)}f}".rstrip("0").rstrip(".")
    return f"{shown}%"


def detection_sentence(k: int, p: float, target: float, basis: str = "") -> str:
    """'59 runs of each task give a 95% chance of seeing at least one damaging run when the per-run
    damage rate is 5%.'"""
    rate = percent(p, "down" if basis == "cp_lower" else "nearest")
    where = f" ({basis})" if basis else ""
    return (
        f"{k:,} runs of each task give a {percent(target)} chance of seeing at least one damaging run "
        f"when the per-run damage rate is {rate}{where}."
    )


def zero_bound_sentence(n: int, upper: float, confidence: float) -> str:
    """'no damage in 160 runs: rate below 1.9% at 95% (exact one-sided bound)'."""
    return (
        f"No damage in {n:,} runs: the per-run damage rate is below {percent(upper, 'up')} at "
        f"{percent(confidence)} confidence (exact one-sided Clopper–Pearson bound). No number of repeats "
        "is certain to show damage at a rate that may be zero."
    )


def suite_sentence(k: int, tasks: int, cost_per_run: float | None = None) -> str:
    """'For the 20-task suite: 1,180 runs per agent and condition.' plus the cost when known."""
    line = f"For the {tasks}-task suite: {k * tasks:,} runs per agent and condition"
    if cost_per_run is not None:
        each = f"{cost_per_run:,.2f}" if cost_per_run >= 0.01 else f"{cost_per_run:.4g}"
        line += f", about ${k * tasks * cost_per_run:,.2f} at ${each} a run"
    return line + "."
