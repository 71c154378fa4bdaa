"""The six operational axes of every (agent, condition) as one long table: one row per axis and group,
AXIS_COLUMNS. Computing only (rendering is in report_axes, figures and summary).

Which axes a condition gets: completion, cost, efficiency, reliability and pass^k consistency always;
recovery when the condition is not the baseline ("clean"), some valid run of it carries a ``fault``
event and the baseline has runs; safety when some valid run of it records ``exposure``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from agentrel.analysis.axes import (
    GROUP,
    VALUE_COLUMNS,
    Groups,
    completion,
    consistency,
    cost,
    efficiency,
    group_positions,
    reliability,
)
from agentrel.analysis.axes_stress import BASELINE, recovery, safety
from agentrel.analysis.normalized import LoadedInput


@dataclass(frozen=True)
class AxisSpec:
    key: str
    group: str  # the operational axis it belongs to
    label: str
    ci_method: str
    unit: str  # rate | usd | score | steps


AXES: tuple[AxisSpec, ...] = (
    AxisSpec("completion", "completion", "completion (PASS rate)", "Clopper–Pearson", "rate"),
    AxisSpec("cost_usd", "cost", "cost (USD per run)", "Student t", "usd"),
    AxisSpec("efficiency", "efficiency", "efficiency (PASS runs)", "bootstrap percentile (runs)", "score"),
    AxisSpec("reliability", "reliability", "reliability (no agent error)", "Wilson", "rate"),
    AxisSpec("pass_hat_k", "reliability", "consistency pass^k", "bootstrap percentile (tasks)", "rate"),
    AxisSpec("completion_kept", "recovery", "recovery: completion kept", "Clopper–Pearson", "rate"),
    AxisSpec("extra_steps", "recovery", "recovery: extra steps", "Student t (paired)", "steps"),
    AxisSpec("extra_damage", "recovery", "recovery: extra damage", "Clopper–Pearson", "rate"),
    AxisSpec("resisted", "safety", "safety: resisted (exposed runs)", "Clopper–Pearson", "rate"),
    AxisSpec("damage_under_attack", "safety", "safety: damage rate under attack", "Clopper–Pearson", "rate"),
    AxisSpec("canary_echo", "safety", "safety: canary echoed (exposed runs)", "Clopper–Pearson", "rate"),
)
AXIS_BY_KEY = {a.key: a for a in AXES}
AXIS_COLUMNS = (
    "model",
    "agent_kind",
    "condition",
    "axis",
    "axis_group",
    "estimate",
    "ci_low",
    "ci_high",
    "n",
    "invalid",
    "unknown",
    "k",
    "not_exposed",
    "baseline",
    "ci_method",
)


@dataclass
class AxesResult:
    table: pd.DataFrame  # AXIS_COLUMNS, conditions in declared order, axes in AXES order
    conditions: list[str]
    notes: list[str] = field(default_factory=list)


def condition_order(loaded: LoadedInput) -> list[str]:
    """Declared conditions (manifest order) that have runs, then any others, sorted."""
    present = set(loaded.runs["condition"].unique()) | set(loaded.invalid["condition"].unique())
    declared = [c for c in loaded.conditions if c in present]
    return declared + sorted(present - set(declared))


def _groups(loaded: LoadedInput, order: list[str]) -> pd.MultiIndex:
    keys = pd.concat([loaded.runs[GROUP], loaded.invalid[GROUP]]).drop_duplicates()
    keys = keys.assign(_c=keys["condition"].map({c: i for i, c in enumerate(order)}))
    keys = keys.sort_values(["_c", "model"]).drop(columns="_c")
    return pd.MultiIndex.from_frame(keys.astype(str))


def invalid_per_group(invalid: pd.DataFrame, groups: pd.MultiIndex) -> NDArray[np.int64]:
    pos = group_positions(invalid, groups) if len(invalid) else np.zeros(0, dtype=np.int64)
    return np.bincount(pos[pos >= 0], minlength=len(groups)).astype(np.int64)


def _stack(axis: str, part: pd.DataFrame, kinds: dict[str, str], baseline: str | None) -> pd.DataFrame:
    spec = AXIS_BY_KEY[axis]
    out = part.reset_index()
    out["agent_kind"] = out["model"].map(kinds).fillna("model")
    out["axis"], out["axis_group"], out["ci_method"] = axis, spec.group, spec.ci_method
    out["baseline"] = baseline
    for col in ("k", "not_exposed"):
        if col not in out:
            out[col] = pd.NA
    return out


def operational_axes(
    loaded: LoadedInput, *, alpha: float = 0.05, n_boot: int = 2000, seed: int = 0
) -> AxesResult:
    """Every axis for every (agent, condition) of a loaded input (see the module docstring)."""
    runs, invalid = loaded.runs, loaded.invalid
    order = condition_order(loaded)
    index = _groups(loaded, order)
    g = Groups.of(runs, index, invalid_per_group(invalid, index))  # positions computed once
    kinds = loaded.agents
    parts: list[pd.DataFrame] = [
        _stack("completion", completion(runs, g, alpha), kinds, None),
        _stack("cost_usd", cost(runs, g, alpha), kinds, None),
        _stack("efficiency", efficiency(runs, g, loaded.optimal_steps, n_boot, seed, alpha), kinds, None),
        _stack("reliability", reliability(runs, g, alpha), kinds, None),
        _stack("pass_hat_k", consistency(runs, g, n_boot, seed, alpha), kinds, None),
    ]
    notes = reported_cost_notes(runs)
    if not loaded.optimal_steps:
        notes.append("no task declares optimal_steps (manifest.json), so efficiency is n/a")
    conds = index.get_level_values("condition")
    faulted = set(runs.loc[runs["fault"].to_numpy(), "condition"].unique()) - {BASELINE}
    if faulted and not (runs["condition"] == BASELINE).any():
        notes.append(
            f"conditions {', '.join(sorted(faulted))} inject faults but no valid {BASELINE} run exists"
        )
        faulted = set()
    if faulted:
        for axis, part in recovery(runs, invalid, index[conds.isin(faulted)], BASELINE, alpha).items():
            parts.append(_stack(axis, part, kinds, BASELINE))
    attacked = set(runs.loc[runs["exposure"].notna().to_numpy(), "condition"].unique())
    if attacked:
        mask = np.asarray(conds.isin(attacked))
        rows = np.asarray(runs["condition"].isin(attacked).to_numpy())
        sub = index[mask]
        # The attacked conditions' runs with their positions among the attacked groups only.
        part_g = Groups(sub, group_positions(runs[rows], sub), g.invalid[mask])
        for axis, part in safety(runs[rows], part_g, alpha).items():
            parts.append(_stack(axis, part, kinds, None))
    table = pd.concat(parts, ignore_index=True)
    rank_c = table["condition"].map({c: i for i, c in enumerate(order)})
    rank_a = table["axis"].map({a.key: i for i, a in enumerate(AXES)})
    table = table.assign(_c=rank_c, _a=rank_a).sort_values(["_c", "_a", "model"], kind="stable")
    table = table.loc[:, list(AXIS_COLUMNS)].reset_index(drop=True)
    for col in ("n", "invalid", "unknown", "k", "not_exposed"):
        table[col] = table[col].astype("Int64")
    for col in ("estimate", "ci_low", "ci_high"):
        table[col] = table[col].astype(float)
    return AxesResult(table, order, notes)


def reported_cost_notes(runs: pd.DataFrame) -> list[str]:
    """One note per (agent, condition) whose cost axis holds costs only the agent program reported (its
    usage file, not measured by AgentRel's model proxy): said beside the axis wherever it is shown."""
    reported = runs[(runs["cost_source"] == "reported").to_numpy()]
    if reported.empty:
        return []
    counts = reported.groupby(["model", "condition"], sort=True).size()
    total = runs.groupby(["model", "condition"]).size()
    return [
        f"cost of {model} under {condition} is reported, not measured: {n} of {total[(model, condition)]}"
        " valid runs priced from the agent program's own usage file (audit it with --agent-model)"
        for (model, condition), n in counts.items()
    ]


__all__ = [
    "AXES",
    "AXIS_COLUMNS",
    "VALUE_COLUMNS",
    "AxesResult",
    "AxisSpec",
    "operational_axes",
    "reported_cost_notes",
]
