"""The protocol a results directory's runs are recorded under (`protocol.json`).

The manifest alone does not name the instrument: the same manifest labelled by other evaluator code, or
judged under another policy, is another protocol. So the first audit of a directory (or its `--plan`)
writes the manifest's identity under the running policy and code, every record carries that identity's
`protocol_hash`, and each later audit checks that it would record under the same one, so a directory
never mixes runs labelled by two evaluators. Analysis reads this file to know the hash its records must
carry; a freeze (freeze.py) binds the same identity, with who froze it and when.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import ValidationError

from harness.errors import EnvironmentFailure, UsageError, UserError
from harness.publication.canonical import canonical_bytes
from harness.publication.identity import ProtocolIdentity, diff_identity

__all__ = ["PROTOCOL_FILE", "bind_protocol", "load_binding"]

PROTOCOL_FILE = "protocol.json"


def load_binding(results: Path) -> ProtocolIdentity | None:
    """The identity the directory's runs are recorded under; None before its first audit."""
    path = results / PROTOCOL_FILE
    if not path.exists():
        return None
    try:
        return ProtocolIdentity.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise UserError(f"{path}: cannot read it: {exc.strerror}") from None
    except ValidationError as exc:
        from harness.yamlfile import field_problem

        raise UserError(f"{path}: not a protocol identity: {field_problem(exc)}; restore the file") from None


def bind_protocol(results: Path, identity: ProtocolIdentity, *, has_runs: bool) -> None:
    """Record `identity` as the directory's protocol, or refuse runs under another one (a directory with
    no runs yet is only planned, and takes the new identity).

    The manifest is checked before this (manifest.write_or_check names the fields that differ), so a
    difference here is the policy's, the evaluator code's or the witness contracts'."""
    path = results / PROTOCOL_FILE
    old = load_binding(results)
    if old == identity:
        return
    if has_runs and old is None:
        raise UsageError(
            f"{results}: its runs were recorded without a {PROTOCOL_FILE} (by an older AgentRel), so the "
            "evaluator that labelled them is unknown; finish them with that version or use another "
            "--results directory"
        )
    if has_runs and old is not None:
        parts = diff_identity(old, identity) or ["manifest_hash"]
        raise UsageError(
            f"{path}: the runs here are recorded under protocol {old.protocol_hash[:12]}, but this "
            f"manifest and code give {identity.protocol_hash[:12]} (differs: {', '.join(parts)}); "
            "use another --results directory, or the AgentRel version that recorded them"
        )
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as fh:
            fh.write(canonical_bytes(identity.model_dump(mode="json")))
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise EnvironmentFailure(f"{path}: cannot write the protocol identity ({exc.strerror})") from None
