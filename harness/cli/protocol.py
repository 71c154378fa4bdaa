"""`agentrel protocol freeze|show RESULTS`: bind a results directory's protocol before its measured runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agentrel.harness.cli.registry import KeyFile, RegistryFile, registry_path, signer_of

app = typer.Typer(
    help="A results directory's protocol: freeze it before the measured runs.", no_args_is_help=True
)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

Results = Annotated[Path, typer.Argument(help="A results directory (its manifest.json from `audit --plan`).")]


@app.command()
def freeze(
    results: Results,
    by: Annotated[str, typer.Option("--by", help="Who freezes the protocol (kept in freeze.json).")],
    registry: RegistryFile = None,
    key: KeyFile = None,
) -> None:
    """Write freeze.json (the protocol hash and its parts, who, when) and anchor it with a signed freeze
    entry in the registry. Earlier runs stay evidence, and a directory frozen over runs is never
    published."""
    from agentrel.harness.protocol.freeze import anchor, freeze_digest, write_freeze
    from agentrel.harness.results import layout

    where, signer = registry_path(registry), signer_of(key)
    record, wrote = write_freeze(results, by, registry=where, signer=signer)
    entry = anchor(results, record, registry=where, signer=signer)  # the one write_freeze appended
    if entry.runs_before:
        err.print(
            f"agentrel protocol: the registry anchors this freeze after {entry.runs_before} recorded runs: "
            "this directory will not publish (freeze_after_runs); freeze a new results directory before "
            "its runs",
            markup=False,
        )
    state = "frozen" if wrote else "already frozen"
    out.print(
        f"{results / layout.FREEZE}: {state} by {record.by} at {record.at}: protocol {record.protocol_hash} "
        f"(freeze {freeze_digest(record)[:12]})",
        markup=False,
    )
    out.print(
        f"{where}:{entry.seq + 1}: freeze anchored at {entry.at}, signed by key {signer.public}",
        markup=False,
    )


@app.command()
def show(
    results: Results,
    json_out: Annotated[bool, typer.Option("--json", help="Print the identity as JSON.")] = False,
) -> None:
    """The protocol identity this manifest, policy and code give, and whether a freeze binds it."""
    from agentrel.harness.protocol.binding import load_binding
    from agentrel.harness.protocol.freeze import freeze_digest, load_freeze, planned_manifest
    from agentrel.harness.protocol.identity import diff_identity, identity_of

    identity = identity_of(planned_manifest(results))
    record = load_freeze(results)
    bound = record is not None and record.protocol_hash == identity.protocol_hash
    state = "draft" if record is None else ("frozen" if bound else "frozen under another protocol")
    recorded = load_binding(results)  # what the runs here carry; None before the first audit
    if json_out:
        doc = {
            **identity.model_dump(),
            "state": state,
            "freeze": freeze_digest(record) if record else None,
            "recorded_under": recorded.protocol_hash if recorded else None,
        }
        typer.echo(json.dumps(doc, indent=1))
        return
    for name, value in identity.model_dump().items():
        out.print(f"{name:<24} {value}", markup=False)
    detail = f" (by {record.by} at {record.at}, protocol {record.protocol_hash[:12]})" if record else ""
    out.print(f"{'state':<24} {state}{detail}", markup=False)
    if recorded is None:
        runs = "nothing audited yet"
    elif recorded == identity:
        runs = f"{recorded.protocol_hash[:12]}, as this code gives"
    else:
        parts = ", ".join(diff_identity(recorded, identity) or ["manifest_hash"])
        runs = f"{recorded.protocol_hash[:12]}: another protocol than this code gives (differs: {parts})"
    out.print(f"{'recorded under':<24} {runs}", markup=False)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="protocol")
