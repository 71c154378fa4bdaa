"""Building the manifest (`harness.results.manifest.Manifest`) from the audit's request and what it
resolved, and writing it as RFC 8785 canonical JSON. Its SHA-256 (the results owner's `manifest_hash`)
is one part of the protocol identity (protocol.identity).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import rfc8785

from agentrel.distribution import installed_version
from agentrel.harness.errors import UsageError
from agentrel.harness.results import layout
from agentrel.harness.results.manifest import Manifest, TaskEntry, manifest_hash, read_manifest
from agentrel.harness.run.request import AuditRequest
from agentrel.harness.tasks import Task


def package_version() -> str:
    return installed_version() or "0+unknown"


def build_manifest(
    request: AuditRequest,
    *,
    tasks: list[Task],
    environment: dict[str, str],
    seed_digest: str,
    template_digests: dict[str, str],
    conditions: list[dict[str, Any]],
    k: int,
    agents: list[dict[str, Any]],
    server_version: str,
    injections: str | None = None,
    faults: dict[str, Any] | None = None,
    excluded_cells: list[dict[str, str]] | None = None,
    stopping: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest of a matrix, as the JSON object written to manifest.json: what the request asked
    (sampling, steps, attempts, error budget) with what the audit resolved from it (the tasks and their
    templates, the conditions read, the agents' identities, k under a stopping rule, the server)."""
    entries = [
        TaskEntry(
            id=t.id,
            spec_digest=t.spec_digest(),
            fixture_digest=t.fixture_digest(),
            template_digest=template_digests[t.id],
            params=t.params,
            optimal_steps=t.optimal_steps,
            tools_narrowed=t.tools_narrowed,
        )
        for t in sorted(tasks, key=lambda t: t.id)
    ]
    return Manifest(
        package_version=package_version(),
        server_version=server_version,
        environment=environment,
        seed_digest=seed_digest,
        conditions=conditions,
        k=k,
        max_steps=request.max_steps,
        max_attempts=request.max_attempts,
        sampling=request.sampling,
        agents=agents,
        tasks=entries,
        injection_catalogue_digest=injections,
        faults=faults,
        excluded_cells=excluded_cells or None,
        stopping=stopping,
        # Only when set, so audits without them keep their protocol hash.
        error_budget=request.error_budget,
        fault_coverage_floor=request.fault_coverage_floor,
    ).document()


def write_or_check(directory: Path, manifest: dict[str, Any]) -> str:
    """Write the manifest of a new results directory, or refuse one whose protocol differs; its hash.
    Read and hashed by the results owner (`harness.results.manifest`), the one reader of the file."""
    digest = manifest_hash(manifest)
    old = read_manifest(directory)  # a file that is not a manifest: one line naming it (UserError)
    if old is not None:
        old_hash = manifest_hash(old)
        if old_hash != digest:
            from agentrel.harness.protocol.identity import (
                refusal_message,  # it imports the evaluator's code
            )

            why = refusal_message(old, manifest) or "the manifests differ"
            raise UsageError(
                f"{directory}: the manifest it was planned with (hash {old_hash[:12]}) differs from this "
                f"matrix's ({digest[:12]}): {why}; use another --results directory"
            )
        return digest
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / layout.MANIFEST
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(rfc8785.dumps(manifest))
    tmp.replace(path)
    return digest
