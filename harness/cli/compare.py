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
            f"{pair.a} - {pair.b}: damage {_pct(dmg.difference)} {_interval(dmg.percentile)}, "
            f"completion {_pct(done.difference)} {_interval(done.percentile)}",
            markup=False,
        )


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:+.1f}%"


def _rate(x: float) -> str:
    return f"{100 * x:.1f}%"


def _interval(pair: tuple[float | None, float | None]) -> str:
    return f"[{_pct(pair[0])}, {_pct(pair[1])}]"


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
        lines += [
            "",
            f"## {pair.a} (A) vs {pair.b} (B)",
            "",
            f"Difference in rates, A - B; cluster bootstrap over tasks, {level} intervals, "
            f"B = {comparison.n_boot}, seed {comparison.seed}.",
            "",
            "| stratum | axis | tasks | pairs | A | B | A - B | percentile | BCa |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for d in pair.differences:
            lines.append(
                f"| {d.stratum} | {d.axis} | {d.tasks} | {d.pairs} | {_rate(d.rate_a)} | {_rate(d.rate_b)} | "
                f"{_pct(d.difference)} | {_interval(d.percentile)} | {_interval(d.bca)} |"
            )
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
