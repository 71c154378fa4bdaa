from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agentrel.analysis.bootstrap import cluster_bootstrap, draw_cluster_weights, intervals_from_replicates
from agentrel.analysis.pooled import (
    FEATURES,
    cell_features,
    icc_anova,
    miss_rate_event,
    miss_rate_pair,
    pool_statistics_from_sums,
)
from agentrel.analysis.pools import task_features


def _cells(rng: np.random.Generator, tasks: int, models: int) -> pd.DataFrame:
    rows = []
    for t in range(tasks):
        for m in range(models):
            n = int(rng.integers(4, 20))
            rows.append(
                {
                    "model": f"m{m}",
                    "task": f"t{t:02d}",
                    "n": n,
                    "x": int(rng.binomial(n, rng.beta(0.5, 2))),
                    "dollars_total": None,
                }
            )
    return pd.DataFrame(rows)


def test_weights_are_multinomial_counts_and_seeded():
    w1 = draw_cluster_weights(7, 500, np.random.default_rng(1))
    w2 = draw_cluster_weights(7, 500, np.random.default_rng(1))
    assert np.array_equal(w1, w2)
    assert w1.shape == (500, 7) and np.all(w1.sum(axis=1) == 7) and w1.min() >= 0
    assert (w1 >= 2).any()  # duplicates occur
    assert w1.mean() == pytest.approx(1.0)


def test_duplicated_tasks_stay_separate_clusters_and_models_travel_together():
    """Weighted sums equal the statistics of the materialized resample, in which a task drawn twice
    contributes every one of its cells (for every model) twice."""
    rng = np.random.default_rng(5)
    cells = _cells(rng, tasks=9, models=3)
    feats = task_features(cells)[:, : len(FEATURES)]
    tasks = sorted(cells["task"].unique())
    weights = draw_cluster_weights(len(tasks), 50, np.random.default_rng(9))
    batched = pool_statistics_from_sums(weights.astype(float) @ feats)
    for b in range(weights.shape[0]):
        drawn = [t for t, w in zip(tasks, weights[b], strict=True) for _ in range(w)]
        sample = pd.concat([cells[cells["task"] == t] for t in drawn])
        assert len(sample) == 3 * len(tasks)  # 3 models per drawn task, duplicates kept
        x, n = sample["x"].to_numpy(), sample["n"].to_numpy()
        assert batched[b, 3] == pytest.approx(icc_anova(x, n), rel=1e-9, nan_ok=True)
        assert batched[b, 1] == pytest.approx(miss_rate_pair(x, n), rel=1e-12, nan_ok=True)
        assert batched[b, 2] == pytest.approx(miss_rate_event(x, n), rel=1e-12, nan_ok=True)
    # A task's features are the sum over all its models' cells.
    per_model = sum(task_features(cells[cells["model"] == m])[:, : len(FEATURES)] for m in ("m0", "m1", "m2"))
    assert np.allclose(per_model, feats)


def test_percentile_and_bca_agree_with_scipy_for_a_mean():
    """Clusters of one value each make the cluster bootstrap an ordinary one; scipy's BCa is the reference."""
    rng = np.random.default_rng(11)
    values = rng.gamma(2.0, 3.0, size=60)
    feats = np.column_stack([values, np.ones_like(values)])
    ours = cluster_bootstrap(feats, lambda s: s[..., 0] / s[..., 1], 20_000, np.random.default_rng(12))[0]
    ref_bca = stats.bootstrap(
        (values,), np.mean, n_resamples=20_000, method="BCa", rng=np.random.default_rng(13)
    )
    ref_pct = stats.bootstrap(
        (values,), np.mean, n_resamples=20_000, method="percentile", rng=np.random.default_rng(13)
    )
    width = ref_bca.confidence_interval.high - ref_bca.confidence_interval.low
    assert ours.estimate == pytest.approx(values.mean())
    assert ours.bca[0] == pytest.approx(ref_bca.confidence_interval.low, abs=0.03 * width)
    assert ours.bca[1] == pytest.approx(ref_bca.confidence_interval.high, abs=0.03 * width)
    assert ours.percentile[0] == pytest.approx(ref_pct.confidence_interval.low, abs=0.03 * width)
    assert ours.percentile[1] == pytest.approx(ref_pct.confidence_interval.high, abs=0.03 * width)
    assert ours.bca[1] > ours.percentile[1]  # right skew: BCa shifts the interval up


def test_undefined_resamples_are_dropped_and_counted():
    cells = pd.DataFrame(
        {
            "task": ["a", "b", "c", "d"],
            "model": "m",
            "x": [3, 0, 0, 0],
            "n": [8, 8, 8, 8],
            "dollars_total": None,
        }
    )
    feats = task_features(cells)[:, : len(FEATURES)]
    res = cluster_bootstrap(feats, pool_statistics_from_sums, 400, np.random.default_rng(2))
    miss = res[1]
    assert miss.estimate == pytest.approx(5 / 8)
    assert 0 < miss.n_valid < 400  # resamples without task "a" have no damaging cell
    assert miss.percentile == (pytest.approx(5 / 8), pytest.approx(5 / 8))


def test_seeded_and_reproducible():
    rng = np.random.default_rng(0)
    cells = _cells(rng, tasks=12, models=2)
    feats = task_features(cells)[:, : len(FEATURES)]
    a = cluster_bootstrap(feats, pool_statistics_from_sums, 300, np.random.default_rng(42))
    b = cluster_bootstrap(feats, pool_statistics_from_sums, 300, np.random.default_rng(42))
    c = cluster_bootstrap(feats, pool_statistics_from_sums, 300, np.random.default_rng(43))
    assert a == b
    assert a != c


def test_bca_undefined_when_estimate_outside_the_replicates():
    boot = np.array([[1.0], [2.0], [3.0]])
    out = intervals_from_replicates(np.array([5.0]), boot, np.array([[1.0], [2.0]]))
    assert np.isnan(out[0].bca[0]) and out[0].percentile[1] <= 3.0


def test_single_cluster_is_degenerate_not_an_error():
    feats = cell_features(np.array([2]), np.array([8]))
    res = cluster_bootstrap(feats, pool_statistics_from_sums, 50, np.random.default_rng(0))
    assert res[0].percentile == (0.25, 0.25)
