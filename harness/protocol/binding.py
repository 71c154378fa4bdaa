"""The protocol a results directory's runs are recorded under (`protocol.json`).

The manifest alone does not name the instrument: the same manifest labelled by other evaluator code, or
judged under another policy, is another protocol. So the first audit of a directory (or its `--plan`)
writes the manifest's identity under the running policy and code, every record carries that identity's
`protocol_hash`, and each later audit checks that it would record under the same one, so a directory
never mixes runs labelled by two evaluators. Analysis reads this file to know the hash its records must
carry; a freeze (freeze.py) binds the same identity, with who froze it and when.
"""

from __future__ import annotations

from pathlib import Path

from agentrel.harness.durable import read_model, write_durably
from agentrel.harness.errors import EnvironmentFailure, UsageError
from agentrel.harness.protocol.canonical import canonical_bytes
from agentrel.harness.protocol.evaluator import (
    EvaluatorManifest,
    current_evaluator_manifest,
    describe_change,
)
from agentrel.harness.protocol.identity import ProtocolIdentity, diff_identity
from agentrel.harness.results import layout

__all__ = ["bind_protocol", "evaluator_change", "load_binding"]


def load_binding(results: Path) -> ProtocolIdentity | None:
    """The identity the directory's runs are recorded under; None before its first audit."""
    path = results / layout.PROTOCOL
    return read_model(path, ProtocolIdentity, "protocol identity") if path.exists() else None


def bind_protocol(results: Path, identity: ProtocolIdentity, *, has_runs: bool) -> None:
    """Record `identity` as the directory's protocol, or refuse runs under another one (a directory with
    no runs yet is only planned, and takes the new identity).

    The manifest is checked before this (manifest.write_or_check names the fields that differ), so a
    difference here is the policy's, the evaluator code's or the witness contracts'."""
    path = results / layout.PROTOCOL
    old = load_binding(results)
    if old == identity:
        return
    if has_runs and old is None:
        raise UsageError(
            f"{results}: its runs were recorded without a {layout.PROTOCOL} (by an older AgentRel), so the "
            "evaluator that labelled them is unknown; finish them with that version or use another "
            "--results directory"
        )
    if has_runs and old is not None:
        parts = diff_identity(old, identity) or ["manifest_hash"]
        raise UsageError(
            f"{path}: the runs here are recorded under protocol {old.protocol_hash[:12]}, but this "
            f"manifest and code give {identity.protocol_hash[:12]} (differs: {', '.join(parts)})"
            f"{evaluator_change(results, old.evaluator_digest, identity.evaluator_digest)}; use another "
            "--results directory, or the code and libraries that recorded them"
        )
    evaluator = current_evaluator_manifest()
    try:
        write_durably(path, canonical_bytes(identity.model_dump(mode="json")))
        if evaluator.digest == identity.evaluator_digest:  # what the digest was computed from, to name
            # what moved it later (a test may bind another digest; then there is nothing to describe)
            write_durably(results / layout.EVALUATOR, canonical_bytes(evaluator.model_dump(mode="json")))
    except OSError as exc:
        raise EnvironmentFailure(f"{path}: cannot write the protocol identity ({exc.strerror})") from None


def evaluator_change(results: Path, recorded: str, current: str) -> str:
    """`: <what changed>` when the evaluator digest moved and the directory kept what it was made from
    (`evaluator.json`, written since this version); empty otherwise."""
    if recorded == current:
        return ""
    path = results / layout.EVALUATOR
    try:
        old = EvaluatorManifest.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return " (which libraries or files changed is unknown: the directory has no readable evaluator.json)"
    if old.digest != recorded:
        return f" ({path} does not match the recorded digest, so what changed cannot be named)"
    return f" — the evaluator changed: {describe_change(old, current_evaluator_manifest())}"
