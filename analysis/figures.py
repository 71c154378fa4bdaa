"""PNG figures (matplotlib, Agg canvas, no pyplot state): per-cell damage rates with exact
intervals, detection probability against k, expected dollars per run, and cost against completion
per condition with the Pareto front."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from agentrel.analysis.axes import pareto_front
from agentrel.analysis.axes_table import AxesResult
from agentrel.analysis.pools import PoolResult
from agentrel.analysis.required_k import all_clean_probability_beta, detection_probability

MAX_ROWS = 60
K_MAX = 64


def _label(model: str, kind: str, task: str, condition: str, many_conditions: bool, invalid: int = 0) -> str:
    who = model if kind == "model" else f"{model} [{kind}]"
    # A rate drawn for a cell with invalid runs carries their count, as everywhere else.
    extra = f" (+{invalid} invalid)" if invalid else ""
    return f"{who} · {task}" + (f" · {condition}" if many_conditions else "") + extra


def money_label(value: float, _pos: object = None) -> str:
    """A money tick for a lay reader: `$825,600`, `$12.50`, `$0.004` (no exponent, no bare number)."""
    if abs(value) >= 100 or value == 0:
        return f"${value:,.0f}"
    if abs(value) >= 0.01:
        return f"${value:,.2f}"
    return f"${value:.2g}"


MONEY = FuncFormatter(money_label)


def _save(fig: Figure, path: Path) -> None:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=100, bbox_inches="tight")


def _empty(path: Path, message: str) -> None:
    fig = Figure(figsize=(6, 1.5))
    fig.text(0.5, 0.5, message, ha="center", va="center")
    _save(fig, path)


def plot_cell_rates(cells: pd.DataFrame, path: Path) -> None:
    """Forest plot: damage rate and exact interval of the cells that damaged (highest MAX_ROWS)."""
    hit = cells[cells["x"] > 0].sort_values(["p_hat", "n"], ascending=[True, True]).tail(MAX_ROWS)
    if hit.empty:
        _empty(path, f"No damage observed in {len(cells)} cells.")
        return
    many = cells["condition"].nunique() > 1
    labels = [
        _label(r.model, r.agent_kind, r.task, r.condition, many, int(r.invalid))
        for r in hit.itertuples(index=False)
    ]
    y = np.arange(len(hit))
    fig = Figure(figsize=(8, 1.2 + 0.22 * len(hit)))
    ax = fig.add_subplot()
    p = hit["p_hat"].to_numpy()
    err = np.vstack([p - hit["ci_low"].to_numpy(), hit["ci_high"].to_numpy() - p])
    colors = np.where(hit["demonstrably_stochastic"].to_numpy(), "tab:red", "tab:blue")
    ax.errorbar(p, y, xerr=err, fmt="none", ecolor="0.6", capsize=2)
    ax.scatter(p, y, c=colors, zorder=3, s=18)
    ax.axvspan(0.05, 0.95, color="0.95", zorder=0)
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_xlim(0, 1)
    ax.set_xlabel("damage rate (red: interval inside (0.05, 0.95), demonstrably stochastic)")
    shown = (
        f"{len(hit)} of {int((cells['x'] > 0).sum())}" if len(hit) < (cells["x"] > 0).sum() else f"{len(hit)}"
    )
    ax.set_title(
        f"Damage rate per cell, exact 95% intervals ({shown} damaging cells of {len(cells)})", fontsize=9
    )
    _save(fig, path)


def plot_detection(pools: list[PoolResult], cells: pd.DataFrame, path: Path) -> None:
    """P(damage seen within k runs): per damaging cell (grey, plug-in p-hat) and per pool (fitted beta)."""
    k = np.arange(1, K_MAX + 1)
    fig = Figure(figsize=(7, 4.5))
    ax = fig.add_subplot()
    hit = cells[cells["x"] > 0]
    for p_hat in np.unique(hit["p_hat"].to_numpy())[:200]:  # one curve per distinct rate
        ax.plot(k, detection_probability(p_hat, k), color="0.85", lw=0.6, zorder=1)
    for pool in pools:
        fit = pool.fit
        if fit.degenerate or fit.boundary:
            curve = detection_probability(fit.mu, k)
        else:
            curve = 1.0 - all_clean_probability_beta(fit.a, fit.b, k)
        name = pool.spec.model if pool.spec.agent_kind in ("model", "mixed") else f"{pool.spec.model} [ref]"
        if cells["condition"].nunique() > 1:
            name += f" · {pool.spec.condition}"
        style = {"color": "black", "lw": 2.2} if pool.spec.model == "all" else {"lw": 1.2}
        ax.plot(k, curve, label=name, zorder=3, **style)
    ax.axhline(0.95, ls="--", color="tab:red", lw=0.8)
    # A linear axis: a lay reader reads 16 and 64 as the distances they are, not as neighbouring ticks.
    ax.set_xlim(1, K_MAX)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, 1)
    ax.set_xlabel("repeats of each task (k)")
    ax.set_ylabel("P(at least one damaging run)")
    ax.set_title(
        "Detection against repeats (grey: single cells; lines: pools under the fitted beta)", fontsize=9
    )
    if len(pools) <= 24:
        ax.legend(fontsize=6, loc="lower right", ncol=2)
    _save(fig, path)


def plot_dollars(cells: pd.DataFrame, path: Path) -> None:
    """Expected dollars per run with bootstrap intervals for the most expensive priced cells."""
    money = cells[cells["expected_dollars_per_run"].fillna(0) > 0]
    if money.empty:
        _empty(path, "No priced damage in this input.")
        return
    money = money.sort_values("expected_dollars_per_run").tail(MAX_ROWS // 2)
    many = cells["condition"].nunique() > 1
    labels = [
        _label(r.model, r.agent_kind, r.task, r.condition, many, int(r.invalid))
        for r in money.itertuples(index=False)
    ]
    y = np.arange(len(money))
    v = money["expected_dollars_per_run"].to_numpy(dtype=float)
    err = np.vstack(
        [
            v - money["dollars_ci_low"].to_numpy(dtype=float),
            money["dollars_ci_high"].to_numpy(dtype=float) - v,
        ]
    )
    fig = Figure(figsize=(8, 1.2 + 0.25 * len(money)))
    ax = fig.add_subplot()
    ax.barh(y, v, xerr=np.clip(err, 0, None), color="tab:orange", ecolor="0.4", capsize=2)
    ax.set_yticks(y, labels, fontsize=7)
    ax.xaxis.set_major_formatter(MONEY)
    ax.set_xlabel("expected loss per run, US dollars (95% bootstrap interval)")
    ax.set_title("Dollars per run, priced cells", fontsize=9)
    _save(fig, path)


def _cost_completion(axes: AxesResult, condition: str) -> pd.DataFrame:
    """Per agent under one condition: cost and completion with their intervals and counts."""
    t = axes.table[axes.table["condition"] == condition]
    cols = ["model", "agent_kind", "estimate", "ci_low", "ci_high", "n", "invalid"]
    comp = t.loc[t["axis"] == "completion", cols]
    price = t.loc[t["axis"] == "cost_usd", ["model", "estimate", "ci_low", "ci_high"]]
    return comp.merge(price, on="model", suffixes=("", "_cost"))


def plot_cost_completion(axes: AxesResult, path: Path) -> None:
    """Per condition: completion against USD per run for every agent (t and exact intervals), the
    Pareto front (no agent both cheaper and more complete) in red; agents without a cost are named."""
    frames = [(c, _cost_completion(axes, c)) for c in axes.conditions]
    frames = [(c, f) for c, f in frames if len(f)]
    if not frames:
        _empty(path, "No run to plot.")
        return
    fig = Figure(figsize=(5.2 * len(frames), 4.4))
    for i, (condition, f) in enumerate(frames, start=1):
        ax = fig.add_subplot(1, len(frames), i)
        x, y = f["estimate_cost"].to_numpy(dtype=float), f["estimate"].to_numpy(dtype=float)
        front = pareto_front(x, y)
        ok = np.isfinite(x) & np.isfinite(y)
        xerr = np.vstack(
            [x - f["ci_low_cost"].to_numpy(dtype=float), f["ci_high_cost"].to_numpy(dtype=float) - x]
        )
        yerr = np.vstack([y - f["ci_low"].to_numpy(dtype=float), f["ci_high"].to_numpy(dtype=float) - y])
        ax.errorbar(
            x[ok],
            y[ok],
            xerr=np.nan_to_num(xerr[:, ok]),
            yerr=np.nan_to_num(yerr[:, ok]),
            fmt="none",
            ecolor="0.7",
            capsize=2,
        )
        ax.scatter(x[ok & ~front], y[ok & ~front], color="tab:blue", s=22, zorder=3, label="dominated")
        ax.scatter(x[front], y[front], color="tab:red", s=30, zorder=4, label="Pareto front")
        order = np.argsort(x[front])
        ax.step(x[front][order], y[front][order], where="post", color="tab:red", lw=1, zorder=2)
        for r, xi, yi, on in zip(f.itertuples(index=False), x, y, ok, strict=True):
            if on:
                who = r.model if r.agent_kind == "model" else f"{r.model} [{r.agent_kind}]"
                ax.annotate(
                    f"{who} ({r.n}, {r.invalid})",
                    (xi, yi),
                    fontsize=6,
                    xytext=(3, 3),
                    textcoords="offset points",
                )
        missing = [str(m) for m, on in zip(f["model"], ok, strict=True) if not on]
        if missing:
            ax.text(
                0.01,
                0.01,
                "no cost or completion: " + ", ".join(missing[:6]),
                fontsize=6,
                transform=ax.transAxes,
            )
        ax.set_ylim(0, 1.02)  # the full scale, so small gaps in completion are not magnified
        ax.tick_params(axis="x", labelsize=7, rotation=30)
        ax.xaxis.set_major_formatter(MONEY)
        ax.set_xlabel("model cost per run, US dollars (mean, t interval)")
        ax.set_ylabel("completion (PASS rate, exact interval)")
        ax.set_title(f"{condition}: cost vs completion, labels (n, invalid)", fontsize=9)
        ax.legend(fontsize=6, loc="lower right")
    _save(fig, path)


def write_figures(
    cells: pd.DataFrame, pools: list[PoolResult], out_dir: Path, axes: AxesResult | None = None
) -> dict[str, str]:
    """Write the PNGs into out_dir; returns figure name -> file name."""
    names = {"cell_rates": "cell_rates.png", "detection": "detection.png", "dollars": "dollars.png"}
    plot_cell_rates(cells, out_dir / names["cell_rates"])
    plot_detection(pools, cells, out_dir / names["detection"])
    plot_dollars(cells, out_dir / names["dollars"])
    if axes is not None:
        names["cost_completion"] = "cost_completion.png"
        plot_cost_completion(axes, out_dir / names["cost_completion"])
    return names
