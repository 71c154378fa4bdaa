from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special

from agentrel.analysis.decisions.confseq import bounds, precision_decision, sequence, stop_at_half_width
from agentrel.analysis.intervals import clopper_pearson


@pytest.mark.parametrize("n", [1, 5, 10, 100, 1000])
def test_uniform_mixture_closed_forms(n: int) -> None:
    """Robbins (1970), uniform mixing: S = 0 gives upper 1 - (alpha/(n+1))^(1/n); S = n gives lower
    (alpha/(n+1))^(1/n)."""
    alpha = 0.05
    lo, hi = bounds([0, n], [n, n], alpha)
    assert lo[0] == 0.0 and hi[1] == 1.0
    assert hi[0] == pytest.approx(1 - (alpha / (n + 1)) ** (1 / n), rel=1e-12)
    assert lo[1] == pytest.approx((alpha / (n + 1)) ** (1 / n), rel=1e-12)


@pytest.mark.parametrize(("s", "n", "a", "b"), [(3, 10, 1.0, 1.0), (7, 50, 0.5, 0.5), (40, 200, 2.0, 5.0)])
def test_interior_ends_by_root_finding(s: int, n: int, a: float, b: float) -> None:
    """Independent computation: solve M_n(p) = 1/alpha with brentq on the closed-form mixture."""
    alpha = 0.1

    def gap(p: float) -> float:
        log_m = (
            special.betaln(a + s, b + n - s)
            - special.betaln(a, b)
            - s * math.log(p)
            - (n - s) * math.log1p(-p)
        )
        return log_m - math.log(1 / alpha)

    want_lo = optimize.brentq(gap, 1e-12, s / n, xtol=1e-14)
    want_hi = optimize.brentq(gap, s / n, 1 - 1e-12, xtol=1e-14)
    lo, hi = bounds(s, n, alpha, a, b)
    assert float(lo) == pytest.approx(want_lo, abs=1e-10)
    assert float(hi) == pytest.approx(want_hi, abs=1e-10)
    # The sequence is wider than the fixed-n interval at the same level: that is the price of validity.
    cp_lo, cp_hi = clopper_pearson(s, n, alpha)
    assert lo < cp_lo[()] and hi > cp_hi[()]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="alpha"):
        bounds(1, 2, 1.0)
    with pytest.raises(ValueError, match="0 <= S <= n"):
        bounds(3, 2)
    with pytest.raises(ValueError, match="half-width"):
        precision_decision(1, 10, 0.0)
    with pytest.raises(ValueError, match="0 or 1"):
        sequence([0, 2])


def _streams(p: float, count: int, length: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).binomial(1, p, size=(count, length))


def test_coverage_under_optional_stopping() -> None:
    """Stop each stream when the half-width first reaches W; the stopped interval still covers p."""
    alpha, width = 0.1, 0.06
    for p in (0.03, 0.2):
        streams = _streams(p, 400, 1500, seed=int(p * 1000))
        misses = stopped = 0
        for x in streams:
            seq = sequence(x, alpha)
            n = stop_at_half_width(seq, width)
            if n is None:
                continue
            stopped += 1
            misses += not (seq.lower[n - 1] <= p <= seq.upper[n - 1])
        assert stopped > 300
        assert misses / stopped <= alpha


def test_fixed_sample_interval_fails_when_peeked_at() -> None:
    """The attack a confidence sequence stops: look after every run and stop as soon as the interval
    excludes the true rate. A fixed-n Clopper–Pearson interval is then wrong far more often than its
    alpha; the sequence is wrong at most alpha of the time over the whole stream."""
    alpha, p = 0.1, 0.2
    streams = _streams(p, 300, 1000, seed=7)
    n = np.arange(1, streams.shape[1] + 1)
    s = np.cumsum(streams, axis=1)
    cp_lo, cp_hi = clopper_pearson(s.ravel(), np.tile(n, streams.shape[0]), alpha)
    cp_ever = ((cp_lo > p) | (cp_hi < p)).reshape(streams.shape).any(axis=1).mean()
    cs_lo, cs_hi = bounds(s, n, alpha)
    cs_ever = ((cs_lo > p) | (cs_hi < p)).any(axis=1).mean()
    assert cp_ever > 2 * alpha
    assert cs_ever <= alpha


def test_precision_decision() -> None:
    assert precision_decision(0, 10, 0.05) == "continue"
    n = next(n for n in range(1, 5000) if precision_decision(0, n, 0.02) == "done")
    lo, hi = bounds(0, n, 0.05)
    assert (hi - lo) / 2 <= 0.02
    lo, hi = bounds(0, n - 1, 0.05)
    assert (hi - lo) / 2 > 0.02
