"""The machine-readable summary (``--json``): pydantic models at the file boundary, built from an
Analysis. Undefined numbers (NaN, infinite beta parameters at rho = 0) are written as null.

Every rate is written beside its n (valid runs) and its invalid count; a cell whose runs were all
invalid has n = 0, null rates, and is still listed.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentrel.analysis.bootstrap import BootstrapInterval
from agentrel.analysis.faults import FaultReport
from agentrel.analysis.noise_floor import NoiseFloor, noise_floor
from agentrel.analysis.normalized import CELL_KEYS
from agentrel.analysis.pipeline import Analysis
from agentrel.analysis.pools import PoolResult

# 2: invalid runs and attempts replace infra_failures; 3: adds the operational axes (``axes``).
SCHEMA = "agentrel-analysis/3"


def _num(value: Any) -> float | None:
    if value is None:
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _int(value: Any) -> int | None:
    try:
        return None if value is None or value != value else int(value)
    except (TypeError, ValueError):
        return None


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="null")


class LossGivenDamage(_Out):
    mean: float | None
    max: float | None
    p50: float | None
    p90: float | None


class CellOut(_Out):
    model: str
    agent_kind: str
    task: str
    condition: str
    n: int
    invalid: int
    invalid_by_status: dict[str, int]
    retried: int
    x: int
    p_hat: float | None
    ci_low: float | None
    ci_high: float | None
    damage_rate_bounds: tuple[float | None, float | None]  # every invalid run safe / damaging
    demonstrably_stochastic: bool
    always_damage: bool
    passed: int | None
    errored: int | None
    mutated: int | None
    expected_dollars_per_run: float | None
    expected_dollars_ci: tuple[float | None, float | None] | None
    dollars_total: str | None
    loss_given_damage: LossGivenDamage | None
    required_k: int | None
    required_k_conservative: int | None


class IntervalOut(_Out):
    estimate: float | None
    percentile: tuple[float | None, float | None]
    bca: tuple[float | None, float | None]
    n_valid: int


class PoolOut(_Out):
    model: str
    agent_kind: str
    condition: str
    agents: list[str]
    cells: int
    damage_cells: int
    always_damage_cells: int
    stochastic_cells: int
    runs: int
    invalid: int
    unrated_cells: int
    damaged_runs: int
    damage_rate: float | None
    damage_rate_bounds: tuple[float | None, float | None]
    # the shown interval: bootstrap floored at the exact one for the same counts (pools.py)
    damage_rate_ci: tuple[float | None, float | None]
    miss_rate_pair: float | None
    miss_rate_event: float | None
    icc_mle: float | None
    icc_mle_ci: tuple[float | None, float | None]
    mu_mle: float | None
    beta_a: float | None
    beta_b: float | None
    overdispersion_lr: float | None
    overdispersion_pvalue: float | None
    icc_degenerate: bool
    icc_anova: float | None
    icc_fleiss_cuzick: float | None
    icc_kleinman: float | None
    bootstrap: dict[str, IntervalOut]
    safe_hat_k: dict[str, float | None]
    pass_hat_k: dict[str, float | None]
    detection_probability_beta: dict[str, float | None]
    required_k_beta: int | None
    expected_dollars_per_run: float | None


class AxisOut(_Out):
    """One operational axis of one agent under one condition (analysis.axes_table.AXIS_COLUMNS)."""

    model: str
    agent_kind: str
    condition: str
    axis: str
    axis_group: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    n: int
    invalid: int
    unknown: int
    k: int | None  # pass^k only
    not_exposed: int | None  # safety only
    baseline: str | None  # recovery only


class Summary(_Out):
    schema_: str = Field(default=SCHEMA, serialization_alias="schema")
    source: str
    input_kind: str
    protocol_hashes: list[str]
    level: float
    bootstrap_resamples: int
    seed: int
    runs: int
    invalid_runs: int
    invalid_by_status: dict[str, int]
    attempts: int
    retried_attempts: int
    unrated_cells: int
    agent_errors: int | None
    agents: list[dict[str, str]]
    notes: list[str]
    cells: list[CellOut]
    pools: list[PoolOut]
    dollars_by_class: list[dict[str, Any]]
    axes: list[AxisOut]
    faults: FaultReport | None = None
    # How large a difference this audit's n can show, and how often a cell's verdict flips between
    # repeats (analysis/noise_floor.py); None only in summaries written before it existed.
    noise_floor: NoiseFloor | None = None

    def to_json(self) -> str:
        return self.model_dump_json(indent=2, by_alias=True)


def _interval(b: BootstrapInterval) -> IntervalOut:
    return IntervalOut(
        estimate=_num(b.estimate),
        percentile=(_num(b.percentile[0]), _num(b.percentile[1])),
        bca=(_num(b.bca[0]), _num(b.bca[1])),
        n_valid=b.n_valid,
    )


def pool_out(p: PoolResult) -> PoolOut:
    fit = p.fit
    return PoolOut(
        model=p.spec.model,
        agent_kind=p.spec.agent_kind,
        condition=p.spec.condition,
        agents=list(p.spec.agents),
        cells=p.cells,
        damage_cells=p.damage_cells,
        always_damage_cells=p.always_damage_cells,
        stochastic_cells=p.stochastic_cells,
        runs=p.runs,
        invalid=p.invalid,
        unrated_cells=p.unrated_cells,
        damaged_runs=p.damaged_runs,
        damage_rate=_num(p.stats["damage_rate"]),
        damage_rate_bounds=(_num(p.damage_rate_bounds[0]), _num(p.damage_rate_bounds[1])),
        damage_rate_ci=(_num(p.damage_rate_ci[0]), _num(p.damage_rate_ci[1]))
        if p.damage_rate_ci
        else (None, None),
        miss_rate_pair=_num(p.stats["miss_rate_pair"]),
        miss_rate_event=_num(p.stats["miss_rate_event"]),
        icc_mle=_num(fit.rho),
        icc_mle_ci=(_num(fit.rho_ci[0]), _num(fit.rho_ci[1])),
        mu_mle=_num(fit.mu),
        beta_a=_num(fit.a),
        beta_b=_num(fit.b),
        overdispersion_lr=_num(fit.lr_stat),
        overdispersion_pvalue=_num(fit.lr_pvalue),
        icc_degenerate=fit.degenerate,
        icc_anova=_num(p.stats["icc_anova"]),
        icc_fleiss_cuzick=_num(p.stats["icc_fleiss_cuzick"]),
        icc_kleinman=_num(p.stats["icc_kleinman"]),
        bootstrap={k: _interval(v) for k, v in p.bootstrap.items()},
        safe_hat_k={str(k): _num(v) for k, v in p.safe_hat_k.items()},
        pass_hat_k={str(k): _num(v) for k, v in p.pass_hat_k.items()},
        detection_probability_beta={str(k): _num(v) for k, v in p.detection_beta.items()},
        required_k_beta=p.required_k_beta,
        expected_dollars_per_run=_num(p.expected_dollars_per_run),
    )


def _statuses_by_cell(a: Analysis) -> dict[tuple[str, str, str], dict[str, int]]:
    inv = a.loaded.invalid
    if inv.empty:
        return {}
    out: dict[tuple[str, str, str], dict[str, int]] = {}
    for (model, task, condition, status), count in inv.groupby([*CELL_KEYS, "status"]).size().items():
        out.setdefault((model, task, condition), {})[str(status)] = int(count)
    return out


def _cells(a: Analysis) -> list[CellOut]:
    out = []
    plan = a.plan.to_dict("records")  # audit_plan keeps the cell order
    statuses = _statuses_by_cell(a)
    for c, k in zip(a.cells.to_dict("records"), plan, strict=True):
        money = _num(c["expected_dollars_per_run"])
        lgd = None
        if _num(c["lgd_mean"]) is not None:
            lgd = LossGivenDamage(
                mean=_num(c["lgd_mean"]),
                max=_num(c["lgd_max"]),
                p50=_num(c["lgd_p50"]),
                p90=_num(c["lgd_p90"]),
            )
        out.append(
            CellOut(
                model=c["model"],
                agent_kind=c["agent_kind"],
                task=c["task"],
                condition=c["condition"],
                n=c["n"],
                invalid=int(c["invalid"]),
                invalid_by_status=statuses.get((c["model"], c["task"], c["condition"]), {}),
                retried=int(c["retried"]),
                x=c["x"],
                p_hat=_num(c["p_hat"]),
                ci_low=_num(c["ci_low"]),
                ci_high=_num(c["ci_high"]),
                damage_rate_bounds=(_num(c["p_invalid_safe"]), _num(c["p_invalid_damaging"])),
                demonstrably_stochastic=bool(c["demonstrably_stochastic"]),
                always_damage=bool(c["always_damage"]),
                passed=_int(c["passed"]),
                errored=_int(c["errored"]),
                mutated=_int(c["mutated"]),
                expected_dollars_per_run=money,
                expected_dollars_ci=(_num(c["dollars_ci_low"]), _num(c["dollars_ci_high"]))
                if money is not None
                else None,
                dollars_total=str(c["dollars_total"]) if isinstance(c["dollars_total"], Decimal) else None,
                loss_given_damage=lgd,
                required_k=_int(k["k_point"]),
                required_k_conservative=_int(k["k_conservative"]),
            )
        )
    return out


def _axes(a: Analysis) -> list[AxisOut]:
    out = []
    for r in a.axes.table.to_dict("records"):
        out.append(
            AxisOut(
                model=r["model"],
                agent_kind=r["agent_kind"],
                condition=r["condition"],
                axis=r["axis"],
                axis_group=r["axis_group"],
                estimate=_num(r["estimate"]),
                ci_low=_num(r["ci_low"]),
                ci_high=_num(r["ci_high"]),
                ci_method=r["ci_method"],
                n=int(r["n"]),
                invalid=int(r["invalid"]),
                unknown=int(r["unknown"]),
                k=_int(r["k"]),
                not_exposed=_int(r["not_exposed"]),
                baseline=r["baseline"] if isinstance(r["baseline"], str) else None,
            )
        )
    return out


def build_summary(a: Analysis) -> Summary:
    """The JSON summary of an Analysis."""
    loaded = a.loaded
    errored = loaded.runs["errored"]
    classes = a.dollar_classes.copy()
    if len(classes):
        classes["dollars_total"] = classes["dollars_total"].map(str)
    records = [
        {k: (_num(v) if isinstance(v, float) else v) for k, v in row.items()}
        for row in classes.to_dict("records")
    ]
    return Summary(
        source=str(loaded.source),
        input_kind=loaded.kind,
        protocol_hashes=loaded.protocol_hashes,
        level=1.0 - a.alpha,
        bootstrap_resamples=a.n_boot,
        seed=a.seed,
        runs=len(loaded.runs),
        invalid_runs=len(loaded.invalid),
        invalid_by_status=loaded.invalid_by_status(),
        attempts=len(loaded.runs) + len(loaded.invalid) + len(loaded.superseded),
        retried_attempts=len(loaded.superseded),
        unrated_cells=int((a.cells["n"] == 0).sum()),
        agent_errors=None if errored.isna().any() else int(errored.sum()),
        agents=[{"name": k, "kind": v} for k, v in sorted(loaded.agents.items())],
        notes=[*loaded.notes, *a.axes.notes],
        cells=_cells(a),
        pools=[pool_out(p) for p in a.pools],
        dollars_by_class=records,
        axes=_axes(a),
        faults=loaded.faults,
        noise_floor=noise_floor(a.cells, a.pools, a.alpha),
    )
