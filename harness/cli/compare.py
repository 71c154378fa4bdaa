"""`agentrel compare SCORECARD_A SCORECARD_B [...]`: paired differences of scorecards, or a refusal.

A refusal is one line and exit 5, and nothing is written; only a comparison every check allowed writes
comparison.json and comparison.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from agentrel.harness.cli.registry import KeyFile, PublicKey, RegistryFile, registry_path

if TYPE_CHECKING:
    from agentrel.analysis.claims import ClaimResult
    from agentrel.harness.publication.compare import Comparison

out = Console(highlight=False, soft_wrap=True)


def compare_command(
    scorecards: Annotated[
        list[Path], typer.Argument(help="Two or more scorecard.json files (or the directories holding them).")
    ],
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="Where comparison.json and .md go (default: comparisons/<digests>/)."),
    ] = None,
    registry: RegistryFile = None,
    public_key: PublicKey = None,
    key: KeyFile = None,
) -> None:
    """Compare publishable scorecards on the same protocol, paired on shared seeds; refuse otherwise.

    Refused (one line, exit 5, nothing written) unless every input is a publishable scorecard, all
    share one protocol hash and cell set, their environments conform, their subjects differ, and the
    registry verifies under the trusted key (`--public-key`, else your own) and holds each, signed by that
    key, as active."""
    from agentrel.harness.publication.compare import compare_scorecards, default_out_dir, write_comparison

    comparison = compare_scorecards(scorecards, registry_path(registry), public_key=public_key, key=key)
    where = out_dir or default_out_dir(comparison)
    for path in write_comparison(where, comparison, render_markdown(comparison)):
        out.print(f"wrote {path}", markup=False)
    for pair in comparison.pairs:
        overall = {d.axis: d for d in pair.differences if d.stratum == "all"}
        dmg, done = overall["damage"], overall["completion"]
        out.print(
            f"{pair.a} - {pair.b}: damage {_pp(dmg.difference)} {_interval(dmg.interval)}, "
            f"completion {_pp(done.difference)} {_interval(done.interval)} (percentage points)",
            markup=False,
        )
        for d in (dmg, done):
            if d.below_floor:
                out.print(f"  {d.axis}: {below_floor(d.difference, d.mde)}", markup=False)


def below_floor(difference: float, mde: float | None) -> str:
    """The sentence a difference below the noise floor gets."""
    return (
        f"the difference ({_pp(difference)}) is below the noise floor ({_pp(mde)}, the smallest difference "
        "these pairs and tasks detect with power 0.8): it does not tell the agents apart"
    )


def _pp(x: float | None) -> str:
    """A difference of two rates, in percentage points (a difference is not a percent of anything)."""
    return "n/a" if x is None else f"{100 * x:+.1f} pp"


def _signed(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:+.1f}"


def _rate(x: float) -> str:
    return f"{100 * x:.1f}%"


def _interval(pair: tuple[float | None, float | None]) -> str:
    return f"[{_signed(pair[0])}, {_signed(pair[1])}]"


def _claims(claims: tuple[ClaimResult, ...]) -> list[str]:
    """The pair's confirmatory part: the comparison claims a freeze bound, each with its deciding interval."""
    if not claims:
        return []
    lines = [
        "",
        "### Preregistered claims (confirmatory)",
        "",
        "Each bound by an input's freeze and judged on these paired runs by its frozen criterion "
        "(confirmed: the interval wholly on the claimed side; demoted: wholly on the other; else "
        "inconclusive).",
        "",
        "| claim | statement | bound (model - versus) | estimate | interval | status |",
        "|---|---|---|---|---|---|",
    ]
    for c in claims:
        bound = f"{c.metric} {c.model} - {c.versus} ({c.condition or 'all'}) {c.op} {c.threshold:g}"
        level = f" at {c.level:.0%}" if c.ci_low is not None else ""
        status = f"**{c.status}**" + (f" ({c.note})" if c.note else "")
        lines.append(
            f"| {c.id} | {c.statement} | {bound} | {_signed(c.estimate)} | "
            f"{_interval((c.ci_low, c.ci_high))}{level} | {status} |"
        )
    lines += ["", "### Exploratory"]
    return lines


def render_markdown(comparison: Comparison) -> str:
    level = f"{100 * comparison.level:g}%"
    lines = [
        "# Comparison of publishable scorecards",
        "",
        f"Protocol `{comparison.protocol_hash}`. Every input was active in the registry at head "
        f"`{comparison.registry_head[:16]}`, signed by key `{(comparison.registry_key or '')[:16]}`, and "
        "their environments conform pairwise. Runs are paired on shared seeds.",
        "",
        "| scorecard | digest | subjects | environment |",
        "|---|---|---|---|",
    ]
    for i in comparison.inputs:
        subjects = ", ".join(i.subjects)
        lines.append(f"| {i.name} | `{i.digest[:16]}` | {subjects} | `{i.execution_environment_hash[:16]}` |")
    for pair in comparison.pairs:
        lines += ["", f"## {pair.a} (A) vs {pair.b} (B)", *_claims(pair.claims)]
        lines += [
            "",
            ("Exploratory: no preregistered claim chose these tests. " if pair.claims else "")
            + f"Difference in rates, A - B, in percentage points; {level} intervals. The interval shown is "
            "never narrower than the exact paired one for the same counts (Clopper–Pearson on each "
            "discordant count at half the error, combined): it is the hull of that and the cluster "
            f"bootstrap over tasks (B = {comparison.n_boot}, seed {comparison.seed}), both listed.",
            "",
            "Noise floor: the smallest difference these pairs and tasks detect (two-sided, 80% power, runs "
            "of a task correlated by the fitted ICC); a difference below it does not tell the agents apart.",
            "",
            "| stratum | axis | tasks | pairs | A | B | A only | B only | A - B (pp) | interval (pp) "
            "| exact | bootstrap percentile | BCa | noise floor (pp) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for d in pair.differences:
            floor = "–" if d.mde is None else f"{100 * d.mde:.1f}" + (" (below)" if d.below_floor else "")
            lines.append(
                f"| {d.stratum} | {d.axis} | {d.tasks} | {d.pairs} | {_rate(d.rate_a)} | {_rate(d.rate_b)} | "
                f"{d.a_only} | {d.b_only} | {_signed(d.difference)} | {_interval(d.interval)} | "
                f"{_interval(d.exact)} | {_interval(d.percentile)} | {_interval(d.bca)} | {floor} |"
            )
        lines += [
            f"- {d.stratum}, {d.axis}: {below_floor(d.difference, d.mde)}."
            for d in pair.differences
            if d.below_floor
        ]
        lines += [
            "",
            "Per cell: exact McNemar test on the discordant pairs (two-sided), Holm-adjusted within the "
            "pair and axis.",
            "",
            "| task | condition | fault | axis | pairs | A | B | A only | B only | p | p (Holm) |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for c in pair.cells:
            lines.append(
                f"| {c.task} | {c.condition} | {c.fault or '-'} | {c.axis} | {c.pairs} | {_rate(c.rate_a)} | "
                f"{_rate(c.rate_b)} | {c.a_only} | {c.b_only} | {c.p_value:.4g} | {c.p_holm:.4g} |"
            )
    return "\n".join(lines) + "\n"


def register(root: typer.Typer) -> None:
    root.command("compare")(compare_command)
