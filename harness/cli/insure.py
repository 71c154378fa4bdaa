"""`agentrel insure RESULTS --volume N [--mix task=share,...] [--price realised|all] [--json]`: the aggregate
annual loss distribution of deploying an agent, and a premium under a named principle
(analysis/decisions/insure). The premium prices the realised loss by default; reversible damage is value
at stake, reported beside it (`realised_loss`, `reversible_at_stake`)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from agentrel.harness.cli.analyze import INPUT_HELP, MixedOpt, SeedOpt, load
from agentrel.harness.errors import UsageError, UserError

if TYPE_CHECKING:
    from agentrel.analysis.decisions.evidence import Part
    from agentrel.analysis.decisions.insure import LossSummary

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def parse_mix(text: str | None) -> dict[str, float] | None:
    """'t1=0.5,t2=0.5' -> {t1: 0.5, t2: 0.5}; one-line UsageError naming the bad item."""
    if text is None:
        return None
    mix: dict[str, float] = {}
    for item in (part.strip() for part in text.split(",")):
        task, eq, share = item.partition("=")
        try:
            value = float(share)
        except ValueError:
            value = math.nan
        if not eq or not task.strip() or not math.isfinite(value) or value < 0:
            raise UsageError(f"--mix item {item!r} is not task=share with a share >= 0 (e.g. t1=0.6,t2=0.4)")
        if task.strip() in mix:
            raise UsageError(f"--mix names task {task.strip()!r} twice")
        mix[task.strip()] = value
    if not math.isclose(sum(mix.values()), 1.0, abs_tol=1e-9):
        raise UsageError(f"--mix shares sum to {sum(mix.values()):g}, not 1; give shares that add up to 1")
    return mix


CURRENCY = "USD"  # every price in a damage spec and in prices.yaml is in US dollars
PRICES = {
    "realised": "realised_loss",
    "all": "all_priced",
}
BASIS = {
    "realised": "realised loss (substrate and governance damage; reversible value at stake not priced)",
    "all": "every priced dollar (realised loss plus reversible value at stake)",
}


def render(
    s: LossSummary,
    agent: str,
    condition: str,
    invalid: int,
    price: str = "all",
    parts: dict[str, LossSummary] | None = None,
) -> str:
    """The report section (Markdown)."""
    money = "${:,.2f}".format
    lines = [
        f"## Annual loss: {agent} ({condition}), {s.volume:,} tasks a year",
        "",
        f"Priced: {BASIS[price]}.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| expected annual loss | {money(s.expected_loss)} |",
        f"| standard deviation | {money(s.std)} |",
        f"| VaR 99% / 99.5% | {money(s.var_99)} / {money(s.var_995)} |",
        f"| TVaR 99% / 99.5% | {money(s.tvar_99)} / {money(s.tvar_995)} |",
        f"| premium ({s.principle}) | {money(s.premium)} |",
        f"| unpriced damaging runs (counted as damage, sized by priced ones) | {s.unpriced_damaging_runs} |",
        f"| invalid runs (not in any rate) | {invalid} |",
        *(
            f"| {label}: expected / VaR 99% | {money(p.expected_loss)} / {money(p.var_99)} |"
            for label, p in (
                ("realised loss", (parts or {}).get("realised_loss")),
                ("reversible value at stake", (parts or {}).get("reversible_at_stake")),
            )
            if p is not None
        ),
        "",
        f"Frequency: {s.frequency} per-task Beta distributions; mix "
        + ", ".join(f"{t}={v:g}" for t, v in s.mix.items())
        + ". Severity: "
        + ", ".join(f"{t} {src}" for t, src in s.severity_source.items())
        + f". Quantiles from {s.simulations:,} simulations (seed {s.seed}); the simulated mean "
        f"{money(s.mc_expected_loss)} is within Monte Carlo error {money(s.mc_error)} of the exact one.",
        "",
        "Assumes: " + "; ".join(s.assumptions) + ".",
    ]
    return "\n".join(lines) + "\n"


def insure_command(
    results: Annotated[Path, typer.Argument(help=INPUT_HELP)],
    volume: Annotated[int, typer.Option("--volume", help="Tasks the agent executes a year.")],
    mix: Annotated[
        str | None, typer.Option("--mix", help="Share of each task, task=share,... summing to 1 [equal].")
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="The agent (when the results hold several).")
    ] = None,
    condition: Annotated[
        str | None, typer.Option("--condition", help="The condition (when several).")
    ] = None,
    frequency: Annotated[
        str, typer.Option("--frequency", help="posterior (Jeffreys per task) or betabinom (fitted, shrunk).")
    ] = "posterior",
    principle: Annotated[
        str, typer.Option("--principle", help="Premium principle: std_dev, expected_value or quantile.")
    ] = "std_dev",
    loading: Annotated[
        float, typer.Option("--loading", help="theta: sd multiple, EV loading, or the quantile level.")
    ] = 0.5,
    simulations: Annotated[int, typer.Option("--simulations", min=1000, help="Monte Carlo draws.")] = 20_000,
    seed: SeedOpt = 0,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the fixed JSON keys instead of the report.")
    ] = False,
    report: Annotated[
        Path | None, typer.Option("--report", help="Also write the Markdown section here.")
    ] = None,
    csv_file: Annotated[
        str | None,
        typer.Option("--csv", help="Also write the JSON keys as a one-row CSV to this file (- for stdout)."),
    ] = None,
    price: Annotated[
        str,
        typer.Option(
            "--price",
            help="What the premium prices: realised (loss that stands; reversible damage is value at "
            "stake) or all (every priced dollar).",
        ),
    ] = "realised",
    allow_mixed_protocols: MixedOpt = False,
) -> None:
    """Expected annual loss, its spread, VaR/TVaR at 99% and 99.5% and a premium, with what is assumed."""
    from agentrel.analysis.decisions.evidence import task_evidence
    from agentrel.analysis.decisions.insure import PRINCIPLES, InsureError, annual_loss

    if volume < 1:
        raise UsageError(f"--volume must be a positive number of tasks per year, got {volume}")
    if frequency not in ("posterior", "betabinom"):
        raise UsageError(f"--frequency must be posterior or betabinom, got {frequency!r}")
    if principle not in PRINCIPLES:
        raise UsageError(f"--principle must be one of {', '.join(PRINCIPLES)}, got {principle!r}")
    if not math.isfinite(loading) or loading < 0:
        raise UsageError(f"--loading must be a non-negative number, got {loading}")
    if price not in PRICES:
        raise UsageError(f"--price must be realised or all, got {price!r}")
    if csv_file == "-" and as_json:
        raise UsageError("--csv - and --json both write to stdout; give --csv a file name, or drop one")
    shares = parse_mix(mix)
    loaded = load(results, allow_mixed_protocols)

    def model(part: Part) -> tuple[str, str, LossSummary, int]:
        name, cond, evidence, invalid = task_evidence(
            loaded.runs, loaded.invalid, agent, condition, loaded.events, part
        )
        summary = annual_loss(
            evidence,
            volume,
            shares,
            frequency=frequency,  # type: ignore[arg-type]
            principle=principle,  # type: ignore[arg-type]
            theta=loading,
            simulations=simulations,
            seed=seed,
        )
        return name, cond, summary, invalid

    try:
        name, cond, realised, invalid = model("realised")
        parts = {"realised_loss": realised, "reversible_at_stake": model("reversible")[2]}
        summary = realised if price == "realised" else model("all")[2]
    except InsureError as exc:
        raise UserError(f"{results}: {exc}") from None
    doc = document(summary, parts, name, cond, volume, price)
    text = render(summary, name, cond, invalid, price, parts)
    if report is not None:
        report.write_text(text)
    if csv_file is not None:
        write_csv(csv_file, doc, summary.principle)
    if as_json:
        typer.echo(json.dumps(doc, sort_keys=False))
    elif csv_file != "-":
        out.print(text, markup=False)


def document(
    summary: LossSummary, parts: dict[str, LossSummary], agent: str, condition: str, volume: int, price: str
) -> dict[str, object]:
    """The JSON of `insure --json`: the priced loss's fixed keys, what it prices, and both parts."""
    return {
        **summary.keys(),
        "currency": CURRENCY,
        "agent": agent,
        "condition": condition,
        "volume": volume,
        "prices": PRICES[price],
        **{key: part.risk() for key, part in parts.items()},
    }


def write_csv(target: str, doc: dict[str, object], principle: str) -> None:
    """One row: the flat keys, then each part's measures prefixed by the part (`realised_loss_std`)."""
    import csv
    import io

    row: dict[str, object] = {}
    for key, value in doc.items():
        if isinstance(value, dict):
            row.update({f"{key}_{k}": v for k, v in value.items()})
        else:
            row[key] = value
    row["principle"] = principle
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(row), lineterminator="\n")
    writer.writeheader()
    writer.writerow(row)
    if target == "-":
        typer.echo(buffer.getvalue(), nl=False)
        return
    try:
        Path(target).write_text(buffer.getvalue())
    except OSError as exc:
        raise UsageError(f"--csv {target}: cannot write it ({exc.strerror}); give a writable path") from None


def register(app: typer.Typer) -> None:
    """Add `insure` to the root app."""
    app.command("insure")(insure_command)
