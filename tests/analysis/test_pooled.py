from __future__ import annotations

import math

import numpy as np
import pytest

from agentrel.analysis.pooled import (
    cell_features,
    damage_rate_from_sums,
    icc_anova,
    icc_fleiss_cuzick,
    icc_kleinman,
    miss_rate_event,
    miss_rate_pair,
    pool_statistics_from_sums,
)


def test_moment_estimators_known_answers(kat):
    bb = kat["beta_binomial"]
    expected = bb["moment_estimators"]
    assert icc_anova(bb["x"], bb["n"]) == pytest.approx(expected["anova"], abs=1e-6)
    assert icc_fleiss_cuzick(bb["x"], bb["n"]) == pytest.approx(expected["fleiss_cuzick"], abs=1e-6)
    assert icc_kleinman(bb["x"], bb["n"]) == pytest.approx(expected["kleinman"], abs=1e-6)


def test_anova_matches_one_way_anova_on_the_runs():
    """Independent route: expand every cell into 0/1 runs and do the textbook one-way ANOVA."""
    rng = np.random.default_rng(3)
    n = rng.integers(4, 30, size=25)
    x = rng.binomial(n, rng.beta(1, 3, size=25))
    groups = [np.r_[np.ones(xi), np.zeros(ni - xi)] for xi, ni in zip(x, n, strict=True)]
    grand = np.concatenate(groups).mean()
    k, big_n = len(groups), n.sum()
    ssb = sum(len(g) * (g.mean() - grand) ** 2 for g in groups)
    ssw = sum(((g - g.mean()) ** 2).sum() for g in groups)
    msb, msw = ssb / (k - 1), ssw / (big_n - k)
    n0 = (big_n - (n**2).sum() / big_n) / (k - 1)
    assert icc_anova(x, n) == pytest.approx((msb - msw) / (msb + (n0 - 1) * msw), rel=1e-12)


def test_kleinman_closed_form_matches_explicit_weights():
    rng = np.random.default_rng(4)
    n = rng.integers(3, 40, size=30).astype(float)
    x = rng.binomial(n.astype(int), 0.3).astype(float)
    w = n / n.sum()
    p = x / n
    pw = (w * p).sum()
    s = (w * (p - pw) ** 2).sum()
    num = s - pw * (1 - pw) * (w * (1 - w) / n).sum()
    den = pw * (1 - pw) * ((w * (1 - w)).sum() - (w * (1 - w) / n).sum())
    assert icc_kleinman(x, n) == pytest.approx(num / den, rel=1e-12)


def test_miss_rates_by_hand():
    x, n = [0, 2, 8, 1], [8, 8, 8, 4]
    # damaging pairs: 2/8 (miss 6/8), 8/8 (miss 0), 1/4 (miss 3/4)
    assert miss_rate_pair(x, n) == pytest.approx((0.75 + 0.0 + 0.75) / 3)
    assert miss_rate_event(x, n) == pytest.approx((2 * 0.75 + 8 * 0 + 1 * 0.75) / 11)


def test_miss_rate_undefined_without_damage():
    assert math.isnan(miss_rate_pair([0, 0], [5, 5]))
    assert math.isnan(miss_rate_event([0, 0], [5, 5]))


def test_sums_interface_is_batched():
    x, n = np.array([1, 4, 0, 6]), np.array([8, 8, 8, 8])
    feats = cell_features(x, n)
    batch = np.stack([feats.sum(axis=0), feats[:2].sum(axis=0), 2 * feats.sum(axis=0)])
    out = pool_statistics_from_sums(batch)
    assert out.shape == (3, 6)
    assert damage_rate_from_sums(batch).tolist() == pytest.approx([11 / 32, 5 / 16, 11 / 32])
    assert out[1, 0] == pytest.approx(5 / 16)


def test_icc_undefined_for_a_single_cell_or_no_variation():
    assert math.isnan(icc_anova([3], [8]))
    assert math.isnan(icc_fleiss_cuzick([0, 0, 0], [8, 8, 8]))


def test_bad_counts_rejected():
    with pytest.raises(ValueError):
        cell_features([5], [4])
