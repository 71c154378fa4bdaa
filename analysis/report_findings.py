"""The report's first section: what the audit found, one row per agent and condition, read in ten
seconds. Damage rate with its interval, the chance one run of a damaging cell shows no damage, the
repeats needed to see the rarest damaging cell's damage, and the expected loss per run.

Nothing here estimates anything: each number is a pool's (analysis.pools) or the audit plan's
(analysis.audit_plan), the same values summary.json writes, only chosen and formatted.
"""

from __future__ import annotations

import math

import pandas as pd

from agentrel.analysis.doc import Block, Section, Table, fmt, fmt_ci, fmt_k, fmt_money, pool_label
from agentrel.analysis.pipeline import Analysis
from agentrel.analysis.plain import percent
from agentrel.analysis.pools import PoolResult


def shown_pools(a: Analysis) -> list[PoolResult]:
    """Every agent's pool, then, per condition, the "all" pool where it pools more than one agent
    (else it repeats that one)."""
    shown = [p for p in a.pools if p.spec.model != "all" or len(p.spec.agents) > 1]
    return sorted(shown, key=lambda p: (p.spec.condition, p.spec.model == "all"))


def rarest_damaging_cell(a: Analysis, p: PoolResult) -> pd.Series | None:
    """The pool's damaging cell that needs the most repeats (the lowest damage rate), from the plan."""
    plan = a.plan
    mine = plan[(plan["condition"] == p.spec.condition) & plan["model"].isin(p.spec.agents) & (plan["x"] > 0)]
    if mine.empty:
        return None
    row: pd.Series = mine.loc[mine["k_point"].astype("float64").idxmax()]
    return row


def _interval(p: PoolResult) -> str:
    """The damage rate's interval: the cluster bootstrap's, floored at the exact Clopper–Pearson one for
    the same counts (pools.PoolResult.damage_rate_ci), so one or two tasks never read as certainty."""
    return f" {fmt_ci(*p.damage_rate_ci)}" if p.damage_rate_ci else ""


def _required(a: Analysis, p: PoolResult) -> str:
    cell = rarest_damaging_cell(a, p)
    if cell is None:
        return "– (no damage seen)"
    where = cell["task"] if p.spec.model != "all" else f"{cell['model']} · {cell['task']}"
    return f"{fmt_k(cell['k_point'])} ({where})"


def _loss(p: PoolResult, has_dollars: bool) -> str:
    if not has_dollars or p.expected_dollars_per_run is None:
        return "–"
    b = p.bootstrap.get("expected_dollars_per_run")
    interval = f" [{fmt_money(b.percentile[0])}, {fmt_money(b.percentile[1])}]" if b else ""
    return fmt_money(p.expected_dollars_per_run) + interval


def _invalid(p: PoolResult) -> str:
    if not p.invalid:
        return "0"
    return f"{p.invalid}: rate over all runs in {fmt_ci(*p.damage_rate_bounds)}"


def _rate(a: Analysis, p: PoolResult) -> str:
    """The damage rate with its interval; with no damage seen, the exact one-sided bound in words
    (a `0.000 [0.000, 0.000]` would read as proof of zero)."""
    if p.damaged_runs == 0 and p.runs > 0:
        upper = 1.0 - a.alpha ** (1.0 / p.runs)  # Clopper–Pearson one-sided upper bound at x = 0
        return f"none in {p.runs:,} runs: below {percent(upper, 'up')} at {1 - a.alpha:.0%} (exact one-sided)"
    return fmt(p.stats["damage_rate"]) + _interval(p)


def planning_note(a: Analysis, pools: list[PoolResult]) -> str | None:
    """One repeat count to budget, with its assumption, and what the report's other counts are."""
    level = f"{1 - a.alpha:.0%}"
    best: tuple[int, str, PoolResult, pd.Series] | None = None
    for p in pools:
        cell = rarest_damaging_cell(a, p)
        if cell is None or pd.isna(cell["k_point"]):
            continue
        k = int(cell["k_point"])
        if best is None or k > best[0]:
            best = (k, str(cell["task"]), p, cell)
    if best is None:
        return None
    k, task, p, cell = best
    return (
        f"**Repeats to plan for: {k:,} runs of each task.** Assumption: the rarest damage seen "
        f"({pool_label(p)} on {task}, {int(cell['x'])} of {int(cell['n'])} runs) happens at its observed "
        f"rate; {k:,} runs then show it with probability {level}. The other repeat counts in this report "
        f"are labelled as what they are: the cell table's conservative k assumes each rate is only its "
        f"one-sided lower bound (budget that when the rates are uncertain); the 'Repeats and detection' "
        f"k is for a randomly drawn cell under the beta distribution fitted across cells."
    )


def finding_row(a: Analysis, p: PoolResult) -> list[str]:
    return [
        pool_label(p),
        p.spec.condition,
        _rate(a, p),
        f"{p.damaged_runs}/{p.runs}",
        _invalid(p),
        fmt(p.stats["miss_rate_pair"]),
        _required(a, p),
        _loss(p, a.loaded.has_dollars),
    ]


def _lead(a: Analysis, pools: list[PoolResult]) -> list[Block]:
    invalid = len(a.loaded.invalid)
    blocks: list[Block] = []
    worst = [p for p in pools if p.spec.model != "all" and math.isfinite(p.stats["damage_rate"])]
    # Reference and scripted agents calibrate the harness: the lead names a model where there is one.
    worst = [p for p in worst if p.spec.agent_kind == "model"] or worst
    if worst and not any(p.damaged_runs for p in worst):
        who = "model" if worst[0].spec.agent_kind == "model" else "agent"
        blocks.append(f"No {who} damaged in any of its valid runs ({sum(p.runs for p in worst)} in all).")
    elif worst:
        top = max(worst, key=lambda p: (p.stats["damage_rate"], p.spec.model))
        line = (
            f"Highest damage rate: {pool_label(top)} under `{top.spec.condition}`, "
            f"{top.damaged_runs} of {top.runs} valid runs ({fmt(top.stats['damage_rate'])})"
        )
        priced = [p for p in worst if (p.expected_dollars_per_run or 0.0) > 0]
        if a.loaded.has_dollars and priced:
            dear = max(priced, key=lambda p: (p.expected_dollars_per_run or 0.0, p.spec.model))
            line += (
                f"; highest expected loss: {pool_label(dear)} under `{dear.spec.condition}`, "
                f"{fmt_money(dear.expected_dollars_per_run)} per run"
            )
        blocks.append(line + ".")
    if a.loaded.unpriced and a.loaded.unpriced[0]:
        n, severe = a.loaded.unpriced
        blocks.append(
            f"{n:,} damage event(s) have no price (their rule names none), {severe:,} of them high or "
            "critical severity: the dollar figures count them as $0, so the expected loss is a lower bound "
            "(`agentrel export damages` marks them `unpriced`)."
        )
    blocks.append(
        f"{invalid} invalid run(s) (the harness or the provider broke them) enter no rate: each is counted "
        "in its row, with the range the damage rate would lie in had it been safe or damaging."
        if invalid
        else "Every run is valid."
    )
    return blocks


def pool_gaps(a: Analysis) -> list[Block]:
    """Agents with no valid run under a condition: no pool can be formed, so say so."""
    c = a.cells
    agg = c.groupby(["model", "condition"]).agg(n=("n", "sum"), invalid=("invalid", "sum"))
    empty = agg[agg["n"] == 0]
    if empty.empty:
        return []
    shown = "; ".join(f"{m} under {cond} ({int(r['invalid'])} invalid)" for (m, cond), r in empty.iterrows())
    return [f"No valid run, so no pool and no rate: {shown}."]


def findings_section(a: Analysis) -> Section:
    level = f"{1 - a.alpha:.0%}"
    pools = shown_pools(a)
    heads = [
        "agent",
        "condition",
        f"damage rate [{level} CI]",
        "damaged / valid runs",
        "invalid",
        "single-run miss rate",
        f"repeats to see the rarest damage at {level} (its cell)",
        "expected loss per run",
    ]
    legend = (
        "Damage rate: damaging runs / valid runs (interval: cluster bootstrap over tasks, never narrower "
        "than the exact Clopper–Pearson interval of the same counts). Single-run miss "
        "rate: the chance that one run of a cell that can damage shows no damage, averaged over such cells: "
        "how little one clean audit run proves. Required k: the repeats after which the agent's "
        f"hardest-to-see damaging cell (lowest observed rate) has shown its damage with probability {level}. "
        "Expected loss: priced damage / valid runs. Per-cell numbers and methods are in the sections below."
    )
    rows = [finding_row(a, p) for p in pools]
    plan = planning_note(a, pools)
    return Section(
        "Findings", [*_lead(a, pools), Table(heads, rows), *([plan] if plan else []), legend, *pool_gaps(a)]
    )
