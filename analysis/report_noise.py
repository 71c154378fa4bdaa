"""The report's noise-floor section (analysis/noise_floor.py) and its attempts-per-cell section (the
error budget, analysis/error_budget.py): plain Markdown blocks, like every other section."""

from __future__ import annotations

from agentrel.analysis.doc import Section, Table, fmt
from agentrel.analysis.error_budget import cell_attempts
from agentrel.analysis.noise_floor import NoiseFloor
from agentrel.analysis.pipeline import Analysis

MAX_ROWS = 200


def _pp(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} pp"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def noise_section(floor: NoiseFloor) -> Section:
    rows = [
        [
            p.model,
            p.condition,
            f"{p.runs} over {p.tasks}",
            fmt(p.damage_rate),
            fmt(p.icc),
            f"{p.design_effect:.2f}",
            _pp(p.mde),
            f"{p.flipped_cells}/{p.repeated_cells} ({_pct(p.flip_share)})",
            f"[{fmt(p.single_run_range[0])}, {fmt(p.single_run_range[1])}]",
        ]
        for p in floor.pools
    ]
    lead = (
        f"**Noise floor: two agents' damage rates must differ by at least {_pp(floor.mde)} to be told "
        f"apart at this audit's n** ({100 * (1 - floor.alpha):g}% two-sided, {100 * floor.power:g}% power; "
        "the largest agent's minimum detectable difference). "
        if floor.mde is not None
        else ""
    )
    flips = (
        f"{floor.flipped_cells} of {floor.repeated_cells} repeated cells ({_pct(floor.flip_share)}) do not "
        "get the same verdict on every run: a single run of such a cell says little about it."
        if floor.repeated_cells
        else "No cell has two valid runs, so no verdict can be seen to flip."
    )
    return Section(
        "Noise floor",
        [
            lead + flips,
            "mde: the smallest difference in damage rate a two-sided test detects with the stated power, "
            "for two agents with this many runs over these tasks, runs of a task correlated by the fitted "
            "ICC (design effect 1 + (m - 1) ICC). Single run: the central "
            f"{100 * floor.level:g}% range of the damage rate one run of every task shows, at the observed "
            "per-task rates. A difference below the mde is below the floor: `compare` says so.",
            Table(
                [
                    "agent",
                    "condition",
                    "runs",
                    "damage rate",
                    "ICC",
                    "design effect",
                    "mde",
                    "flipping cells",
                    "single run",
                ],
                rows,
            ),
        ],
    )


def attempts_section(a: Analysis) -> Section:
    budget = a.loaded.error_budget
    table = cell_attempts(a.cells, budget)
    shown = table.head(MAX_ROWS)
    rows = [
        [
            r.model,
            r.task,
            r.condition,
            str(r.attempted),
            str(r.assessed),
            str(r.damaging),
            str(r.errored),
            _pct(None if r.errored_share != r.errored_share else float(r.errored_share)),
            "over" if r.over_budget else ("within" if budget is not None else "–"),
        ]
        for r in shown.itertuples(index=False)
    ]
    over = int(table["over_budget"].sum())
    if budget is None:
        head = "No error budget was frozen for this audit (`agentrel audit --error-budget`)."
    else:
        head = f"Error budget: at most {100 * budget:g}% of a cell's attempts may be errored. " + (
            f"**{over} cell(s) over it: neither certified nor published** (error_budget_exceeded)."
            if over
            else "Every cell is within it."
        )
    blocks: list[str | Table] = [
        head + " Attempted: every attempt recorded; assessed: valid runs (every rate is over these); "
        "errored: invalid runs and the attempts a retry replaced, which enter no rate.",
        Table(
            [
                "agent",
                "task",
                "condition",
                "attempted",
                "assessed",
                "damaging",
                "errored",
                "errored share",
                "budget",
            ],
            rows,
        ),
    ]
    if len(table) > MAX_ROWS:
        blocks.append(f"First {MAX_ROWS} of {len(table)} cells; cells.csv lists them all.")
    return Section("Attempts per cell", blocks)  # type: ignore[arg-type]
