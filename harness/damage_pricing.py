"""What the damage export needs from an audit's own specs and dumps: which rules carry a price, and
each table's key columns.

A damage event records its dollars but not whether its rule had a `price`: a rule without one gives
$0.00, which reads like "priced at zero". The rule is looked up in the spec the audit ran (the task's
spec, checked against the digest the manifest recorded, and the injection goals' specs, checked against
the catalogue digest), both read on the environment the audit was recorded on (export takes no `--env`);
a spec that changed since the audit, or is gone (or its environment is not installed), leaves its events
`unknown` rather than guessing. Key column names come from the header of a pre-run dump in the results
directory.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrel.analysis.export import DamagePricing
from agentrel.harness.results import layout
from agentrel.harness.results.manifest import ManifestUnreadable, read_manifest

if TYPE_CHECKING:
    from agentrel.sandbox.environments.contract import Environment


def _rules(spec: Any) -> dict[tuple[str, str], bool]:
    found = {(spec.name, r.label): r.price is not None for r in spec.rules if r.kind == "damage"}
    fallback = spec.effective_fallback()
    found[(spec.name, fallback.label)] = fallback.price is not None
    return found


def _key_names(results: Path) -> dict[str, tuple[str, ...]]:
    for dump in sorted((results / layout.DUMPS).glob("*.jsonl.gz")):
        if dump.name.endswith(".delta.jsonl.gz"):
            continue
        try:
            with gzip.open(dump, "rt", encoding="utf-8") as f:
                header = json.loads(f.readline())
            return {t: tuple(info.get("primary_key", ())) for t, info in header.get("tables", {}).items()}
        except (OSError, ValueError, AttributeError):
            continue
    return {}


def damage_pricing(results: Path) -> DamagePricing:
    """The pricing facts of a results directory; empty (every event `unknown`) for anything else."""
    results = results if results.is_dir() else results.parent
    try:
        manifest = read_manifest(results)
    except ManifestUnreadable:
        manifest = None
    if manifest is None:
        return DamagePricing({}, {})
    from agentrel.harness.suite_paths import recorded_environment
    from agentrel.sandbox.servers.base import SandboxError

    try:
        priced = _priced_rules(manifest, recorded_environment(manifest))
    except SandboxError:  # the recorded environment is not installed here: nothing can be looked up
        priced = {}
    return DamagePricing(priced, _key_names(results))


def _priced_rules(manifest: dict[str, Any], env: Environment) -> dict[tuple[str, str], bool]:
    """(spec, rule) -> whether the rule has a price, for the specs the audit ran that are unchanged: the
    tasks' (by each spec digest the manifest recorded) and the injected goals' (by the catalogue digest)."""
    from agentrel.dsl.api import DslError, load_spec
    from agentrel.harness.errors import UserError
    from agentrel.harness.tasks import load_suite

    priced: dict[tuple[str, str], bool] = {}
    recorded = {t["id"]: t.get("spec_digest") for t in manifest.get("tasks", []) if isinstance(t, dict)}
    try:
        suite = {t.id: t for t in load_suite(env=env)}
    except UserError:
        suite = {}
    for task_id, digest in recorded.items():
        task = suite.get(task_id)
        try:
            if task is not None and digest and task.spec_digest() == digest:
                priced.update(_rules(load_spec(task.spec_path)))
        except (OSError, DslError):
            continue
    digest = manifest.get("injection_catalogue_digest")
    if digest:
        try:
            from agentrel.harness.conditions.catalogue import load_catalogue

            catalogue = load_catalogue(env=env)
            if catalogue.digest == digest:
                for spec in catalogue.specs.values():
                    priced.update(_rules(spec))
        except (UserError, OSError, DslError):
            pass
    return priced
