"""Anchoring a results directory's run journal (harness.results.journal) in the registry, and checking it.

At the end of every audit invocation under a freeze, the chain head of runs.jsonl is appended to the
registry the freeze was anchored in (a signed `journal` entry naming the freeze digest, the head and the
number of lines it covers), with the key that froze it. Records are only ever appended, so each anchored
head must still be the head of the file's first lines at publication. Removing a record afterwards (and
re-running the same command to draw that run again) leaves an anchored head no prefix of the file gives:
`journal_rewritten`, which only the key holder could undo by rewriting the registry
(docs/explanation/trust.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from agentrel.harness.errors import EnvironmentFailure
from agentrel.harness.protocol.freeze import Freeze, freeze_digest, load_freeze
from agentrel.harness.protocol.registry import RegistryEntry, anchor_journal, default_registry_path
from agentrel.harness.protocol.signing import Signer, load_signer
from agentrel.harness.results import layout
from agentrel.harness.results.journal import heads_at, journal_head

__all__ = ["anchor_run_journal", "journal_reasons", "remember_registry"]


def remember_registry(results: Path, registry: Path, key: Path | None) -> None:
    """Write where the freeze was anchored and with which key file (paths, never the key), so each audit
    invocation anchors its journal there with the same key."""
    text = f"{registry.absolute()}\n{key.absolute() if key is not None else ''}\n"
    pointer = results / layout.REGISTRY_POINTER
    try:
        pointer.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise EnvironmentFailure(f"{pointer}: cannot write ({exc.strerror})") from None


def _pointer(results: Path) -> tuple[Path, Path | None]:
    try:
        named = (results / layout.REGISTRY_POINTER).read_text(encoding="utf-8").splitlines()
    except OSError:
        named = []
    registry = Path(named[0]) if named and named[0].strip() else default_registry_path()
    key = Path(named[1]) if len(named) > 1 and named[1].strip() else None
    return registry, key


def anchor_run_journal(results: Path, *, signer: Signer | None = None) -> RegistryEntry | None:
    """Anchor runs.jsonl's chain head under the directory's freeze (None: a draft, or no record yet)."""
    freeze = load_freeze(results)
    runs = results / layout.RUNS
    if freeze is None or not runs.exists():
        return None
    head, lines = journal_head(runs.read_bytes())
    if lines == 0:
        return None
    registry, key = _pointer(results)
    signer = signer or load_signer(key, create=False)
    return anchor_journal(registry, freeze_digest(freeze), head, lines, signer=signer)


def journal_reasons(
    results: Path, freeze: Freeze | None, journals: Mapping[str, Sequence[RegistryEntry]]
) -> Counter[str]:
    """`journal_rewritten` (with how many anchors) when a head anchored for this freeze is not the head
    of runs.jsonl's first lines any more."""
    out: Counter[str] = Counter()
    if freeze is None:
        return out
    anchored = journals.get(freeze_digest(freeze), ())
    if not anchored:
        return out
    try:
        data = (results / layout.RUNS).read_bytes()
    except FileNotFoundError:
        data = b""
    heads = heads_at(data, {e.lines for e in anchored if e.lines is not None})
    for entry in anchored:
        if entry.lines is None or heads.get(entry.lines) != entry.digest:
            out["journal_rewritten"] += 1
    return out
