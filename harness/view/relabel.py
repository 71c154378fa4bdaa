"""Which rule labelled each changed row of a run: the labeller's own dispatch, re-run over two dumps.

A verdict stores only damage events; an allowed change and the fallback's reason are not kept, so the
view compiles the spec exactly as `dsl.label.label` does (`compile_plan`, the same diff with the spec's
volatile columns) and asks the compiled dispatch of every (table, operation) which rule takes each
change. Pure: data in, data out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Literal

from agentrel.dsl import ast
from agentrel.dsl.aggregate import aggregate_events
from agentrel.dsl.diff import diff_tables, sort_by_key
from agentrel.dsl.label import compile_plan
from agentrel.dsl.params import resolve_params
from agentrel.dsl.state import State, Value
from agentrel.dsl.verdict import DamageEvent

RuleKind = Literal["allow", "damage", "fallback"]


@dataclass(frozen=True, slots=True)
class LabelledChange:
    """One changed row with the rule that labelled it."""

    table: str
    key: tuple[Value, ...]
    op: Literal["insert", "delete", "update"]
    columns: tuple[str, ...]
    key_columns: tuple[str, ...]
    before: tuple[Value, ...] | None
    after: tuple[Value, ...] | None
    changed: tuple[str, ...]  # the non-volatile columns an update changed
    rule: str
    kind: RuleKind
    severity: str | None
    irreversibility: str | None
    dollars: Decimal | None  # None on allowed changes
    spec: str


@dataclass(frozen=True)
class Relabel:
    changes: list[LabelledChange]  # sorted by table, then key
    aggregates: list[DamageEvent]  # group events: they label no single row


def relabel(spec: ast.Spec, params: Mapping[str, Any] | None, before: State, after: State) -> Relabel:
    """Every row change from `before` to `after` with its rule; raises DslError (ParamError,
    SpecError, DiffError) as `dsl.label.label` would."""
    plan = compile_plan(spec, before.schema(), resolve_params(spec, params))
    diffs = diff_tables(before, after, spec.extra_volatile())
    out: list[LabelledChange] = []
    for td in diffs:
        name, cols = td.info.name, td.info.columns
        rows: list[LabelledChange] = []
        for op, changes in td.by_kind():
            dispatch = plan.index[(name, op)]
            for b, a, k in changes:
                cr = dispatch(b, a, k)
                kind: RuleKind = (
                    "allow" if cr.allow else "fallback" if isinstance(cr.rule, ast.Fallback) else "damage"
                )
                rows.append(
                    LabelledChange(
                        name,
                        k,
                        op,
                        cols,
                        td.info.primary_key,
                        b,
                        a,
                        td.changed_columns(b, a),
                        cr.label,
                        kind,
                        cr.severity,
                        cr.irreversibility,
                        None if cr.allow else cr.price(b, a, k),
                        cr.spec,
                    )
                )
        out += sort_by_key(rows, lambda c: c.key)
    aggregates = aggregate_events(list(plan.aggregates), diffs) if plan.aggregates else []
    return Relabel(out, aggregates)


def with_recorded(relabelled: Relabel, recorded: Sequence[DamageEvent], spec_name: str) -> Relabel:
    """The rows that a spec other than the task's labelled in the record (an injection goal's spec,
    whose damage rules the labeller tries first) keep the record's label: the view re-runs the task's
    spec only."""
    other = {
        (e.table, tuple(e.key)): e for e in recorded if e.spec and e.spec != spec_name and not e.aggregate
    }
    if not other:
        return relabelled
    changes = [
        replace(
            c,
            rule=ev.rule,
            kind="damage",
            severity=ev.severity,
            irreversibility=ev.irreversibility,
            dollars=ev.dollars,
            spec=ev.spec,
        )
        if (ev := other.get((c.table, tuple(c.key)))) is not None
        else c
        for c in relabelled.changes
    ]
    return Relabel(changes, relabelled.aggregates)


def disagreements(recorded: Sequence[DamageEvent], relabelled: Relabel) -> list[str]:
    """Where the stored verdict and the re-run labeller name different damage (a spec edited since the
    audit, most likely): one sentence each."""
    mine = {(c.table, tuple(c.key), c.rule) for c in relabelled.changes if c.kind != "allow"}
    mine |= {(e.table, tuple(e.key), e.rule) for e in relabelled.aggregates}
    theirs = {(e.table, tuple(e.key), e.rule) for e in recorded}
    out = [
        f"the record names damage '{rule}' on {table} {list(key)}, which the current spec does not"
        for table, key, rule in sorted(theirs - mine, key=str)
    ]
    out += [
        f"the current spec names damage '{rule}' on {table} {list(key)}, which the record does not"
        for table, key, rule in sorted(mine - theirs, key=str)
    ]
    return out
