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
    claims: Annotated[
        Path | None,
        typer.Option(
            "--claims",
            help="A claims file (YAML or JSON): the findings the publication will judge, each a bound on a "
            "pooled statistic and the held-out pool it is judged on. Copied to claims.json and bound by "
            "the freeze; refused once the directory holds runs or an earlier freeze.",
        ),
    ] = None,
) -> None:
    """Write freeze.json (the protocol hash and its parts, who, when) and anchor it with a signed freeze
    entry in the registry. Earlier runs stay evidence, and a directory frozen over runs is never
    published."""
    from agentrel.harness.protocol.claims import read_claims_file
    from agentrel.harness.protocol.freeze import anchor, freeze_digest, write_freeze
    from agentrel.harness.results import layout

    where, signer = registry_path(registry), signer_of(key)
    frozen_claims = read_claims_file(claims) if claims is not None else None
    record, wrote = write_freeze(results, by, registry=where, signer=signer, claims=frozen_claims)
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
    if record.claims_hash is not None:
        out.print(f"claims bound: claims.json {record.claims_hash[:12]}", markup=False)
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
            "claims_hash": record.claims_hash if record else None,
            "recorded_under": recorded.protocol_hash if recorded else None,
        }
        typer.echo(json.dumps(doc, indent=1))
        return
    for name, value in identity.model_dump().items():
        out.print(f"{name:<24} {value}", markup=False)
    detail = f" (by {record.by} at {record.at}, protocol {record.protocol_hash[:12]})" if record else ""
    out.print(f"{'state':<24} {state}{detail}", markup=False)
    if record is not None:
        claims = f"claims.json {record.claims_hash}" if record.claims_hash else "none preregistered"
        out.print(f"{'claims':<24} {claims}", markup=False)
    if recorded is None:
        runs = "nothing audited yet"
    elif recorded == identity:
        runs = f"{recorded.protocol_hash[:12]}, as this code gives"
    else:
        parts = ", ".join(diff_identity(recorded, identity) or ["manifest_hash"])
        runs = f"{recorded.protocol_hash[:12]}: another protocol than this code gives (differs: {parts})"
    out.print(f"{'recorded under':<24} {runs}", markup=False)


@app.command("claims")
def claims_command(
    input: Annotated[
        Path, typer.Argument(help="A results directory or an outcomes CSV (its `pool` column).")
    ],
    claims: Annotated[Path, typer.Option("--claims", help="The claims file (YAML or JSON).")],
    bootstrap: Annotated[int, typer.Option("--bootstrap", min=1, help="Cluster-bootstrap resamples.")] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the resamples.")] = 0,
    json_out: Annotated[bool, typer.Option("--json", help="Print the judged claims as JSON.")] = False,
    allow_mixed_protocols: Annotated[
        bool, typer.Option("--allow-mixed-protocols", help="Pool records of different protocol hashes.")
    ] = False,
) -> None:
    """Judge a claims file on an input now, by its own criterion: to check a claims file before freezing
    it, or to reproduce a finding on an outcomes CSV. Only claims a freeze bound are confirmatory; this
    says whether INPUT's freeze bound exactly these."""
    from agentrel.analysis.claims_judge import csv_row_pools, judge_claims
    from agentrel.analysis.inputs import load_input
    from agentrel.analysis.normalized import InputError
    from agentrel.harness.errors import UserError
    from agentrel.harness.protocol.claims import claims_hash, read_claims_file
    from agentrel.harness.protocol.freeze import load_freeze

    cf = read_claims_file(claims)
    try:
        loaded = load_input(input, allow_mixed_protocols=allow_mixed_protocols)
    except InputError as exc:
        raise UserError(str(exc)) from None
    pools = csv_row_pools(input) if loaded.kind == "csv" else None
    judged = judge_claims(cf, loaded, row_pools=pools, n_boot=bootstrap, seed=seed)
    record = load_freeze(input) if input.is_dir() else None
    bound = record is not None and record.claims_hash == claims_hash(cf)
    standing = (
        "preregistered: the freeze of INPUT binds these claims"
        if bound
        else "not bound by a freeze of INPUT: exploratory"
    )
    typer.echo(f"agentrel protocol: {claims}: {standing}", err=True)
    if json_out:
        typer.echo(json.dumps({"preregistered": bound, "claims": [r.model_dump() for r in judged]}, indent=1))
        return
    for r in judged:
        interval = "n/a" if r.ci_low is None or r.ci_high is None else f"[{r.ci_low:.4g}, {r.ci_high:.4g}]"
        estimate = "n/a" if r.estimate is None else f"{r.estimate:.4g}"
        pool = r.judged_on or "all runs"
        out.print(
            f"{r.id}: {r.status} ({r.metric} {r.op} {r.threshold:g} on {pool}: {estimate} {interval} at "
            f"{r.level:.0%}, {r.runs} runs, {r.tasks} tasks)" + (f"; {r.note}" if r.note else ""),
            markup=False,
        )


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="protocol")
