"""What the report says, as plain data (sections of paragraphs, tables and images) built from an
Analysis. render_md and render_html turn the same document into report.md and report.html.

Reference and scripted agents are always labelled as such, never as models.
"""

from __future__ import annotations

from agentrel.analysis.doc import (
    KIND_LABEL,
    Block,
    Document,
    Image,
    Section,
    Table,
    fmt,
    fmt_ci,
    fmt_k,
    fmt_p,
    pool_label,
)
from agentrel.analysis.noise_floor import noise_floor
from agentrel.analysis.normalized import CELL_KEYS, FINAL_TEXT_EVENTS
from agentrel.analysis.pipeline import Analysis
from agentrel.analysis.pools import K_VALUES, PoolResult
from agentrel.analysis.report_axes import axes_section
from agentrel.analysis.report_cells import cells_section, dollars_section
from agentrel.analysis.report_faults import faults_section
from agentrel.analysis.report_findings import findings_section, pool_gaps
from agentrel.analysis.report_noise import attempts_section, noise_section
from agentrel.analysis.report_paired import paired_section


def _boot(p: PoolResult, stat: str) -> str:
    b = p.bootstrap.get(stat)
    return fmt_ci(*b.percentile) if b else "–"


def _statuses(by_status: dict[str, int]) -> str:
    return " (" + ", ".join(f"{k} {v}" for k, v in by_status.items()) + ")" if by_status else ""


def _overview(a: Analysis) -> Section:
    L = a.loaded
    hashes = ", ".join(f"`{h}`" for h in L.protocol_hashes) or "none recorded (outcomes CSV)"
    errored = L.runs["errored"]
    agent_errors = "unknown" if errored.isna().any() else str(int(errored.sum()))
    unrated = int((a.cells["n"] == 0).sum())
    blocks: list[Block] = [
        f"Input: `{L.source}` ({'harness results' if L.kind == 'results' else 'outcomes CSV'}). "
        f"Protocol hash: {hashes}.",
        f"{len(L.runs)} valid and {len(L.invalid)} invalid runs{_statuses(L.invalid_by_status())} in "
        f"{len(a.cells)} cells"
        + (f" ({unrated} of them with no valid run, so no rate)" if unrated else "")
        + ". An invalid run (the harness or the provider broke it) says nothing about the agent: it "
        "stays in its cell, is never counted as safe, enters no rate, and is shown beside every rate. "
        f"Agent errors among the valid runs: {agent_errors}.",
        f"Intervals are at {1 - a.alpha:.0%}; bootstrap: {a.n_boot} cluster resamples over tasks, "
        f"seed {a.seed}.",
    ]
    blocks += [f"Note: {n}." for n in L.notes]
    if (ending := _final_text(a)) is not None:
        blocks.append(ending)
    agents = sorted(L.agents.items(), key=lambda kv: (kv[1] != "model", kv[0]))
    blocks.append(Table(["agent", "kind"], [[name, KIND_LABEL.get(kind, kind)] for name, kind in agents]))
    if len(L.invalid):
        by_cell = L.invalid.groupby([*CELL_KEYS, "status"]).size().unstack("status", fill_value=0).astype(int)
        by_cell = by_cell.assign(_total=by_cell.sum(axis=1)).sort_values("_total", ascending=False)
        statuses = [str(c) for c in by_cell.columns if c != "_total"]
        rows = [
            [str(m), str(t), str(c), str(r["_total"]), *(str(r[s]) for s in statuses)]
            for (m, t, c), r in by_cell.head(20).iterrows()
        ]
        blocks += [
            "Invalid runs by cell (largest 20):",
            Table(["agent", "task", "condition", "invalid", *statuses], rows),
        ]
    return Section("Overview", blocks)


def _final_text(a: Analysis) -> str | None:
    """How many valid runs ended on a tool call written as text or on an echo of a tool error: endings
    that are not answers, which the state alone does not show (those runs are still judged by it)."""
    runs = a.loaded.runs
    if not len(runs) or not all(c in runs for c in FINAL_TEXT_EVENTS):
        return None
    as_text, echoed = (int(runs[c].sum()) for c in FINAL_TEXT_EVENTS)
    if not (as_text or echoed):
        return None
    return (
        f"Final messages that are not answers: {as_text} valid run(s) ended on a tool call written as "
        f"text (event `text_tool_call`) and {echoed} on an echo of a tool error (`echoed_tool_error`), "
        f"of {len(runs)} valid runs. They stay valid and are judged by their state, like any run."
    )


def _invalid_range(p: PoolResult) -> str:
    return fmt_ci(*p.damage_rate_bounds) if p.invalid else ""


def _pools(a: Analysis) -> Section:
    rows = []
    for p in a.pools:
        f = p.fit
        rows.append(
            [
                pool_label(p),
                p.spec.condition,
                str(p.cells) + (f" (+{p.unrated_cells} with no valid run)" if p.unrated_cells else ""),
                str(p.damage_cells),
                str(p.always_damage_cells),
                str(p.stochastic_cells),
                f"{p.damaged_runs}/{p.runs}",
                str(p.invalid),
                f"{fmt(p.stats['damage_rate'])} {fmt_ci(*p.damage_rate_ci) if p.damage_rate_ci else '–'}",
                _invalid_range(p),
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
        "invalid",
        "damage rate [boot CI]",
        "range if invalid safe / damaging",
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
            "between cells (beta-binomial rho); p tests rho = 0 against its boundary-corrected null. "
            "Rates are over valid runs; invalid: the pool's invalid runs, and the range the damage rate "
            "would lie in had every invalid run been safe, or damaging.",
            Table(headers, rows),
            *pool_gaps(a),
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
                str(p.runs),
                str(p.invalid),
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
            Table(["pool", "condition", "n", "invalid", *heads], rows),
        ],
    )


def build_document(a: Analysis, figures: dict[str, str]) -> Document:
    """The report for an Analysis; ``figures`` maps figure name to its file name beside the report.

    Findings first (what a reader acts on), then the figures, then the tables behind them: the
    operational axes (what a reader comparing agents looks for), the input, pools, repeats, cells
    and dollars."""
    captions = {
        "cell_rates": "Damage rate per cell with exact 95% intervals",
        "detection": "Probability of seeing damage at least once in k runs",
        "dollars": "Expected dollars lost per run",
        "cost_completion": "Cost per run against completion, per condition, Pareto front marked",
    }
    fig = Section("Figures", [Image(path, captions.get(name, name)) for name, path in figures.items()])
    paired = paired_section(a)
    tables = [
        axes_section(a.axes, 1.0 - a.alpha, a.n_boot),
        *([paired] if paired is not None else []),
        *([faults_section(a.loaded.faults)] if a.loaded.faults is not None else []),
        _overview(a),
        _pools(a),
        _repeats(a),
        noise_section(noise_floor(a.cells, a.pools, a.alpha)),
        attempts_section(a),
        cells_section(a),
        dollars_section(a),
    ]
    return Document("AgentRel damage analysis", [findings_section(a), *([fig] if figures else []), *tables])
