"""The report's "Paired differences" section: agents compared run by run on shared seeds (analysis.paired).

Rendering only: each row is a PairedDifference, overall first, then per task.
"""

from __future__ import annotations

from agentrel.analysis.decisions.power import observed_power
from agentrel.analysis.doc import Section, Table
from agentrel.analysis.paired import PairedDifference
from agentrel.analysis.pipeline import Analysis


def _pct(x: float) -> str:
    return "–" if x != x else f"{x * 100:.1f}%"


def _row(d: PairedDifference) -> list[str]:
    sign = "+" if d.difference_pp > 0 else ""
    diff = "–" if d.pairs == 0 else f"{sign}{d.difference_pp:.1f} pp"
    return [
        f"{d.a} − {d.b}",
        d.condition,
        d.task,
        d.axis,
        str(d.pairs),
        _pct(d.a_rate),
        _pct(d.b_rate),
        diff,
        str(d.a_only),
        str(d.b_only),
        f"{d.p_value:.3g}",
        str(d.unpaired),
        _power(observed_power(d.pairs, d.a_only, d.b_only)),
    ]


def _power(p: float | None) -> str:
    return "–" if p is None else f"{p:.0%}"


def power_lines(a: Analysis) -> list[str]:
    """One line per compared pair of agents (damage, every task): the power the comparison had."""
    out = []
    for d in a.paired:
        if d.task != "all" or d.axis != "damage":
            continue
        power = observed_power(d.pairs, d.a_only, d.b_only)
        sign = "+" if d.difference_pp > 0 else ""
        head = (
            f"{d.a} − {d.b} ({d.condition}): damage {sign}{d.difference_pp:.1f} pp over {d.pairs} paired runs"
        )
        if power is None:
            out.append(f"{head}; no difference observed, so no power to state")
        else:
            out.append(
                f"{head}; McNemar at alpha 0.05 had {power:.0%} power to detect a difference this large "
                f"(p = {d.p_value:.3g})"
            )
    return out


def paired_section(a: Analysis) -> Section | None:
    """None when fewer than two agents share a condition: there is nothing to pair."""
    diffs = a.paired
    if not diffs:
        return None
    ordered = sorted(diffs, key=lambda d: (d.condition, d.a, d.b, d.task != "all", d.task, d.axis))
    heads = [
        "A − B",
        "condition",
        "task",
        "axis",
        "pairs",
        "A",
        "B",
        "A − B",
        "A only",
        "B only",
        "p",
        "unpaired",
        "power",
    ]
    return Section(
        "Paired differences",
        [
            "Agents compared run by run: the same task, condition and run index is the same seed, so both "
            "met the same faults and payloads. A − B in percentage points over the pairs; p: exact McNemar "
            "test on the discordant pairs (A only: the event for A and not B), two-sided, not adjusted for "
            "the number of tasks. Unpaired: valid runs of one agent whose partner is invalid or missing, "
            "left out of the pairs and counted here. `agentrel compare` gives the same tests on published "
            "scorecards, with Holm adjustment and bootstrap intervals. Power: the power McNemar's test at "
            "two-sided alpha 0.05 had, with these pairs, to detect a difference as large as the one observed "
            "(Connor's normal approximation at the observed discordant shares; post hoc, so a description of "
            "the study's size, not evidence that the difference is real).",
            Table(heads, [_row(d) for d in ordered]),
        ],
    )
