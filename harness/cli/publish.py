"""`agentrel publish RESULTS [--out DIR]`: a scorecard for an eligible matrix, else an evidence report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agentrel.harness.cli.registry import KeyFile, RegistryFile, registry_path, signer_of
from agentrel.harness.errors import CheckFailed

out = Console(highlight=False, soft_wrap=True)


def publish_command(
    results: Annotated[Path, typer.Argument(help="A results directory written by `agentrel audit`.")],
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Where to write (default: the results directory).")
    ] = None,
    registry: RegistryFile = None,
    derived_from: Annotated[
        str | None,
        typer.Option("--derived-from", help="The scorecard digest this one re-evaluates (amended protocol)."),
    ] = None,
    key: KeyFile = None,
) -> None:
    """Validate the frozen matrix (its freeze anchored in the verified registry before its runs); eligible:
    scorecard.json/.md/.html, signed and registered; else evidence_report.json and .md, no scorecard,
    exit 1 with the reason codes."""
    from agentrel.harness.publication.publish import publish

    signer = signer_of(key)
    outcome = publish(
        results, out_dir, registry=registry_path(registry), derived_from=derived_from, signer=signer
    )
    if outcome.report is not None:
        codes = ", ".join(outcome.proof.reasons)
        raise CheckFailed(f"{results}: not publishable ({codes}); evidence report: {outcome.written[0]}")
    card = outcome.scorecard
    assert card is not None
    for path in outcome.written:
        out.print(str(path), markup=False)
    where = f", registered in {registry_path(registry)}" if outcome.registered else ""
    out.print(f"scorecard {card.digest} (protocol {card.protocol_hash[:12]}){where}", markup=False)
    out.print(f"signed by ed25519 public key {signer.public}", markup=False)


def register(root: typer.Typer) -> None:
    root.command("publish")(publish_command)
