"""The aggregate annual loss of deploying an agent: frequency x severity, with parameter uncertainty.

**Model.** The agent executes N tasks a year; each execution is of task t with probability s_t (the
mix, default equal shares over the audited tasks), independently. An execution of task t damages
with probability p_t, and a damaging execution costs a severity X_t drawn from the empirical
distribution of task t's priced damaging runs (or, for a task with none priced, of all the agent's
priced damaging runs: stated in ``severity_source``). Given p, the annual loss is

    L = sum_{i=1..N} Y_i,  Y_i = X_t with probability s_t p_t, else 0   (i.i.d. given p)

**Frequency uncertainty.** p_t is not known, only estimated from x_t damaging of n_t valid runs:
- ``posterior``: p_t ~ Beta(x_t + 1/2, n_t - x_t + 1/2), the Jeffreys posterior of each cell,
  independently across tasks;
- ``betabinom``: p_t ~ Beta(a + x_t, b + n_t - x_t), with (a, b) the beta-binomial fit of the
  agent's cells (``analysis.betabinom``), which shrinks every task toward the agent's mean.

**Unpriced damage.** A damaging run with no dollar amount (or $0) counts in the frequency and is
never taken as a $0 loss: its loss is represented by the priced severities, and the count of such
runs is reported (``unpriced_damaging_runs``).

**Moments (exact).** With m1(p) = sum s_t p_t mu_t and m2(p) = sum s_t p_t E[X_t^2],
    E[L]   = N E[m1]
    Var[L] = N E[m2] - N E[m1]^2 + (N^2 - N) Var(m1),   Var(m1) = sum s_t^2 mu_t^2 Var(p_t)
(law of total variance; p_t independent across tasks). **Quantiles** (VaR, TVaR at 99% and 99.5%)
are from a Monte Carlo of the full model with a fixed seed: p drawn from its distribution, the
counts per task by sequential conditional binomials (a multinomial over tasks and "no damage"), and
the sum of K_t severities as sum_j v_j M_j with M ~ Multinomial(K_t, empirical weights), which costs
the same for any K_t.

**Premium principles** (named in the output): ``std_dev`` E[L] + theta sd(L); ``expected_value``
(1 + theta) E[L]; ``quantile`` VaR at level theta.

**Assumed**: executions independent (no common-mode failure across tasks or days), the volume and mix
as given, each task's audited runs representative of its production executions, and loss sizes
limited to those seen in priced runs (no tail beyond the largest observed loss).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from agentrel.analysis.betabinom import fit_beta_binomial
from agentrel.analysis.decisions.aggregate import measures

Frequency = Literal["posterior", "betabinom"]
Principle = Literal["std_dev", "expected_value", "quantile"]
PRINCIPLES: tuple[Principle, ...] = ("std_dev", "expected_value", "quantile")
LEVELS = (0.99, 0.995)


class InsureError(ValueError):
    """Input the loss model cannot use; the message is one line saying what to fix."""


@dataclass(frozen=True)
class TaskEvidence:
    """One task's audited runs for the agent: valid runs, damaging ones, priced amounts, unpriced."""

    task: str
    n: int
    damaging: int
    # dollar amounts of priced damaging runs (> 0; a run can be $0 for one part of its dollars, e.g. its
    # realised loss when all of its damage is reversible: see decisions.evidence)
    priced: tuple[float, ...]
    unpriced: int  # damaging runs with no amount


@dataclass(frozen=True)
class LossSummary:
    expected_loss: float
    std: float
    var_99: float
    var_995: float
    tvar_99: float
    tvar_995: float
    premium: float
    unpriced_damaging_runs: int
    principle: str
    mc_expected_loss: float  # the simulation's mean (checks the model: within mc_error of the exact)
    mc_error: float  # its standard error
    simulations: int
    seed: int
    volume: int
    frequency: str
    mix: dict[str, float]
    severity_source: dict[str, str]  # task -> "own" or "pooled"
    assumptions: list[str] = field(default_factory=list)

    def risk(self) -> dict[str, float]:
        """The loss measures in dollars, rounded to the cent (no float noise such as 27173062.500000004)."""
        return {
            "expected_loss": cents(self.expected_loss),
            "std": cents(self.std),
            "var_99": cents(self.var_99),
            "var_995": cents(self.var_995),
            "tvar_99": cents(self.tvar_99),
            "tvar_995": cents(self.tvar_995),
        }

    def keys(self) -> dict[str, float | int]:
        """The fixed JSON keys of `agentrel insure --json` (dollars rounded to the cent)."""
        return {
            **self.risk(),
            "premium": cents(self.premium),
            "unpriced_damaging_runs": self.unpriced_damaging_runs,
        }


def cents(value: float) -> float:
    """A dollar amount rounded to the cent: its JSON form is the shortest decimal of that amount."""
    return round(float(value), 2) + 0.0  # + 0.0 turns -0.0 into 0.0


def resolve_mix(tasks: Sequence[str], mix: Mapping[str, float] | None) -> dict[str, float]:
    """The mix as shares over audited tasks: equal by default; given shares must sum to 1."""
    if not mix:
        return {t: 1.0 / len(tasks) for t in tasks}
    unknown = sorted(set(mix) - set(tasks))
    if unknown:
        raise InsureError(f"--mix names task {unknown[0]!r}, which has no valid run in the results")
    if any(not (s >= 0 and math.isfinite(s)) for s in mix.values()):
        raise InsureError("--mix shares must be non-negative numbers")
    total = sum(mix.values())
    if not math.isclose(total, 1.0, abs_tol=1e-9):
        raise InsureError(f"--mix shares sum to {total:g}, not 1; give shares that add up to 1")
    return {t: float(mix.get(t, 0.0)) for t in tasks}


def _beta_params(evidence: Sequence[TaskEvidence], frequency: Frequency) -> list[tuple[float, float]]:
    if frequency == "posterior":
        return [(e.damaging + 0.5, e.n - e.damaging + 0.5) for e in evidence]
    fit = fit_beta_binomial([e.damaging for e in evidence], [e.n for e in evidence])
    if fit.degenerate or fit.boundary:
        raise InsureError(
            "the beta-binomial fit has no between-task spread here (rho = 0 or no damage); "
            "use --frequency posterior"
        )
    return [(fit.a + e.damaging, fit.b + e.n - e.damaging) for e in evidence]


def _severities(evidence: Sequence[TaskEvidence]) -> tuple[list[np.ndarray], dict[str, str]]:
    pooled = np.array([x for e in evidence for x in e.priced], dtype=np.float64)
    if pooled.size == 0:
        raise InsureError(
            "no damaging run in the results carries a dollar amount, so no loss size can be estimated; "
            "price the damage rules of at least one task"
        )
    out, source = [], {}
    for e in evidence:
        own = np.array(e.priced, dtype=np.float64)
        out.append(own if own.size else pooled)
        source[e.task] = "own" if own.size else "pooled"
    return out, source


def premium(principle: Principle, theta: float, mean: float, std: float, samples: np.ndarray) -> float:
    if principle == "std_dev":
        return mean + theta * std
    if principle == "expected_value":
        return (1.0 + theta) * mean
    if principle == "quantile":
        if not 0.0 < theta < 1.0:
            raise InsureError(f"the quantile principle needs a level in (0, 1), got {theta}")
        return float(np.quantile(samples, theta, method="inverted_cdf"))
    raise InsureError(f"premium principle must be one of {', '.join(PRINCIPLES)}, got {principle!r}")


def annual_loss(
    evidence: Sequence[TaskEvidence],
    volume: int,
    mix: Mapping[str, float] | None = None,
    *,
    frequency: Frequency = "posterior",
    principle: Principle = "std_dev",
    theta: float = 0.5,
    simulations: int = 20_000,
    seed: int = 0,
) -> LossSummary:
    """The loss distribution of N executions a year (see the module doc for the model)."""
    if volume < 1:
        raise InsureError(f"--volume must be a positive number of tasks per year, got {volume}")
    if not evidence:
        raise InsureError("the results hold no valid run for this agent")
    shares = resolve_mix([e.task for e in evidence], mix)
    s = np.array([shares[e.task] for e in evidence])
    sev, source = _severities(evidence)
    ab = np.array(_beta_params(evidence, frequency))
    ep = ab[:, 0] / ab.sum(axis=1)
    vp = ab[:, 0] * ab[:, 1] / (ab.sum(axis=1) ** 2 * (ab.sum(axis=1) + 1.0))
    mu = np.array([x.mean() for x in sev])
    mu2 = np.array([(x**2).mean() for x in sev])
    e_m1 = float(np.sum(s * ep * mu))
    e_m2 = float(np.sum(s * ep * mu2))
    var_m1 = float(np.sum(s**2 * mu**2 * vp))
    mean = volume * e_m1
    std = math.sqrt(max(0.0, volume * e_m2 - volume * e_m1**2 + (volume**2 - volume) * var_m1))
    samples = simulate(ab, s, sev, volume, simulations, seed)
    risk = measures(samples, levels=LEVELS)
    return LossSummary(
        expected_loss=mean,
        std=std,
        var_99=risk.var[0.99],
        var_995=risk.var[0.995],
        tvar_99=risk.tvar[0.99],
        tvar_995=risk.tvar[0.995],
        premium=premium(principle, theta, mean, std, samples),
        unpriced_damaging_runs=sum(e.unpriced for e in evidence),
        principle=_principle_name(principle, theta),
        mc_expected_loss=risk.mean,
        mc_error=risk.std / math.sqrt(simulations),
        simulations=simulations,
        seed=seed,
        volume=volume,
        frequency=frequency,
        mix=shares,
        severity_source=source,
        assumptions=[
            "executions are independent (no common-mode failure across tasks or days)",
            f"{volume} executions a year in the mix given, each of task t with probability s_t",
            "audited runs are representative of production executions of the same task",
            "loss sizes are those of the priced damaging runs (no loss larger than the largest seen)",
        ],
    )


def simulate(
    ab: np.ndarray, shares: np.ndarray, severities: Sequence[np.ndarray], volume: int, sims: int, seed: int
) -> np.ndarray:
    """`sims` draws of the annual loss (p from Beta(ab), counts by task, severities summed)."""
    rng = np.random.default_rng(seed)
    p = rng.beta(ab[:, 0], ab[:, 1], size=(sims, ab.shape[0]))
    q = p * shares  # P(an execution is of task t and damages)
    remaining = np.full(sims, volume, dtype=np.int64)
    rest = np.ones(sims)  # probability mass not yet assigned
    loss = np.zeros(sims)
    for t, values in enumerate(severities):
        prob = np.clip(np.divide(q[:, t], rest, out=np.zeros(sims), where=rest > 0), 0.0, 1.0)
        k = rng.binomial(remaining, prob)
        remaining -= k
        rest = rest - q[:, t]
        support, counts = np.unique(values, return_counts=True)
        draws = rng.multinomial(k, counts / counts.sum())
        loss += draws @ support
    return loss


def _principle_name(principle: Principle, theta: float) -> str:
    if principle == "std_dev":
        return f"standard deviation principle: E[L] + {theta:g} sd(L)"
    if principle == "expected_value":
        return f"expected value principle: (1 + {theta:g}) E[L]"
    return f"quantile principle: VaR at {theta:g}"
