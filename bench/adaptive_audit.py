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
from agentrel.analysis.decisions.confseq import sequence, stop_at_half_width  # noqa: E402
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


def coverage(rng: np.random.Generator) -> tuple[float, float, float, float]:
    alpha, width, streams, length = 0.05, 0.03, 600, 3000
    print(f"2. coverage at the stopping time (stop when half-width <= {width}), alpha = {alpha}")
    cs_miss = cp_miss = stopped = 0
    for p in (0.02, 0.1, 0.3):
        x = rng.binomial(1, p, size=(streams, length))
        cs_p = cp_p = done = 0
        s = np.cumsum(x, axis=1)
        n = np.arange(1, length + 1)
        cp_lo, cp_hi = clopper_pearson(s.ravel(), np.tile(n, streams), alpha)
        cp_lo, cp_hi = cp_lo.reshape(s.shape), cp_hi.reshape(s.shape)
        for i in range(streams):
            seq = sequence(x[i], alpha)
            t = stop_at_half_width(seq, width)
            if t is not None:
                done += 1
                cs_p += not (seq.lower[t - 1] <= p <= seq.upper[t - 1])
            # fixed-n CP with the same kind of stopping: stop as soon as its half-width reaches W
            hit = np.flatnonzero((cp_hi[i] - cp_lo[i]) / 2 <= width)
            if hit.size:
                j = hit[0]
                cp_p += not (cp_lo[i, j] <= p <= cp_hi[i, j])
        print(f"   p={p:g}: sequence missed {cs_p}/{done}; fixed-n CP missed {cp_p}/{done}")
        cs_miss, cp_miss, stopped = cs_miss + cs_p, cp_miss + cp_p, stopped + done
    # A stopping rule that exploits fixed-n intervals: stop when the interval excludes the truth.
    p = 0.1
    x = rng.binomial(1, p, size=(streams, length))
    s, n = np.cumsum(x, axis=1), np.arange(1, length + 1)
    lo, hi = clopper_pearson(s.ravel(), np.tile(n, streams), alpha)
    ever_cp = ((lo > p) | (hi < p)).reshape(s.shape).any(axis=1).mean()
    ever_cs = np.mean([not np.all((q.lower <= p) & (p <= q.upper)) for q in map(sequence, x)])
    print(
        f"   peeking at every run (p={p:g}): fixed-n CP ever misses {ever_cp:.3f}, "
        f"the sequence ever misses {ever_cs:.3f} (alpha {alpha})"
    )
    return cs_miss / stopped, cp_miss / stopped, float(ever_cs), float(ever_cp)


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
    cs_miss, cp_miss, cs_peek, cp_peek = coverage(rng)
    saved = savings(rng, cells)
    ratio = budget(rng, RatePrior.declared(0.066, 2.25), "published-shaped prior Beta(0.066, 2.25)")
    budget(rng, RatePrior.declared(0.5, 5.0), "declared prior Beta(0.5, 5)")
    print(f"({time.perf_counter() - started:.1f} s)")
    at01, at002 = saved[("fitted", 0.01, 0.95)], saved[("fitted", 0.002, 0.95)]
    optimal = all(abs(s.saved - s.bound) <= 3 * s.se for s in (at01, at002))
    print(
        f"false_cert={false_cert:.4f} cs_miss={cs_miss:.4f} cp_miss={cp_miss:.4f} "
        f"cs_peek_miss={cs_peek:.3f} cp_peek_miss={cp_peek:.3f} "
        f"saved_fitted={at01.saved:.3f} "
        f"saved_fitted_p002={at002.saved:.3f} "
        f"saved_plugin={saved[('plug-in', 0.01, 0.95)].saved:.3f} "
        f"budget_missed_ratio={ratio:.3f} "
        f"bound_fitted={at01.bound:.3f} bound_fitted_p002={at002.bound:.3f} "
        f"optimal={'yes' if optimal else 'no'}"
    )


if __name__ == "__main__":
    main()
