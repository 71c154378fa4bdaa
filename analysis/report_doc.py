"""What the report says, as plain data (sections of paragraphs, tables and images) built from an
Analysis. render_md and render_html turn the same document into report.md and report.html.

Reference and scripted agents are always labelled as such, never as models.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from analysis.pipeline import Analysis
from analysis.pools import K_VALUES, PoolResult

MAX_CELL_ROWS = 200
KIND_LABEL = {"model": "model", "reference": "reference agent", "scripted": "scripted agent"}


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]


@dataclass
class Image:
    path: str
    alt: str


Block = str | Table | Image


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Document:
    title: str
    sections: list[Section]


def fmt(value: object, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def fmt_ci(lo: object, hi: object, digits: int = 3) -> str:
    return f"[{fmt(lo, digits)}, {fmt(hi, digits)}]"


def fmt_money(value: object) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"${float(value):,.2f}"  # type: ignore[arg-type]


def fmt_k(value: object) -> str:
    """A repeat count; '–' when there is none, scientific notation past a million."""
    if value is None or pd.isna(value):
        return "–"
    k = int(value)  # type: ignore[call-overload]
    return str(k) if k < 10**6 else f"{k:.2e}"


def fmt_p(value: float) -> str:
    return "–" if not math.isfinite(value) else (f"{value:.2g}" if value < 0.001 else f"{value:.3f}")


def agent_label(name: str, kind: str) -> str:
    return name if kind == "model" else f"{name} ({KIND_LABEL.get(kind, kind)})"


def pool_label(p: PoolResult) -> str:
    if p.spec.model == "all":
        return "all models" if p.spec.agent_kind == "model" else "all agents (no models in the input)"
    return agent_label(p.spec.model, p.spec.agent_kind)


def _boot(p: PoolResult, stat: str) -> str:
    b = p.bootstrap.get(stat)
    return fmt_ci(*b.percentile) if b else "–"


def _overview(a: Analysis) -> Section:
    L = a.loaded
    hashes = ", ".join(f"`{h}`" for h in L.protocol_hashes) or "none recorded (outcomes CSV)"
    errored = L.runs["errored"]
    agent_errors = "unknown" if errored.isna().any() else str(int(errored.sum()))
    blocks: list[Block] = [
        f"Input: `{L.source}` ({'harness results' if L.kind == 'results' else 'outcomes CSV'}). "
        f"Protocol hash: {hashes}.",
        f"{len(L.runs)} valid runs in {len(a.cells)} cells. {len(L.failures)} infrastructure failures "
        f"(harness errors or runs without a verdict) are excluded from every rate and listed below. "
        f"Agent errors among the valid runs: {agent_errors}.",
        f"Intervals are at {1 - a.alpha:.0%}; bootstrap: {a.n_boot} cluster resamples over tasks, "
        f"seed {a.seed}.",
    ]
    blocks += [f"Note: {n}." for n in L.notes]
    agents = sorted(L.agents.items(), key=lambda kv: (kv[1] != "model", kv[0]))
    blocks.append(Table(["agent", "kind"], [[name, KIND_LABEL.get(kind, kind)] for name, kind in agents]))
    if len(L.failures):
        by_cell = L.failures.groupby(["model", "task", "condition"]).size().sort_values(ascending=False)
        rows = [[m, t, c, str(v)] for (m, t, c), v in by_cell.head(20).items()]
        blocks += [
            "Infrastructure failures by cell (largest 20):",
            Table(["agent", "task", "condition", "failures"], rows),
        ]
    return Section("Overview", blocks)


def _pools(a: Analysis) -> Section:
    rows = []
    for p in a.pools:
        f = p.fit
        rows.append(
            [
                pool_label(p),
                p.spec.condition,
                str(p.cells),
                str(p.damage_cells),
                str(p.always_damage_cells),
                str(p.stochastic_cells),
                f"{p.damaged_runs}/{p.runs}",
                f"{fmt(p.stats['damage_rate'])} {_boot(p, 'damage_rate')}",
                f"{fmt(p.stats['miss_rate_pair'])} {_boot(p, 'miss_rate_pair')}",
                f"{fmt(p.stats['miss_rate_event'])} {_boot(p, 'miss_rate_event')}",
                f"{fmt(f.rho)} {fmt_ci(*f.rho_ci)}" + (" (not identified)" if f.degenerate else ""),
                fmt_p(f.lr_pvalue),
                fmt(p.stats["icc_anova"]),
                fmt(p.stats["icc_fleiss_cuzick"]),
                fmt(p.stats["icc_kleinman"]),
            ]
        )
    headers = [
        "pool",
        "condition",
        "cells",
        "damage cells",
        "always damage",
        "demonstrably stochastic",
        "damaged runs",
        "damage rate [boot CI]",
        "miss rate, pair [boot CI]",
        "miss rate, event [boot CI]",
        "ICC MLE [profile CI]",
        "p (rho = 0)",
        "ICC ANOVA",
        "ICC Fleiss–Cuzick",
        "ICC Kleinman",
    ]
    return Section(
        "Pools",
        [
            "A pool is every cell of one agent (or of all models) under one condition. Miss rate: the "
            "probability that one clean audit run misses a damage-producing cell, averaged over such cells "
            "(pair) or weighted by their damage events (event). ICC: share of run-to-run variance that is "
            "between cells (beta-binomial rho); p tests rho = 0 against its boundary-corrected null.",
            Table(headers, rows),
        ],
    )


def _repeats(a: Analysis) -> Section:
    rows = []
    for p in a.pools:
        k = p.required_k_beta
        rows.append(
            [
                pool_label(p),
                p.spec.condition,
                *(fmt(p.detection_beta[k_]) for k_ in K_VALUES),
                fmt_k(k) if k is not None else ("–" if p.damaged_runs == 0 else "> 4.6e18"),
                *(fmt(p.safe_hat_k[k_]) for k_ in K_VALUES),
                *(fmt(p.pass_hat_k[k_]) for k_ in K_VALUES),
            ]
        )
    heads = (
        [f"detect@{k}" for k in K_VALUES]
        + [f"k for {1 - a.alpha:.0%}"]
        + [f"safe^{k}" for k in K_VALUES]
        + [f"pass^{k}" for k in K_VALUES]
    )
    return Section(
        "Repeats and detection",
        [
            "detect@k: probability that k runs of a randomly drawn cell of the pool show damage at "
            "least once, under the fitted beta distribution of per-cell damage rates, "
            "1 - B(a, b + k) / B(a, b). "
            "Cells that never damage pull this down; per-cell repeat counts are in the cell table. "
            "safe^k / pass^k: unbiased C(c, k) / C(n, k) averaged over cells (cells with n < k left out).",
            Table(["pool", "condition", *heads], rows),
        ],
    )


def _cells(a: Analysis) -> Section:
    cells = a.cells.assign(k=a.plan["k_point"].to_numpy(), kc=a.plan["k_conservative"].to_numpy())
    hit = cells[cells["x"] > 0].sort_values(
        ["p_hat", "n", "model", "task"], ascending=[False, False, True, True]
    )
    shown = hit.head(MAX_CELL_ROWS)
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
                fmt(c.p_hat),
                fmt_ci(c.ci_low, c.ci_high),
                flags,
                fmt_k(c.k),
                fmt_k(c.kc),
                fmt_money(c.expected_dollars_per_run),
            ]
        )
    clean = cells[cells["x"] == 0]
    note = (
        f"{len(hit)} of {len(a.cells)} cells damaged at least once"
        + (f"; the {len(shown)} with the highest rates are listed" if len(hit) > len(shown) else "")
        + ". Every cell is in cells.csv."
    )
    if len(clean):
        note += (
            f" The {len(clean)} cells that never damaged have exact upper bounds from "
            f"{clean['ci_high'].min():.3f} to {clean['ci_high'].max():.3f}: damage rates below those "
            "are not excluded."
        )
    heads = [
        "agent",
        "task",
        "condition",
        "x/n",
        "p̂",
        "exact CI",
        "flags",
        f"k ({1 - a.alpha:.0%})",
        "k (conservative)",
        "$/run",
    ]
    return Section(
        "Cells",
        [
            note,
            "stochastic: the exact interval lies inside (0.05, 0.95); always: every run damaged. "
            "k: repeats needed to see the cell's damage at least once; conservative: from the one-sided "
            "lower confidence bound of its rate.",
            Table(heads, rows),
        ],
    )


def _dollars(a: Analysis) -> Section:
    if not a.loaded.has_dollars:
        return Section("Dollars", ["The input carries no dollar figures."])
    rows = [
        [
            pool_label(p),
            p.spec.condition,
            fmt_money(p.expected_dollars_per_run),
            fmt_ci(*p.bootstrap["expected_dollars_per_run"].percentile, digits=2)
            if "expected_dollars_per_run" in p.bootstrap
            else "–",
        ]
        for p in a.pools
    ]
    blocks: list[Block] = [
        "Expected loss per run = priced damage / valid runs (interval: cluster bootstrap over tasks). "
        "Loss given damage is over runs that damaged (within a class: runs with an event of the class).",
        Table(["pool", "condition", "expected $/run", "interval"], rows),
    ]
    dc = a.dollar_classes
    if len(dc):
        label = {p.spec.model: pool_label(p) for p in a.pools}
        for dim in ("severity", "irreversibility"):
            part = dc[dc["dimension"] == dim].rename(columns={"class": "cls"})
            blocks.append(
                Table(
                    [
                        "pool",
                        "condition",
                        dim,
                        "events",
                        "runs hit",
                        "total $",
                        "$/run [CI]",
                        "LGD mean",
                        "LGD max",
                        "LGD p50",
                        "LGD p90",
                    ],
                    [
                        [
                            label.get(r.pool, r.pool),
                            r.condition,
                            r.cls,
                            str(r.events),
                            str(r.runs_hit),
                            fmt_money(r.dollars_total),
                            f"{fmt_money(r.expected_dollars_per_run)} {fmt_ci(r.ci_low, r.ci_high, 2)}",
                            fmt_money(r.lgd_mean),
                            fmt_money(r.lgd_max),
                            fmt_money(r.lgd_p50),
                            fmt_money(r.lgd_p90),
                        ]
                        for r in part.itertuples(index=False)
                    ],
                )
            )
    return Section("Dollars", blocks)


def build_document(a: Analysis, figures: dict[str, str]) -> Document:
    """The report for an Analysis; ``figures`` maps figure name to its file name beside the report."""
    captions = {
        "cell_rates": "Damage rate per cell with exact 95% intervals",
        "detection": "Probability of seeing damage at least once in k runs",
        "dollars": "Expected dollars lost per run",
    }
    fig = Section("Figures", [Image(path, captions.get(name, name)) for name, path in figures.items()])
    sections = [_overview(a), _pools(a), _repeats(a), _cells(a), _dollars(a)]
    return Document("AgentRel damage analysis", [*sections, fig] if figures else sections)
