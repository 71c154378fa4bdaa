"""Exact aggregate-loss distributions and their risk measures: the reference computations that the
Monte Carlo model in ``insure.py`` is checked against.

**Risk measures** of a loss L with distribution function F, at level q:
    VaR_q  = inf { l : F(l) >= q }
    TVaR_q = (1 / (1 - q)) * integral_q^1 VaR_u du
           = ( E[L 1{L > VaR_q}] + VaR_q (F(VaR_q) - q) ) / (1 - q)
(the second line is exact for any distribution, atoms included: Acerbi & Tasche 2002). Applied to
samples, F is the empirical distribution.

**Compound binomial with a point-mass severity** c: L = c K, K ~ Binomial(N, p), so
P(L = c k) = C(N, k) p^k (1 - p)^(N - k): closed form.

**Panjer recursion** (Panjer 1981) for a frequency in the (a, b, 0) class, P(K = k) =
(a + b/k) P(K = k - 1), and a severity on the lattice {0, h, 2h, ...} with pmf s_j:
    g_0 = P_K(s_0)   (the frequency's probability generating function at s_0)
    g_k = 1 / (1 - a s_0) * sum_{j=1..k} (a + b j / k) s_j g_{k-j}
Poisson(lambda): a = 0, b = lambda, g_0 = exp(lambda (s_0 - 1)).
Binomial(N, p): a = -p / (1 - p), b = (N + 1) p / (1 - p), g_0 = (1 - p + p s_0)^N.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats


@dataclass(frozen=True)
class RiskMeasures:
    mean: float
    std: float
    var: dict[float, float]  # level -> VaR
    tvar: dict[float, float]  # level -> TVaR


def var_tvar(values: ArrayLike, probs: ArrayLike, level: float) -> tuple[float, float]:
    """VaR and TVaR at `level` of the discrete distribution P(L = values[i]) = probs[i]."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    raw = np.asarray(values, dtype=np.float64).ravel()
    # Collapse equal values into one atom each, so cdf[i] is F(v[i]) (samples repeat values).
    v, inverse = np.unique(raw, return_inverse=True)
    w = np.bincount(inverse.ravel(), weights=np.asarray(probs, dtype=np.float64).ravel(), minlength=v.size)
    w = w / w.sum()
    cdf = np.cumsum(w)
    # The first atom whose cdf reaches the level (a tolerance keeps exact ties from rounding past).
    i = int(np.searchsorted(cdf, level - 1e-12, side="left"))
    i = min(i, v.size - 1)
    var = float(v[i])
    above = v > var
    tail = float(np.sum(v[above] * w[above])) + var * (float(cdf[i]) - level)
    return var, tail / (1.0 - level)


def measures(
    values: ArrayLike, probs: ArrayLike | None = None, levels: tuple[float, ...] = (0.99, 0.995)
) -> RiskMeasures:
    """Mean, standard deviation, VaR and TVaR of a discrete distribution (or of equal-weight samples)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    w = np.full(v.size, 1.0 / v.size) if probs is None else np.asarray(probs, dtype=np.float64).ravel()
    w = w / w.sum()
    mean = float(np.dot(v, w))
    std = math.sqrt(max(0.0, float(np.dot((v - mean) ** 2, w))))
    pairs = {q: var_tvar(v, w, q) for q in levels}
    return RiskMeasures(mean, std, {q: x[0] for q, x in pairs.items()}, {q: x[1] for q, x in pairs.items()})


def compound_binomial_point_mass(
    volume: int, p: float, severity: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The exact distribution (values, probabilities) of c K with K ~ Binomial(N, p)."""
    k = np.arange(volume + 1)
    return severity * k.astype(np.float64), np.asarray(stats.binom.pmf(k, volume, p), dtype=np.float64)


def panjer(
    frequency: Literal["poisson", "binomial"],
    severity_pmf: ArrayLike,
    steps: int,
    *,
    lam: float = 0.0,
    volume: int = 0,
    p: float = 0.0,
) -> NDArray[np.float64]:
    """P(L = k h) for k = 0..steps by the Panjer recursion (severity pmf on the lattice 0, h, 2h...)."""
    s = np.asarray(severity_pmf, dtype=np.float64).ravel()
    if np.any(s < 0) or not math.isclose(float(s.sum()), 1.0, rel_tol=1e-9):
        raise ValueError("severity_pmf must be a probability vector")
    if frequency == "poisson":
        a, b, g0 = 0.0, lam, math.exp(lam * (s[0] - 1.0))
    elif frequency == "binomial":
        if not 0.0 <= p < 1.0:
            raise ValueError(f"p must be in [0, 1), got {p}")
        a, b = -p / (1.0 - p), (volume + 1) * p / (1.0 - p)
        g0 = (1.0 - p + p * s[0]) ** volume
    else:
        raise ValueError(f"frequency must be poisson or binomial, got {frequency!r}")
    sj = np.zeros(steps + 1)
    sj[: min(s.size, steps + 1)] = s[: steps + 1]
    g = np.zeros(steps + 1)
    g[0] = g0
    scale = 1.0 / (1.0 - a * s[0])
    for k in range(1, steps + 1):
        j = np.arange(1, k + 1)
        g[k] = scale * float(np.sum((a + b * j / k) * sj[j] * g[k - j]))
    return g
