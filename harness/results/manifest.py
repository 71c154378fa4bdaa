"""The manifest: the preregistered, resolved run matrix, written once as RFC 8785 canonical JSON.

Typed here, so what is written has a declared shape; the file itself stays a plain JSON object, which
the protocol identity, analysis, the view and publication read. Optional parts are left out rather than
written as null, so a matrix without them keeps its hash.

The one reader of a directory's manifest.json (`read_manifest`) and the one manifest hash
(`manifest_hash`) are here, so every reader sees the same object and every hash is of the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import rfc8785

from agentrel.harness.errors import UserError
from agentrel.harness.frozen import Frozen
from agentrel.harness.results import layout


class ManifestUnreadable(UserError):
    """A results directory's manifest.json is not a JSON object."""


def read_manifest(directory: Path) -> dict[str, Any] | None:
    """`directory`'s manifest.json as the JSON object written (None when there is none); raises
    ManifestUnreadable, naming the file and the fix, when it is not a JSON object (or not JSON at all)."""
    path = directory / layout.MANIFEST
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ManifestUnreadable(f"{path}: cannot read: {exc.strerror}") from None
    try:
        document = json.loads(data)
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise ManifestUnreadable(f"{path}: not a manifest (a JSON object); restore the file")
    return document


def manifest_hash(document: Mapping[str, Any]) -> str:
    """SHA-256 of the manifest's RFC 8785 canonical JSON: the matrix as resolved. One part of the protocol
    identity (harness.protocol.identity), and the protocol hash records carried before protocol.json."""
    return hashlib.sha256(rfc8785.dumps(dict(document))).hexdigest()


class TaskEntry(Frozen):
    id: str
    spec_digest: str  # SHA-256 of the damage spec's bytes: publication labels again only with these
    fixture_digest: str
    template_digest: str
    params: dict[str, Any]
    optimal_steps: int | None
    tools_narrowed: str | None = None  # why the task offers less than its environment's whole toolset


class Manifest(Frozen):
    format: Literal["agentrel-manifest/1"] = "agentrel-manifest/1"
    package_version: str
    server_version: str
    # The environment's name and fingerprint (sandbox/environments/): two environments, or one whose
    # build changed, never share a hash, so their runs are never resumed into or pooled.
    environment: dict[str, str]
    seed_digest: str
    conditions: list[dict[str, Any]]
    k: int
    max_steps: int
    max_attempts: int
    sampling: dict[str, Any]
    agents: list[dict[str, Any]]
    tasks: list[TaskEntry]
    injection_catalogue_digest: str | None = None  # what an injecting condition draws payloads from
    faults: dict[str, Any] | None = None  # the resolved fault schedule, identical for every agent
    excluded_cells: list[dict[str, str]] | None = None  # preregistered exclusions, only when any
    stopping: dict[str, Any] | None = None  # a sequential audit's rule (--until), part of the protocol
    error_budget: float | None = None  # the most a cell's attempts may be errored (--error-budget)
    # The share of a fault stratum's runs that must be witnessed to publish it (--fault-coverage-floor)
    fault_coverage_floor: float | dict[str, float] | None = None

    def document(self) -> dict[str, Any]:
        """The JSON object written to manifest.json (absent optional parts left out)."""
        out = self.model_dump(mode="json")
        for optional in (
            "injection_catalogue_digest",
            "faults",
            "excluded_cells",
            "stopping",
            "error_budget",
            "fault_coverage_floor",
        ):
            if out[optional] is None:
                del out[optional]
        for task in out["tasks"]:  # only a narrowed task says so, so other tasks keep their hash
            if task["tools_narrowed"] is None:
                del task["tools_narrowed"]
        return out
