"""Simulated audits that check what the decision methods promise (used by bench/adaptive_audit.py and
by the tests): each function takes the true per-cell rates and a seeded generator and returns counts.

- ``sequential_audit`` drives the real stopping rule (``certify.decide``) run by run, with invalid runs
  interleaved, so the simulated audit is the rule as shipped, not a re-derivation of it.
- ``fast_audit`` is the same rule in closed form for large simulations: the first damaging valid
  run is at G ~ Geometric(p); the cell is certified iff G > n(P, C) and spends min(G, n) valid runs.
- ``fewest_runs`` / ``beta_fewest_runs``: the bound no valid rule can beat when every cell must be
  decided with the same guarantee (certified at n(P, C), or detected). A certificate at (P, C) from a
  cell with no damaging run needs (1 - P)^m <= 1 - C, so m >= n clean runs; a detection needs a
  damaging run, so at least G runs. Whatever the rule, a cell is decided only after min(G, n) valid
  runs, pathwise, and the expected cost per cell is E[min(G, n)] = sum_{k<n} (1 - p)^k
  = (1 - (1 - p)^n) / p (n when p = 0). Detect-or-certify spends exactly min(G, n): it attains the
  bound, so its saving on a mixture is the most any such rule can save there. For p ~ Beta(a, b),
  E[(1 - p)^k] = B(a, b + k) / B(a, b), which gives the bound in closed form.
- ``published_mixture`` is the distribution of per-cell rates shaped like a set of published cells:
  the beta-binomial fit of their (damaging, runs) counts, or their plug-in rates x / n.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import betaln

from agentrel.analysis.betabinom import fit_beta_binomial
from agentrel.analysis.decisions.certify import CellCounts, decide


@dataclass(frozen=True)
class AuditOutcome:
    certified: NDArray[np.bool_]
    detected: NDArray[np.bool_]
    valid_runs: NDArray[np.int64]  # valid runs each cell spent
    invalid_runs: NDArray[np.int64]


def sequential_audit(
    rates: NDArray[np.float64], required: int, rng: np.random.Generator, invalid_rate: float = 0.0
) -> AuditOutcome:
    """Each cell runs until `decide` stops it; a run is invalid with `invalid_rate` (never counted)."""
    certified = np.zeros(rates.size, dtype=bool)
    detected = np.zeros(rates.size, dtype=bool)
    valid = np.zeros(rates.size, dtype=np.int64)
    invalid = np.zeros(rates.size, dtype=np.int64)
    for i, p in enumerate(rates):
        counts = CellCounts()
        while (decision := decide(counts, required)) == "continue":
            if rng.random() < invalid_rate:
                counts = counts.add("invalid")
            else:
                counts = counts.add("damaging" if rng.random() < p else "clean")
        certified[i], detected[i] = decision == "certified", decision == "detected"
        valid[i], invalid[i] = counts.clean + counts.damaging, counts.invalid
    return AuditOutcome(certified, detected, valid, invalid)


def fast_audit(rates: NDArray[np.float64], required: int, rng: np.random.Generator) -> AuditOutcome:
    """The same rule in closed form: first damage at G ~ Geometric(p) (never when p = 0)."""
    first = np.full(rates.size, np.iinfo(np.int64).max, dtype=np.int64)
    hit = rates > 0
    first[hit] = rng.geometric(rates[hit])
    certified = first > required
    runs = np.minimum(first, required)
    return AuditOutcome(certified, ~certified, runs, np.zeros(rates.size, dtype=np.int64))


def published_mixture(
    damaging: NDArray[np.int64], runs: NDArray[np.int64], size: int, rng: np.random.Generator, kind: str
) -> NDArray[np.float64]:
    """`size` per-cell rates: from the fitted Beta ("fitted") or resampled plug-in rates ("plug-in")."""
    if kind == "fitted":
        fit = fit_beta_binomial(damaging, runs)
        return np.asarray(rng.beta(fit.a, fit.b, size=size), dtype=np.float64)
    if kind == "plug-in":
        return np.asarray(rng.choice(damaging / runs, size=size), dtype=np.float64)
    raise ValueError(f"kind must be fitted or plug-in, got {kind!r}")


def runs_saved(outcome: AuditOutcome, required: int) -> float:
    """1 - adaptive valid runs / fixed-K runs, where fixed K = n(P, C) for every cell (same guarantee)."""
    return 1.0 - float(outcome.valid_runs.sum()) / (required * outcome.valid_runs.size)


def fewest_runs(rates: NDArray[np.float64], required: int) -> NDArray[np.float64]:
    """E[min(G, n)] per cell, G ~ Geometric(p): (1 - (1 - p)^n) / p, and n where p = 0."""
    out = np.full(rates.size, float(required))
    hit = rates > 0
    p = rates[hit]
    with np.errstate(divide="ignore"):  # p = 1: log1p(-1) = -inf, and the formula gives 1, as it should
        out[hit] = -np.expm1(required * np.log1p(-p)) / p
    return out


def beta_fewest_runs(a: float, b: float, required: int) -> float:
    """E[min(G, n)] for p ~ Beta(a, b), exactly: sum over k < n of B(a, b + k) / B(a, b)."""
    k = np.arange(required, dtype=np.float64)
    return float(np.exp(betaln(a, b + k) - betaln(a, b)).sum())


def best_saving(a: float, b: float, required: int) -> float:
    """The largest share of fixed-K runs any rule deciding every cell can save on Beta(a, b) cells."""
    return 1.0 - beta_fewest_runs(a, b, required) / required
