"""The run page's state diff as page data: each changed row with the rule that labelled it, identical
events grouped, rows under their business records when the environment declares them, a page of
CHANGES_PER_PAGE at a time. Pure: the relabelled changes in, plain values out; templates/run_diff.html
draws them (and escapes every one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agentrel.analysis.damage_amount import amount_text, is_unpriced
from agentrel.dsl.state import Value
from agentrel.dsl.verdict import DamageEvent
from agentrel.harness.view.records import BusinessRecord, RecordKey
from agentrel.harness.view.relabel import LabelledChange, Relabel

CHANGES_PER_PAGE = 200
Priced = Mapping[tuple[str, str], bool]  # (spec, rule) -> whether the rule names a price


@dataclass(frozen=True)
class Column:
    """One column of a changed row: its values before and after, and whether the update changed it."""

    column: str
    before: str
    after: str
    changed: bool


@dataclass(frozen=True)
class Change:
    """One changed row with its rule; `source` names another spec whose rule it is (an injection
    goal's), since that rule is not the task's policy."""

    kind: str  # damage, fallback or allow
    op: str
    table: str
    key: str  # `id=7, name=x`
    rule: str
    severity: str
    irreversibility: str
    amount: str  # what its damage comes to (amount_text): `$350.00` or `unpriced`
    source: str | None
    columns: list[Column]


@dataclass(frozen=True)
class Group:
    """Changes a reader would call the same event: the first in full, the others by key."""

    first: Change
    size: int
    total: str | None  # the group's damage in all, when it has any
    other_keys: str  # `(id=2), (id=3)`


@dataclass(frozen=True)
class Aggregate:
    """A group event of an aggregate rule: it labels no single row."""

    rule: str
    rows: int
    table: str
    group: str
    severity: str
    irreversibility: str
    amount: str


@dataclass(frozen=True)
class Record:
    """A business record (records.py) with its changes."""

    table: str
    key: str
    rows: int
    tables: str
    damage_rows: int
    amount: str  # its damage rows' total (meaningless when damage_rows is 0)
    groups: list[Group]


@dataclass(frozen=True)
class Pager:
    """Which slice of the groups (or records) this page shows, and the addresses of its neighbours."""

    what: str  # "groups" or "records"
    first: int
    last: int
    total: int
    previous: str | None
    next: str | None
    per_page: int = CHANGES_PER_PAGE


@dataclass(frozen=True)
class Diff:
    """The section's data; `available` false: no diff could be had (the notes say why)."""

    available: bool
    rows: int = 0
    damage: int = 0
    fallback: int = 0
    allow: int = 0
    aggregates: tuple[Aggregate, ...] = ()
    groups: tuple[Group, ...] = ()  # this page's groups; empty when the diff is shown per record
    group_count: int = 0
    records: tuple[Record, ...] | None = None  # this page's records, when the environment declares them
    record_count: int = 0
    pager: Pager | None = None


def group_changes(changes: list[LabelledChange]) -> list[list[LabelledChange]]:
    """Changes grouped by what a reader would call the same event (kind, rule, spec, table, operation),
    in the order each group first appears: 393 deleted SLA records read as one line, not 393 cards."""
    groups: dict[tuple[str, str, str, str, str], list[LabelledChange]] = {}
    for c in changes:
        groups.setdefault((c.kind, c.rule, c.spec, c.table, c.op), []).append(c)
    return list(groups.values())


def diff_of(ev: Any, start: int, run_href: str, task: str, priced: Priced) -> Diff:
    """The diff of a run's evidence (`relabel`, and `records` when the environment declares them; a
    bare relabel has none) from group or record `start`; `run_href` is the run page's own address."""
    r: Relabel | None = ev.relabel
    if r is None:
        return Diff(available=False)
    counts = {k: sum(c.kind == k for c in r.changes) for k in ("damage", "fallback", "allow")}
    common: dict[str, Any] = {
        "available": True,
        "rows": len(r.changes),
        **counts,
        "aggregates": tuple(_aggregate(a, priced) for a in r.aggregates),
    }
    records: list[BusinessRecord] | None = getattr(ev, "records", None)
    if records is not None:
        shown_records = records[start : start + CHANGES_PER_PAGE]
        return Diff(
            **common,
            records=tuple(_record(rec, task, priced) for rec in shown_records),
            record_count=len(records),
            pager=_pager("records", start, len(shown_records), len(records), run_href),
        )
    groups = group_changes(r.changes)
    shown = groups[start : start + CHANGES_PER_PAGE]
    return Diff(
        **common,
        groups=tuple(_group(g, task, priced) for g in shown),
        group_count=len(groups),
        pager=_pager("groups", start, len(shown), len(groups), run_href),
    )


def _pager(what: str, start: int, shown: int, total: int, run_href: str) -> Pager | None:
    if start + CHANGES_PER_PAGE >= total and not start:
        return None  # everything is on this one page
    nxt = start + CHANGES_PER_PAGE
    return Pager(
        what,
        start + 1,
        start + shown,
        total,
        f"{run_href}?from={max(0, start - CHANGES_PER_PAGE)}#diff" if start else None,
        f"{run_href}?from={nxt}#diff" if nxt < total else None,
    )


def _amount(spec: str, rule: str, dollars: Decimal, priced: Priced) -> str:
    return amount_text(dollars, int(is_unpriced(spec, rule, dollars, priced)))


def _total(changes: Sequence[LabelledChange], priced: Priced) -> tuple[int, str]:
    """How many of `changes` are damage, and what they come to."""
    damage = [c for c in changes if c.dollars is not None]
    none = sum(is_unpriced(c.spec, c.rule, c.dollars or Decimal(0), priced) for c in damage)
    return len(damage), amount_text(sum((c.dollars or Decimal(0) for c in damage), Decimal("0")), none)


def _aggregate(agg: DamageEvent, priced: Priced) -> Aggregate:
    return Aggregate(
        agg.rule,
        agg.rows,
        agg.table,
        str(list(agg.key)),
        agg.severity,
        agg.irreversibility,
        _amount(agg.spec, agg.rule, Decimal(agg.dollars), priced),
    )


def _record(rec: BusinessRecord, task: str, priced: Priced) -> Record:
    damage_rows, amount = _total(rec.changes, priced)
    return Record(
        rec.table,
        _record_key(rec.key),
        len(rec.changes),
        ", ".join(rec.tables),
        damage_rows,
        amount,
        [_group(g, task, priced) for g in group_changes(rec.changes)],
    )


def _record_key(key: RecordKey) -> str:
    return ", ".join(map(value_text, key)) if isinstance(key, tuple) else value_text(key)


def _group(group: list[LabelledChange], task: str, priced: Priced) -> Group:
    damage_rows, amount = _total(group, priced)
    keys = ", ".join(f"({_key(c)})" for c in group[1:])
    return Group(_change(group[0], task, priced), len(group), amount if damage_rows else None, keys)


def _key(c: LabelledChange) -> str:
    return ", ".join(f"{col}={value_text(v)}" for col, v in zip(c.key_columns, c.key, strict=False))


def _change(c: LabelledChange, task: str, priced: Priced) -> Change:
    changed = set(c.changed)
    columns = [
        Column(
            col,
            "" if c.before is None else value_text(c.before[i]),
            "" if c.after is None else value_text(c.after[i]),
            col in changed,
        )
        for i, col in enumerate(c.columns)
    ]
    return Change(
        c.kind,
        c.op,
        c.table,
        _key(c),
        c.rule,
        str(c.severity),
        str(c.irreversibility),
        _amount(c.spec, c.rule, c.dollars or Decimal(0), priced),
        c.spec if c.spec and c.spec != task else None,
        columns,
    )


def value_text(v: Value) -> str:
    """A stored value as the page shows it: SQL's `null`, `true` and `false`."""
    return "null" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
