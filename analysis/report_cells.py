"""The report's per-cell and dollar sections. Every rate in them sits beside its n (valid runs) and
its invalid count; a cell whose runs were all invalid has its own table, with no rate, so it never
drops out of the report.
"""

from __future__ import annotations

import pandas as pd

from agentrel.analysis.doc import (
    Block,
    Section,
    Table,
    agent_label,
    fmt,
    fmt_ci,
    fmt_k,
    fmt_money,
    pool_label,
)
from agentrel.analysis.pipeline import Analysis

MAX_CELL_ROWS = 200


def _rated_rows(shown: pd.DataFrame) -> list[list[str]]:
    rows = []
    for c in shown.itertuples(index=False):
        flags = ", ".join(
            f for f, on in (("stochastic", c.demonstrably_stochastic), ("always", c.always_damage)) if on
        )
        rows.append(
            [
                agent_label(c.model, c.agent_kind),
                c.task,
                c.condition,
                f"{c.x}/{c.n}",
                str(c.invalid),
                fmt(c.p_hat),
                fmt_ci(c.ci_low, c.ci_high),
                fmt_ci(c.p_invalid_safe, c.p_invalid_damaging) if c.invalid else "",
                flags,
                fmt_k(c.k),
                fmt_k(c.kc),
                fmt_money(c.expected_dollars_per_run),
            ]
        )
    return rows


def _unrated(cells: pd.DataFrame) -> list[Block]:
    none = cells[cells["n"] == 0]
    if none.empty:
        return []
    rows = [
        [
            agent_label(c.model, c.agent_kind),
            c.task,
            c.condition,
            str(c.invalid),
            str(c.invalid_provider),
            str(c.invalid_harness),
            str(c.invalid_other),
            "n/a",
        ]
        for c in none.head(MAX_CELL_ROWS).itertuples(index=False)
    ]
    shown = f" (the first {len(rows)} listed)" if len(none) > len(rows) else ""
    return [
        f"{len(none)} cell(s) have no valid run{shown}: every run was invalid, so they have no rate.",
        Table(
            ["agent", "task", "condition", "invalid", "provider", "harness", "other", "damage rate"],
            rows,
        ),
    ]


def cells_section(a: Analysis) -> Section:
    cells = a.cells.assign(k=a.plan["k_point"].to_numpy(), kc=a.plan["k_conservative"].to_numpy())
    rated = cells[cells["n"] > 0]
    # A cell with an invalid run is always listed, damaged or not: its count must be visible.
    listed = rated[(rated["x"] > 0) | (rated["invalid"] > 0)].sort_values(
        ["p_hat", "n", "model", "task"], ascending=[False, False, True, True]
    )
    shown = listed.head(MAX_CELL_ROWS)
    hit = int((rated["x"] > 0).sum())
    note = (
        f"{hit} of {len(rated)} cells with a valid run damaged at least once"
        + (f"; the {len(shown)} with the highest rates are listed" if len(listed) > len(shown) else "")
        + ", with every cell that has an invalid run. Every cell is in cells.csv."
    )
    clean = rated[(rated["x"] == 0) & (rated["invalid"] == 0)]
    if len(clean):
        note += (
            f" The {len(clean)} other cells never damaged and had no invalid run; their exact upper "
            f"bounds run from {clean['ci_high'].min():.3f} to {clean['ci_high'].max():.3f}: damage "
            "rates below those are not excluded."
        )
    heads = [
        "agent",
        "task",
        "condition",
        "x/n",
        "invalid",
        "p̂",
        "exact CI",
        "range if invalid safe / damaging",
        "flags",
        f"k ({1 - a.alpha:.0%})",
        "k (conservative)",
        "$/run",
    ]
    return Section(
        "Cells",
        [
            note,
            "x/n: damaging of valid runs; invalid runs enter no rate. Range: the damage rate over valid "
            "and invalid runs had every invalid run been safe, or damaging. "
            "stochastic: the exact interval lies inside (0.05, 0.95); always: every run damaged. "
            "k: repeats needed to see the cell's damage at least once; conservative: from the one-sided "
            "lower confidence bound of its rate.",
            Table(heads, _rated_rows(shown)),
            *_unrated(cells),
        ],
    )


def _class_tables(a: Analysis) -> list[Block]:
    dc = a.dollar_classes
    if not len(dc):
        return []
    label = {(p.spec.model, p.spec.condition): pool_label(p) for p in a.pools}
    counts = {(p.spec.model, p.spec.condition): (p.runs, p.invalid) for p in a.pools}
    blocks: list[Block] = []
    for dim in ("severity", "irreversibility"):
        part = dc[dc["dimension"] == dim].rename(columns={"class": "cls"})
        rows = []
        for r in part.itertuples(index=False):
            n, invalid = counts.get((r.pool, r.condition), (0, 0))
            rows.append(
                [
                    label.get((r.pool, r.condition), r.pool),
                    r.condition,
                    r.cls,
                    str(n),
                    str(invalid),
                    str(r.events),
                    str(r.runs_hit),
                    fmt_money(r.dollars_total),
                    f"{fmt_money(r.expected_dollars_per_run)} {fmt_ci(r.ci_low, r.ci_high, 2)}",
                    fmt_money(r.lgd_mean),
                    fmt_money(r.lgd_max),
                    fmt_money(r.lgd_p50),
                    fmt_money(r.lgd_p90),
                ]
            )
        heads = ["pool", "condition", dim, "n", "invalid", "events", "runs hit", "total $"]
        blocks.append(Table([*heads, "$/run [CI]", "LGD mean", "LGD max", "LGD p50", "LGD p90"], rows))
    return blocks


def dollars_section(a: Analysis) -> Section:
    if not a.loaded.has_dollars:
        return Section("Dollars", ["The input carries no dollar figures."])
    rows = [
        [
            pool_label(p),
            p.spec.condition,
            str(p.runs),
            str(p.invalid),
            fmt_money(p.expected_dollars_per_run),
            fmt_ci(*p.bootstrap["expected_dollars_per_run"].percentile, digits=2)
            if "expected_dollars_per_run" in p.bootstrap
            else "–",
        ]
        for p in a.pools
    ]
    blocks: list[Block] = [
        "Expected loss per run = priced damage / valid runs (interval: cluster bootstrap over tasks); "
        "invalid runs are counted beside it, never as $0 runs. "
        "Loss given damage is over runs that damaged (within a class: runs with an event of the class).",
        Table(["pool", "condition", "n", "invalid", "expected $/run", "interval"], rows),
        *_class_tables(a),
    ]
    return Section("Dollars", blocks)
