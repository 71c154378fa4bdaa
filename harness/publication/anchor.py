"""Whether a results directory's freeze is anchored outside it, before its runs (pure: data in, reasons out).

`protocol freeze` appends a signed `freeze` entry to the registry (registry.py). A freeze.json that no
entry anchors was made without the registry (or re-made by hand); an entry that found runs already
recorded, or one made after a recorded run started, is a freeze after the fact: re-freezing a changed
matrix over runs that were made under another is exactly what this refuses. Times compare at the
records' resolution (whole seconds, records.STAMP), the registry's time rounded down.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from agentrel.harness.protocol.freeze import Freeze, freeze_digest
from agentrel.harness.protocol.registry import RegistryEntry
from agentrel.harness.publication.evidence import RecordFacts
from agentrel.harness.results.record import STAMP

__all__ = ["anchor_reasons", "anchored_at"]


def anchored_at(entry: RegistryEntry) -> str:
    """The entry's registry time in the records' format, rounded down to the second."""
    return datetime.fromisoformat(entry.at).astimezone(UTC).strftime(STAMP)


def anchor_reasons(
    freeze: Freeze | None, freezes: Mapping[str, RegistryEntry], records: Sequence[RecordFacts]
) -> Counter[str]:
    """Reason codes against the anchor of `freeze` among the registry's freeze entries (none: no freeze
    at all is `freeze_missing`'s business), with how many entries or records each concerns."""
    out: Counter[str] = Counter()
    if freeze is None:
        return out
    entry = freezes.get(freeze_digest(freeze))
    if entry is None:
        out["freeze_unanchored"] += 1
        return out
    if (entry.protocol_hash, entry.matrix_hash) != (freeze.protocol_hash, freeze.matrix_hash):
        out["freeze_anchor_mismatch"] += 1
    if entry.runs_before:
        out["freeze_after_runs"] += entry.runs_before
    at = anchored_at(entry)
    early = sum(1 for r in records if r.problem is None and r.started_at < at)
    if early:
        out["freeze_after_runs"] += early
    return out
