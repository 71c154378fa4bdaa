"""`agentrel registry supersede|withdraw|list|repair`: the append-only record of published scorecards."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agentrel.harness.cli.errors import ExitCode

app = typer.Typer(
    help="The append-only registry of published scorecards: supersede, withdraw, list.", no_args_is_help=True
)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

RegistryFile = Annotated[
    Path | None,
    typer.Option(
        "--registry",
        envvar="AGENTREL_REGISTRY",
        help="The registry file (default: $AGENTREL_HOME/registry.jsonl).",
        rich_help_panel="Registry",
    ),
]
Digest = Annotated[str, typer.Argument(help="The scorecard's digest (64 hex digits).")]
Reason = Annotated[str, typer.Option("--reason", help="Why: kept in the registry for good.")]
By = Annotated[str | None, typer.Option("--by", help="Who decides (default: the login name).")]


def registry_path(given: Path | None) -> Path:
    from agentrel.harness.publication.registry import default_registry_path

    return given.absolute() if given is not None else default_registry_path()


@app.command()
def supersede(
    digest: Digest,
    reason: Reason,
    replacement: Annotated[
        str | None, typer.Option("--replacement", help="The amended protocol's hash that replaces it.")
    ] = None,
    by: By = None,
    registry: RegistryFile = None,
) -> None:
    """Mark an active scorecard superseded: it is never compared again."""
    from agentrel.harness.publication.registry import supersede as append

    path = registry_path(registry)
    entry = append(path, digest, reason, replacement, by)
    out.print(f"{path}:{entry.seq + 1}: {digest[:12]} superseded", markup=False)


@app.command()
def withdraw(digest: Digest, reason: Reason, by: By = None, registry: RegistryFile = None) -> None:
    """Withdraw a scorecard (active or superseded): it is never compared again."""
    from agentrel.harness.publication.registry import withdraw as append

    path = registry_path(registry)
    entry = append(path, digest, reason, by)
    out.print(f"{path}:{entry.seq + 1}: {digest[:12]} withdrawn", markup=False)


@app.command("list")
def list_command(
    registry: RegistryFile = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Every registered scorecard and its status, after checking the whole hash chain.

    Exits 1 when the last line is torn (an interrupted append), after listing what is whole."""
    from agentrel.harness.publication.registry import read_registry

    path = registry_path(registry)
    state = read_registry(path)
    from agentrel.harness.cli.tables import emit

    headers = ("digest", "status", "protocol", "subject", "derived from", "why")
    rows: list[tuple[str, ...]] = []
    for digest, record in state.records.items():
        reg, judged = record.registration, record.judgement
        why = (judged.reason or "") if judged else ""
        if judged and judged.replacement:
            why += f" (replaced by protocol {judged.replacement[:12]})"
        # Whole hashes: an identifier cut to a prefix cannot be pasted into `registry supersede`.
        rows.append(
            (
                digest,
                record.status,
                reg.protocol_hash or "",
                reg.subject_config_hash or "",
                reg.derived_from or "",
                why,
            )
        )
    if as_json:
        import json

        typer.echo(
            json.dumps(
                {
                    "registry": str(path),
                    "entries": len(state.entries),
                    "head": state.head,
                    "torn": state.torn is not None,
                    "scorecards": [dict(zip(headers, r, strict=True)) for r in rows],
                },
                indent=1,
            )
        )
    else:
        emit(headers, rows, title=str(path), console=out)
        out.print(f"{len(state.entries)} entries, chain intact; head {state.head}", markup=False)
    if state.torn is not None:
        err.print(
            f"agentrel: error: {path}: the last line is torn ({state.torn.size} bytes at offset "
            f"{state.torn.offset}): `agentrel registry repair` sets it aside",
            markup=False,
        )
        raise typer.Exit(int(ExitCode.FAILED))


@app.command()
def repair(registry: RegistryFile = None) -> None:
    """Set a torn last line aside in a sidecar file (kept) and cut it from the registry."""
    from agentrel.harness.publication.registry import repair as cut

    path = registry_path(registry)
    side = cut(path)
    out.print(f"{path}: whole, nothing to repair" if side is None else f"{path}: torn line moved to {side}")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="registry")
