"""Cluster bootstrap over tasks, vectorized: percentile and BCa intervals.

A resample draws T tasks with replacement from the T tasks of a pool. It is represented by the
count vector w (w_t = how many times task t was drawn, sum w_t = T), so a task drawn twice
contributes its cells twice: it stays two clusters (every count-type sum, including the number of
cells k, doubles). A task's cells for all models in the pool travel together because features are
summed per task before resampling. Every statistic here is a function of per-task feature sums,
so all B resamples are one product W (B x T) @ features (T x F), with no Python loop over
resamples or cells.

Percentile interval: the alpha/2 and 1 - alpha/2 quantiles of the bootstrap replicates.
BCa (Efron 1987): z0 = Phi^{-1}(#{theta* < theta-hat} / B + 0.5 #{theta* = theta-hat} / B) (mid-rank,
so a discrete statistic with ties is not biased to one side), acceleration from the
leave-one-task-out jackknife, a = sum (m - theta_(i))^3 / (6 [sum (m - theta_(i))^2]^{3/2}), and
endpoints at the quantiles Phi(z0 + (z0 + z_q) / (1 - a (z0 + z_q))) for q = alpha/2, 1 - alpha/2.
Replicates that are undefined (NaN, e.g. a miss rate of a resample with no damage) are dropped and
counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats

Array = NDArray[np.float64]
Statistic = Callable[[Array], Array]  # sums (..., F) -> statistics (..., S)


@dataclass(frozen=True)
class BootstrapInterval:
    estimate: float
    percentile: tuple[float, float]
    bca: tuple[float, float]
    n_boot: int
    n_valid: int  # replicates with a defined value


def draw_cluster_weights(n_clusters: int, n_boot: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """W (n_boot x n_clusters): multiplicity of each cluster in each resample of n_clusters draws.

    Row b counts the clusters drawn by n_clusters uniform draws with replacement (a multinomial
    vector), tallied for all rows at once with one bincount.
    """
    if n_clusters < 1 or n_boot < 1:
        raise ValueError("need at least one cluster and one resample")
    draws = rng.integers(0, n_clusters, size=(n_boot, n_clusters))
    flat = (draws + np.arange(n_boot)[:, None] * n_clusters).ravel()
    return np.bincount(flat, minlength=n_boot * n_clusters).reshape(n_boot, n_clusters)


def weighted_sums(weights: Array, feats: Array) -> Array:
    """weights (B x T) @ feats (T x F), with numpy's own loops rather than a threaded BLAS.

    The product is small (a few million multiply-adds); a multi-threaded BLAS call here leaves
    its worker threads spinning, which on a two-core machine slows the optimisers that follow.
    """
    return np.asarray(np.einsum("bt,tf->bf", weights, feats, optimize=False), dtype=np.float64)


def _bca(theta_hat: float, boot: Array, jack: Array, alpha: float) -> tuple[float, float]:
    """BCa endpoints for one statistic (boot and jack already free of NaN)."""
    if boot.size == 0 or not np.isfinite(theta_hat):
        return (np.nan, np.nan)
    if np.all(boot == boot[0]):
        return (float(boot[0]), float(boot[0]))
    share = (np.count_nonzero(boot < theta_hat) + 0.5 * np.count_nonzero(boot == theta_hat)) / boot.size
    if not 0.0 < share < 1.0:
        return (np.nan, np.nan)  # theta-hat outside the bootstrap distribution: BCa undefined
    z0 = stats.norm.ppf(share)
    accel = 0.0
    if jack.size >= 2:
        dev = jack.mean() - jack
        den = 6.0 * np.sum(dev**2) ** 1.5
        accel = float(np.sum(dev**3) / den) if den > 0 else 0.0
    z = stats.norm.ppf([alpha / 2.0, 1.0 - alpha / 2.0])
    adj = stats.norm.cdf(z0 + (z0 + z) / (1.0 - accel * (z0 + z)))
    lo, hi = np.quantile(boot, adj)
    return (float(lo), float(hi))


def intervals_from_replicates(
    theta_hat: Array, boot: Array, jack: Array, level: float = 0.95
) -> list[BootstrapInterval]:
    """Percentile and BCa intervals per statistic: theta_hat (S,), boot (B, S), jack (T, S)."""
    alpha = 1.0 - level
    out = []
    for j in range(theta_hat.shape[0]):
        b = boot[:, j][np.isfinite(boot[:, j])]
        jk = jack[:, j][np.isfinite(jack[:, j])]
        if b.size:
            lo, hi = np.quantile(b, [alpha / 2.0, 1.0 - alpha / 2.0])
            pct = (float(lo), float(hi))
        else:
            pct = (np.nan, np.nan)
        out.append(
            BootstrapInterval(
                float(theta_hat[j]), pct, _bca(float(theta_hat[j]), b, jk, alpha), boot.shape[0], b.size
            )
        )
    return out


def cluster_bootstrap(
    features: Array, statistic: Statistic, n_boot: int, rng: np.random.Generator, level: float = 0.95
) -> list[BootstrapInterval]:
    """Bootstrap intervals for statistic(sum of features over clusters).

    features: (T, F) per-cluster (task) feature sums; statistic maps (..., F) sums to (..., S).
    Returns one BootstrapInterval per statistic.
    """
    feats = np.asarray(features, dtype=np.float64)
    total = feats.sum(axis=0)
    theta_hat = np.asarray(statistic(total), dtype=np.float64).reshape(-1)
    weights = draw_cluster_weights(feats.shape[0], n_boot, rng).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        boot = np.asarray(statistic(weighted_sums(weights, feats)), dtype=np.float64).reshape(n_boot, -1)
        jack = np.asarray(statistic(total[None, :] - feats), dtype=np.float64).reshape(feats.shape[0], -1)
    return intervals_from_replicates(theta_hat, boot, jack, level)
