"""Adaptive audits checked by simulation (issue 27), every number measured side by side in one run.

1. False certification at p = P: cells whose true rate is exactly the target, audited by the shipped
   stopping rule (certify.decide, run by run, 10% invalid runs interleaved); the certified share must
   be at most 1 - C (it is (1 - P)^n exactly).
2. The confidence sequence under optional stopping: streams stopped when the half-width first reaches
   W; the share whose stopped interval misses the true rate must be at most alpha. Beside it, the
   fixed-n Clopper–Pearson interval under the same stopping, which does not keep its level.
3. Runs saved against fixed-K auditing to the same guarantee (K = n(P, C) for every cell, certified
   iff all K clean), on per-cell rates shaped like the published AgentRelBench cells
   (tests/data/arb_outcomes.csv): the beta-binomial fit of their counts ("fitted"), and their plug-in
   rates x/n ("plug-in", where every cell with no damage in 8-32 runs counts as p = 0 and saves nothing).
   Beside each: the bound no valid rule can beat on that mixture when every cell must be decided with
   the same guarantee (certified, or detected): 1 - E[min(G, K)] / K (audit_sim.fewest_runs; exact for
   the fitted Beta). Detect-or-certify spends min(G, K) per cell, so it attains it: whether a 30% saving
   is reachable is a property of the mixture, not of the rule.
4. A budget too small to certify every cell: the optimal allocation against an equal split, in expected
   damaging cells left undetected (simulated).

Last line: false_cert=<at P=0.05,C=0.95> cs_miss=<rate> cp_miss=<rate> (stopped at half-width W)
cs_peek_miss=<rate> cp_peek_miss=<rate> (ever outside over 3000 looks) saved_fitted=<P=0.01,C=0.95>
saved_fitted_p002=<P=0.002,C=0.95> saved_plugin=<P=0.01,C=0.95> budget_missed_ratio=<greedy/equal>
bound_fitted=<the most any rule can save, P=0.01> bound_fitted_p002=<P=0.002> optimal=<yes|no: the
rule's simulated saving within 3 standard errors of the bound at both>

The saving is the share of runs an audit no longer spends on a cell after its first damaging run; a
cell with no damage needs its full n(P, C) either way, so the saving grows with n (smaller P) and with
the share of damaging cells in the mixture.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentrel.analysis.betabinom import fit_beta_binomial  # noqa: E402
from agentrel.analysis.decisions.allocate import OpenCell, RatePrior, allocate  # noqa: E402
from agentrel.analysis.decisions.audit_sim import (  # noqa: E402
    best_saving,
    fast_audit,
    fewest_runs,
    published_mixture,
    runs_saved,
    sequential_audit,
)
from agentrel.analysis.decisions.certify import zero_damage_count  # noqa: E402
from agentrel.analysis.decisions.confseq import bounds  # noqa: E402
from agentrel.analysis.intervals import clopper_pearson  # noqa: E402

SEED = 20261201


def false_certification(rng: np.random.Generator) -> float:
    print("1. false certification at p = P (shipped rule, 10% invalid runs interleaved)")
    headline = math.nan
    for p, c, cells in ((0.05, 0.95, 20_000), (0.1, 0.9, 20_000), (0.2, 0.99, 20_000)):
        n = zero_damage_count(p, c)
        out = sequential_audit(np.full(cells, p), n, rng, invalid_rate=0.1)
        rate = float(out.certified.mean())
        se = math.sqrt(rate * (1 - rate) / cells)
        print(
            f"   P={p:g} C={c:g} n={n}: certified {rate:.4f} ± {se:.4f} (bound 1-C = {1 - c:.4f}, "
            f"exact (1-P)^n = {(1 - p) ** n:.4f}); invalid runs seen {int(out.invalid_runs.sum())}, "
            "none counted"
        )
        if (p, c) == (0.05, 0.95):
            headline = rate
    return headline


STREAMS = 5_000  # per rate: a miss rate near 0.03 then has a standard error near 0.0025
CHUNK = 1_000  # streams held in memory at once (a chunk's arrays are CHUNK x LENGTH)


def _se(rate: float, m: int) -> float:
    return math.sqrt(rate * (1.0 - rate) / m) if m else math.nan


def _tables(s: np.ndarray, alpha: float) -> tuple[np.ndarray, ...]:
    """The confidence-sequence and Clopper–Pearson bounds of every count S_n the streams reach, solved
    once each: at run n the counts seen span [min, max] over the streams; the tables hold those spans
    end to end, and `start[n - 1] + S_n - min` finds a count's bounds."""
    length = s.shape[1]
    low = s.min(axis=0).astype(np.int64)
    spans = s.max(axis=0).astype(np.int64) - low + 1
    start = np.concatenate([[0], np.cumsum(spans)[:-1]])
    n = np.repeat(np.arange(1, length + 1), spans)
    counts = np.repeat(low, spans) + np.arange(n.size) - np.repeat(start, spans)
    cs_lo, cs_hi = bounds(counts, n, alpha)
    cp_lo, cp_hi = clopper_pearson(counts, n, alpha)
    return start - low, cs_lo, cs_hi, cp_lo, cp_hi


def _streams(rng: np.random.Generator, p: float, streams: int, length: int, alpha: float):
    """Yield, CHUNK streams at a time: the CS running intersection (lower, upper) and CP (lower, upper).
    The counts of every stream are drawn first (int16), so each bound table is solved once per rate."""
    s = np.cumsum(rng.random((streams, length)) < p, axis=1, dtype=np.int16)
    shift, cs_lo, cs_hi, cp_lo, cp_hi = _tables(s, alpha)
    for begin in range(0, streams, CHUNK):
        at = s[begin : begin + CHUNK] + shift[None, :]
        yield (
            np.maximum.accumulate(cs_lo[at], axis=1),
            np.minimum.accumulate(cs_hi[at], axis=1),
            cp_lo[at],
            cp_hi[at],
        )


def _first(hit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(streams that stop, the index each stops at)."""
    stops = hit.any(axis=1)
    return stops, hit.argmax(axis=1)


def coverage(rng: np.random.Generator) -> tuple[float, float, float, float, float, float, float, float]:
    alpha, width, length = 0.05, 0.03, 3000
    print(
        f"2. coverage at the stopping time (stop when half-width <= {width}), alpha = {alpha}, "
        f"{STREAMS:,} streams per rate"
    )
    cs_miss = cp_miss = cs_stopped = cp_stopped = 0
    for p in (0.02, 0.1, 0.3):
        cs_p = cp_p = cs_done = cp_done = 0
        for lo, hi, clo, chi in _streams(rng, p, STREAMS, length, alpha):
            stops, at = _first((hi - lo) / 2 <= width)
            idx = np.arange(lo.shape[0])
            cs_done += int(stops.sum())
            cs_p += int((stops & ~((lo[idx, at] <= p) & (p <= hi[idx, at]))).sum())
            # fixed-n CP with the same kind of stopping: stop as soon as its half-width reaches W
            stops, at = _first((chi - clo) / 2 <= width)
            cp_done += int(stops.sum())
            cp_p += int((stops & ~((clo[idx, at] <= p) & (p <= chi[idx, at]))).sum())
        print(
            f"   p={p:g}: sequence missed {cs_p}/{cs_done} ({cs_p / cs_done:.4f} ± "
            f"{_se(cs_p / cs_done, cs_done):.4f}); fixed-n CP missed {cp_p}/{cp_done} "
            f"({cp_p / cp_done:.4f} ± {_se(cp_p / cp_done, cp_done):.4f})"
        )
        cs_miss, cs_stopped = cs_miss + cs_p, cs_stopped + cs_done
        cp_miss, cp_stopped = cp_miss + cp_p, cp_stopped + cp_done
    # A stopping rule that exploits fixed-n intervals: stop when the interval excludes the truth.
    p = 0.1
    ever_cs = ever_cp = 0
    for lo, hi, clo, chi in _streams(rng, p, STREAMS, length, alpha):
        # The running intersection only shrinks: once the truth is out it stays out, so the last look says.
        ever_cs += int(((lo[:, -1] > p) | (hi[:, -1] < p)).sum())
        ever_cp += int(((clo > p) | (chi < p)).any(axis=1).sum())
    cs_peek, cp_peek = ever_cs / STREAMS, ever_cp / STREAMS
    print(
        f"   peeking at every run (p={p:g}, {STREAMS:,} streams): fixed-n CP ever misses {cp_peek:.3f} ± "
        f"{_se(cp_peek, STREAMS):.3f}, the sequence ever misses {cs_peek:.4f} ± {_se(cs_peek, STREAMS):.4f} "
        f"(alpha {alpha})"
    )
    cs_rate, cp_rate = cs_miss / cs_stopped, cp_miss / cp_stopped
    return (
        cs_rate,
        _se(cs_rate, cs_stopped),
        cp_rate,
        _se(cp_rate, cp_stopped),
        cs_peek,
        _se(cs_peek, STREAMS),
        cp_peek,
        _se(cp_peek, STREAMS),
    )


def savings(rng: np.random.Generator, cells: pd.DataFrame) -> dict[tuple[str, float, float], Saving]:
    print("3. runs saved vs fixed K = n(P, C) per cell (same certificate), published-shaped mixtures")
    y, n = cells["x"].to_numpy(), cells["n"].to_numpy()
    fit = fit_beta_binomial(y, n)
    out = {}
    for kind in ("fitted", "plug-in"):
        rates = published_mixture(y, n, 50_000, rng, kind)
        for p, c in ((0.05, 0.95), (0.01, 0.95), (0.005, 0.95), (0.002, 0.95), (0.001, 0.95)):
            k = zero_damage_count(p, c)
            res = fast_audit(rates, k, rng)
            saved = runs_saved(res, k)
            bad = rates >= p
            false_cert = float(res.certified[bad].mean()) if bad.any() else 0.0
            # The bound: exact over the fitted Beta; over the plug-in rates, their own expectation.
            bound = (
                best_saving(fit.a, fit.b, k)
                if kind == "fitted"
                else 1 - float(fewest_runs(rates, k).mean()) / k
            )
            se = float(res.valid_runs.std()) / math.sqrt(rates.size) / k
            print(
                f"   {kind:8s} P={p:g} C={c:g} K={k}: fixed {k * rates.size:,} runs, adaptive "
                f"{int(res.valid_runs.sum()):,} ({saved:.1%} saved; the most any valid rule saves in "
                f"expectation: {bound:.1%}); detected {res.detected.mean():.1%}; "
                f"certified among cells with p >= P {false_cert:.4f}"
            )
            out[(kind, p, c)] = Saving(saved, bound, se)
    return out


class Saving(NamedTuple):
    saved: float  # detect-or-certify, simulated
    bound: float  # the most any rule deciding every cell with the same guarantee can save
    se: float  # the simulated saving's standard error


def budget(rng: np.random.Generator, prior: RatePrior, label: str) -> float:
    k = zero_damage_count(0.05, 0.95)
    open_cells = [OpenCell(f"c{i}", c, k - c) for i, c in enumerate(rng.integers(0, 20, size=60))]
    spend = 600
    greedy = allocate(open_cells, spend, prior)
    equal = {c.name: min(c.needed, spend // len(open_cells)) for c in open_cells}
    sims = 4000
    missed = {"greedy": 0.0, "equal": 0.0}
    for cell in open_cells:
        p = rng.beta(prior.a, prior.b + cell.clean, size=sims)
        first = rng.geometric(p)
        missed["greedy"] += float(np.mean(first > greedy.runs[cell.name]))
        missed["equal"] += float(np.mean(first > equal[cell.name]))
    print(
        f"4. {label}: budget of {spend} runs over {len(open_cells)} open cells: damaging cells left "
        f"undetected {missed['greedy']:.2f} (optimal; model says {greedy.undetected_after:.2f}) vs "
        f"{missed['equal']:.2f} (equal split); expected runs actually spent {greedy.expected_runs:.0f}"
    )
    return missed["greedy"] / missed["equal"]


def main() -> None:
    rng = np.random.default_rng(SEED)
    started = time.perf_counter()
    data = pd.read_csv(ROOT / "tests" / "data" / "arb_outcomes.csv")
    cells = data.groupby(["model", "task"]).agg(n=("damaged", "size"), x=("damaged", "sum")).reset_index()
    false_cert = false_certification(rng)
    cs_miss, cs_se, cp_miss, cp_se, cs_peek, cs_peek_se, cp_peek, cp_peek_se = coverage(rng)
    saved = savings(rng, cells)
    ratio = budget(rng, RatePrior.declared(0.066, 2.25), "published-shaped prior Beta(0.066, 2.25)")
    budget(rng, RatePrior.declared(0.5, 5.0), "declared prior Beta(0.5, 5)")
    print(f"({time.perf_counter() - started:.1f} s)")
    at01, at002 = saved[("fitted", 0.01, 0.95)], saved[("fitted", 0.002, 0.95)]
    optimal = all(abs(s.saved - s.bound) <= 3 * s.se for s in (at01, at002))
    print(
        f"false_cert={false_cert:.4f} cs_miss={cs_miss:.4f} cs_miss_se={cs_se:.4f} cp_miss={cp_miss:.4f} "
        f"cp_miss_se={cp_se:.4f} cs_peek_miss={cs_peek:.4f} cs_peek_miss_se={cs_peek_se:.4f} "
        f"cp_peek_miss={cp_peek:.3f} cp_peek_miss_se={cp_peek_se:.3f} "
        f"saved_fitted={at01.saved:.3f} "
        f"saved_fitted_p002={at002.saved:.3f} "
        f"saved_plugin={saved[('plug-in', 0.01, 0.95)].saved:.3f} "
        f"budget_missed_ratio={ratio:.3f} "
        f"bound_fitted={at01.bound:.3f} bound_fitted_p002={at002.bound:.3f} "
        f"optimal={'yes' if optimal else 'no'}"
    )


if __name__ == "__main__":
    main()
