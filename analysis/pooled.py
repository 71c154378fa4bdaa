"""Pooled statistics over cells: damage rate, audit miss rates and the moment ICC estimators.

Each statistic is a function of sums of per-cell features, so the same formula serves a plain pool
(sum over its cells) and a cluster bootstrap (weighted sums, one row per resample, computed with a
single matrix product). Notation: cell i has n_i valid runs, y_i damaging runs; k cells,
N = sum n_i, pi = sum y_i / N.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

FEATURES = ("n", "y", "cells", "y2_over_n", "y_clean_over_n", "n2", "damage_cell", "damage_cell_miss")
F = {name: i for i, name in enumerate(FEATURES)}

Array = NDArray[np.float64]


def cell_features(y: ArrayLike, n: ArrayLike) -> Array:
    """Per-cell features, shape (cells, len(FEATURES)).

    n, y, 1, y^2/n, y(n-y)/n, n^2, [y >= 1], [y >= 1](n-y)/n.
    """
    ya = np.asarray(y, dtype=np.float64)
    na = np.asarray(n, dtype=np.float64)
    if ya.shape != na.shape or np.any(na < 1) or np.any(ya < 0) or np.any(ya > na):
        raise ValueError("need matching arrays with 0 <= y <= n and n >= 1")
    damage = (ya >= 1).astype(np.float64)
    clean_share = (na - ya) / na
    return np.stack(
        [na, ya, np.ones_like(na), ya * ya / na, ya * clean_share, na * na, damage, damage * clean_share],
        axis=-1,
    )


def _col(sums: Array, name: str) -> Array:
    return np.asarray(sums, dtype=np.float64)[..., F[name]]


def _ratio(num: Array, den: Array) -> Array:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def damage_rate_from_sums(sums: Array) -> Array:
    """Run-weighted damage rate: sum y_i / sum n_i."""
    return _ratio(_col(sums, "y"), _col(sums, "n"))


def miss_rate_pair_from_sums(sums: Array) -> Array:
    """Pair-weighted audit miss rate: mean of (n_i - y_i)/n_i over cells with y_i >= 1.

    The probability that one clean audit run misses a damage-producing (model, task) pair, each such
    pair counted once. NaN when no cell damaged.
    """
    return _ratio(_col(sums, "damage_cell_miss"), _col(sums, "damage_cell"))


def miss_rate_event_from_sums(sums: Array) -> Array:
    """Event-weighted audit miss rate: sum y_i (n_i - y_i)/n_i / sum y_i.

    Each damage-producing pair weighted by its damage events (damaging runs, y_i): the chance that
    one audit run of the pair behind a random damaging run comes back clean. NaN when y = 0 everywhere.
    """
    return _ratio(_col(sums, "y_clean_over_n"), _col(sums, "y"))


def icc_anova_from_sums(sums: Array) -> Array:
    """ANOVA estimator of the ICC (Fleiss 1981; Ridout, Demetrio & Firth 1999).

    MSB = (sum y_i^2/n_i - (sum y_i)^2 / N) / (k - 1),  MSW = (sum y_i - sum y_i^2/n_i) / (N - k),
    n0 = (N - sum n_i^2 / N) / (k - 1),  rho = (MSB - MSW) / (MSB + (n0 - 1) MSW).
    """
    k, big_n, y = _col(sums, "cells"), _col(sums, "n"), _col(sums, "y")
    y2n, n2 = _col(sums, "y2_over_n"), _col(sums, "n2")
    with np.errstate(divide="ignore", invalid="ignore"):
        msb = (y2n - y * y / big_n) / (k - 1)
        msw = (y - y2n) / (big_n - k)
        n0 = (big_n - n2 / big_n) / (k - 1)
        return _ratio(msb - msw, msb + (n0 - 1) * msw)


def icc_fleiss_cuzick_from_sums(sums: Array) -> Array:
    """Fleiss–Cuzick (1979) kappa-type estimator.

    rho = 1 - sum y_i (n_i - y_i) / n_i / ((N - k) pi (1 - pi)).
    """
    k, big_n, y = _col(sums, "cells"), _col(sums, "n"), _col(sums, "y")
    with np.errstate(divide="ignore", invalid="ignore"):
        pi = y / big_n
        return 1.0 - _ratio(_col(sums, "y_clean_over_n"), (big_n - k) * pi * (1 - pi))


def icc_kleinman_from_sums(sums: Array) -> Array:
    """Kleinman (1973) moment estimator with weights w_i = n_i / N.

    p_w = sum w_i p_i = pi,  S = sum w_i (p_i - p_w)^2,
    rho = (S - pi(1-pi) sum w_i(1-w_i)/n_i) / (pi(1-pi) [sum w_i(1-w_i) - sum w_i(1-w_i)/n_i]).
    With w_i = n_i/N: S = sum(y_i^2/n_i)/N - pi^2, sum w_i(1-w_i)/n_i = (k-1)/N and
    sum w_i(1-w_i) = 1 - sum n_i^2 / N^2.
    """
    k, big_n, y = _col(sums, "cells"), _col(sums, "n"), _col(sums, "y")
    y2n, n2 = _col(sums, "y2_over_n"), _col(sums, "n2")
    with np.errstate(divide="ignore", invalid="ignore"):
        pi = y / big_n
        var = pi * (1 - pi)
        s = y2n / big_n - pi * pi
        c1 = (k - 1) / big_n
        c2 = 1.0 - n2 / (big_n * big_n)
        return _ratio(s - var * c1, var * (c2 - c1))


def _direct(fn: Callable[[Array], Array], y: ArrayLike, n: ArrayLike) -> float:
    return float(fn(cell_features(y, n).sum(axis=0)))


def miss_rate_pair(y: ArrayLike, n: ArrayLike) -> float:
    """Pair-weighted miss rate of the given cells (see miss_rate_pair_from_sums)."""
    return _direct(miss_rate_pair_from_sums, y, n)


def miss_rate_event(y: ArrayLike, n: ArrayLike) -> float:
    """Event-weighted miss rate of the given cells (see miss_rate_event_from_sums)."""
    return _direct(miss_rate_event_from_sums, y, n)


def icc_anova(y: ArrayLike, n: ArrayLike) -> float:
    """ANOVA ICC of the given cells (see icc_anova_from_sums)."""
    return _direct(icc_anova_from_sums, y, n)


def icc_fleiss_cuzick(y: ArrayLike, n: ArrayLike) -> float:
    """Fleiss–Cuzick ICC of the given cells (see icc_fleiss_cuzick_from_sums)."""
    return _direct(icc_fleiss_cuzick_from_sums, y, n)


def icc_kleinman(y: ArrayLike, n: ArrayLike) -> float:
    """Kleinman ICC of the given cells (see icc_kleinman_from_sums)."""
    return _direct(icc_kleinman_from_sums, y, n)


POOL_STATISTICS = {
    "damage_rate": damage_rate_from_sums,
    "miss_rate_pair": miss_rate_pair_from_sums,
    "miss_rate_event": miss_rate_event_from_sums,
    "icc_anova": icc_anova_from_sums,
    "icc_fleiss_cuzick": icc_fleiss_cuzick_from_sums,
    "icc_kleinman": icc_kleinman_from_sums,
}


def pool_statistics_from_sums(sums: Array) -> Array:
    """All POOL_STATISTICS stacked on the last axis, shape sums.shape[:-1] + (len(POOL_STATISTICS),)."""
    return np.stack([fn(sums) for fn in POOL_STATISTICS.values()], axis=-1)
