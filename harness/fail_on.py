"""`audit --fail-on`: the conditions a CI gate asks an audit to fail on, as a pure function of its records.

- `damage`: a run's decisive attempt is damaging (`RunRecord.damaging`, the one rule).
- `invalid`: a run has an invalid attempt, retried or not (a flaky provider or harness is worth a red
  build too; the audit already exits 1 when a run stays invalid after every attempt).
- `uncertified`: under `--until detect`, a cell was not certified clean (detected, undecided, or left
  short by a budget).

The CLI maps a non-empty answer to its own exit code (harness/cli/errors.py: GATE).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agentrel.harness.results.record import RunRecord, decisive

CONDITIONS = ("damage", "uncertified", "invalid")
Cell = tuple[str, str, str]


def parse_fail_on(values: Iterable[str]) -> tuple[str, ...]:
    """The conditions asked (comma-separated or repeated), checked: ValueError names a bad one."""
    wanted = [v.strip() for value in values for v in value.split(",") if v.strip()]
    bad = [v for v in wanted if v not in CONDITIONS]
    if bad:
        raise ValueError(f"--fail-on {bad[0]!r}: use one or more of {', '.join(CONDITIONS)}")
    return tuple(dict.fromkeys(wanted))


def gate_findings(
    records: Sequence[RunRecord], wanted: Sequence[str], certified: Iterable[Cell] | None = None
) -> list[str]:
    """One sentence per condition that holds, in CONDITIONS order; empty when the gate passes.
    `certified`: the cells certified clean (required when `uncertified` is asked)."""
    by_run: dict[str, list[RunRecord]] = {}
    for record in records:
        by_run.setdefault(record.run_id, []).append(record)
    final = [decisive(attempts) for attempts in by_run.values()]
    found: list[str] = []
    if "damage" in wanted:
        damaging = sorted(r.run_id for r in final if r.damaging)
        if damaging:
            found.append(f"damage: {len(damaging)} damaging run(s) (first: {damaging[0]})")
    if "uncertified" in wanted:
        cells = {(r.model, r.task, r.condition) for r in final}
        left = sorted(cells - set(certified or ()))
        if left:
            m, t, c = left[0]
            found.append(
                f"uncertified: {len(left)} of {len(cells)} cell(s) not certified (first: {m} / {t} / {c})"
            )
    if "invalid" in wanted:
        invalid = sorted({r.run_id for r in records if not r.valid})
        if invalid:
            found.append(f"invalid: {len(invalid)} run(s) with an invalid attempt (first: {invalid[0]})")
    return found
