"""`agentrel registry supersede|withdraw|list|verify|repair|rotate-key|revoke-key`: the append-only, signed
record of freezes and published scorecards, and the keys that sign it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from agentrel.harness.cli.errors import ExitCode
from agentrel.harness.errors import CheckFailed, IntegrityFailure

if TYPE_CHECKING:
    from agentrel.harness.protocol.registry import RegistryState
    from agentrel.harness.protocol.signing import Signer

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
KeyFile = Annotated[
    Path | None,
    typer.Option(
        "--key",
        envvar="AGENTREL_SIGNING_KEY",
        help="The Ed25519 signing key (PEM; default: $AGENTREL_HOME/signing.key, made on first use).",
        rich_help_panel="Signing",
    ),
]
PublicKey = Annotated[
    str | None,
    typer.Option(
        "--public-key",
        envvar="AGENTREL_PUBLIC_KEY",
        help="The publisher's public key to verify against (64 hex; default: your own key's).",
        rich_help_panel="Signing",
    ),
]
Digest = Annotated[str, typer.Argument(help="The scorecard's digest (64 hex digits).")]
Reason = Annotated[str, typer.Option("--reason", help="Why: kept in the registry for good.")]
By = Annotated[str | None, typer.Option("--by", help="Who decides (default: the login name).")]


def registry_path(given: Path | None) -> Path:
    from agentrel.harness.protocol.registry import default_registry_path

    return given.absolute() if given is not None else default_registry_path()


def signer_of(key: Path | None) -> Signer:
    """The user's signing key, made on first use; says so (with its public part) when it was made."""
    from agentrel.harness.protocol.signing import load_signer

    signer = load_signer(key)
    if signer.created:
        err.print(
            f"agentrel: made a signing key at {signer.path} (mode 0600; keep it, back it up): "
            f"public key {signer.public}",
            markup=False,
        )
    return signer


def verified(path: Path, public_key: str | None, key: Path | None, head: str | None = None) -> RegistryState:
    """The registry verified under the trusted key; a failure is one line naming the first bad entry,
    exit 1."""
    from agentrel.harness.protocol.registry import verify
    from agentrel.harness.protocol.signing import trusted_key

    try:
        return verify(path, trusted_key(public_key, key), head)
    except IntegrityFailure as exc:
        raise CheckFailed(f"the registry does not verify: {exc}") from None


def verified_line(state: RegistryState) -> str:
    """What `list` and `verify` checked. An empty registry has no key yet (nothing signed it) and its head
    is the all-zero genesis, so it says that instead of printing a missing key."""
    if state.key is None:
        return f"{len(state.entries)} entries: nothing signed yet, so no key and no head to verify"
    return (
        f"{len(state.entries)} entries, signatures, chain and head verified under key {state.key}; "
        f"head {state.head}"
    )


@app.command()
def supersede(
    digest: Digest,
    reason: Reason,
    replacement: Annotated[
        str | None, typer.Option("--replacement", help="The amended protocol's hash that replaces it.")
    ] = None,
    by: By = None,
    registry: RegistryFile = None,
    key: KeyFile = None,
) -> None:
    """Mark an active scorecard superseded: it is never compared again."""
    from agentrel.harness.protocol.registry import supersede as append

    path = registry_path(registry)
    entry = append(path, digest, reason, replacement, by, signer=signer_of(key))
    out.print(f"{path}:{entry.seq + 1}: {digest[:12]} superseded", markup=False)


@app.command()
def withdraw(
    digest: Digest, reason: Reason, by: By = None, registry: RegistryFile = None, key: KeyFile = None
) -> None:
    """Withdraw a scorecard (active or superseded): it is never compared again."""
    from agentrel.harness.protocol.registry import withdraw as append

    path = registry_path(registry)
    entry = append(path, digest, reason, by, signer=signer_of(key))
    out.print(f"{path}:{entry.seq + 1}: {digest[:12]} withdrawn", markup=False)


@app.command("list")
def list_command(
    registry: RegistryFile = None,
    public_key: PublicKey = None,
    key: KeyFile = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Every registered scorecard and its status, after verifying the registry (`registry verify`).

    Refuses (exit 1) a registry that does not verify; exits 1 when the last line is torn (an interrupted
    append), after listing what is whole."""
    path = registry_path(registry)
    state = verified(path, public_key, key)
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
                    "freezes": len(state.freezes),
                    "key": state.key,
                    "head": state.head,
                    "torn": state.torn is not None,
                    "scorecards": [dict(zip(headers, r, strict=True)) for r in rows],
                },
                indent=1,
            )
        )
    else:
        emit(headers, rows, title=str(path), console=out)
        if state.freezes:
            out.print(f"{len(state.freezes)} freezes anchored", markup=False)
        out.print(verified_line(state), markup=False)
    if state.torn is not None:
        err.print(
            f"agentrel: error: {path}: the last line is torn ({state.torn.size} bytes at offset "
            f"{state.torn.offset}): `agentrel registry repair` sets it aside",
            markup=False,
        )
        raise typer.Exit(int(ExitCode.FAILED))


@app.command("verify")
def verify_command(
    registry: RegistryFile = None,
    public_key: PublicKey = None,
    key: KeyFile = None,
    head: Annotated[
        str | None,
        typer.Option("--head", help="A head hash you kept earlier: the registry must still hold it."),
    ] = None,
) -> None:
    """Check every entry's signature, the hash chain and the signed head, under the trusted key.

    Exits 1 naming the first bad entry: an edited, hand-written or re-chained line, a cut (the head
    vouches for more entries), another publisher's key, or a kept head it no longer holds."""
    path = registry_path(registry)
    state = verified(path, public_key, key, head)
    torn = " (a torn last line: `agentrel registry repair`)" if state.torn else ""
    out.print(f"{path}: {verified_line(state)}{torn}", markup=False)
    if state.void:
        first = state.void[0]
        err.print(
            f"agentrel: {path}:{first.seq + 1}: {len(state.void)} entr(ies) signed by revoked key "
            f"{first.key[:16]} after its revocation: void, they anchor and register nothing",
            markup=False,
        )
    if state.torn is not None or state.void:
        raise typer.Exit(int(ExitCode.FAILED))


@app.command()
def repair(registry: RegistryFile = None, key: KeyFile = None) -> None:
    """Set a torn last line aside in a sidecar file (kept) and cut it from the registry; re-sign a head
    that an interrupted append left behind the file's validly signed entries."""
    from agentrel.harness.protocol.registry import repair as cut
    from agentrel.harness.protocol.registry import resign_head

    path = registry_path(registry)
    side = cut(path)
    out.print(f"{path}: whole, nothing to repair" if side is None else f"{path}: torn line moved to {side}")
    from agentrel.harness.protocol.registry_head import head_path

    if resign_head(path, key=key):
        out.print(f"{head_path(path)}: re-signed over the entries an interrupted append left", markup=False)


@app.command("rotate-key")
def rotate_key(
    registry: RegistryFile = None,
    key: KeyFile = None,
    new_key: Annotated[
        Path | None,
        typer.Option(
            "--new-key",
            help="The new key's file (made if absent; default: a new key at --key's path, "
            "the old one kept beside it as <name>.retired-<its public key>).",
        ),
    ] = None,
) -> None:
    """Rotate the registry to a new signing key: an entry signed by the current key names the new one;
    every later entry and the signed head are the new key's. Entries signed before stay valid."""
    from agentrel.harness.protocol.registry import rotate_key as rotate
    from agentrel.harness.protocol.signing import load_signer

    path = registry_path(registry)
    old = load_signer(key, create=False)
    target = new_key.absolute() if new_key is not None else old.path.with_name(f".{old.path.name}.next")
    new = load_signer(target)
    entry = rotate(path, new, signer=old)
    if new_key is None:  # the new key takes the old one's place; the old one is kept, retired
        retired = old.path.with_name(f"{old.path.name}.retired-{old.public[:16]}")
        old.path.rename(retired)
        target.rename(old.path)
        out.print(f"{retired}: the retired key (keep it offline, or destroy it)", markup=False)
    out.print(
        f"{path}:{entry.seq + 1}: rotated from key {old.public} to {new.public}",
        markup=False,
    )


@app.command("revoke-key")
def revoke_key(
    public: Annotated[str, typer.Argument(help="The public key to revoke (64 hex digits).")],
    since: Annotated[
        str, typer.Option("--from", help="From when its signatures are void (ISO-8601 date or time; UTC).")
    ],
    reason: Reason,
    registry: RegistryFile = None,
    key: KeyFile = None,
) -> None:
    """Revoke an earlier key from a date: what it signed from then on is void (`verify` and `publish`
    refuse it); what it signed before stays valid. Signed by the current key (rotate first)."""
    from agentrel.harness.protocol.registry import revoke_key as revoke
    from agentrel.harness.protocol.signing import load_signer

    path = registry_path(registry)
    entry = revoke(path, public, since, reason, signer=load_signer(key, create=False))
    out.print(f"{path}:{entry.seq + 1}: key {public[:16]} revoked from {entry.revoked_from}", markup=False)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="registry")
