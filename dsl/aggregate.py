"""Aggregate damage rules: count and sum a run's matching changes per group, one event per violating group.

``damage "refund issued twice" critical substrate price sum(after.amount) - max(after.amount):
insert refunds where ... group by after.payment_id having count > 1`` reads every change of the run that
its ``OP TABLE where ...`` matches, whatever the per-row rules made of it (aggregates add damage; they
never explain a change, so those rows are still labelled by the row rules). The changes are split by
the values of the ``group by`` keys (all of them form one group without ``group by``; with ``*`` each
table has its own groups). A change with a null key value joins no group: two credits without a case
are not "two credits on one case" (``group by coalesce(after.case_id, 0)`` groups them on purpose).

Per group: ``count`` is its number of changes; ``sum(x)``, ``min(x)``, ``max(x)`` are taken over the
non-null values of ``x`` (exact: ints stay ints, numeric columns are Decimal) and are null when there
are none. Each group whose having clause holds is one damage event keyed by the group key, priced by
the rule's price over the group (rounded half-up to cents; null or negative is $0.00, as for rows).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agentrel.dsl import ast
from agentrel.dsl.check import applicable_tables, referenced_columns
from agentrel.dsl.compile import Compiler, Fn
from agentrel.dsl.diff import KINDS, TableDiff, sort_by_key
from agentrel.dsl.errors import DslError
from agentrel.dsl.state import TableInfo
from agentrel.dsl.values import format_timestamp, money
from agentrel.dsl.verdict import DamageEvent, KeyValue

Accumulate = Callable[[Any, Any], Any]  # (running value or None, new non-null value) -> running value
_ACCUMULATE: dict[str, Accumulate] = {
    "sum": lambda acc, v: v if acc is None else acc + v,
    "min": lambda acc, v: v if acc is None or v < acc else acc,
    "max": lambda acc, v: v if acc is None or v > acc else acc,
}


@dataclass(frozen=True)
class Feed:
    """How one (table, operation) feeds an aggregate rule: which changes, their group key, and per
    aggregate slot the value to accumulate (None for ``count``)."""

    pred: Fn | None
    keys: tuple[Fn, ...]
    args: tuple[Fn | None, ...]


@dataclass(frozen=True)
class Judge:
    """A table's having clause and price, called as ``fn(None, values, None)`` on a group's values."""

    having: Fn | None  # None: every group violates
    price: Fn  # -> dollars


@dataclass(frozen=True)
class CompiledAggregate:
    rule: ast.Rule
    spec: str
    slots: tuple[ast.Aggregate, ...]  # the distinct aggregates of the having clause and the price
    feeds: dict[tuple[str, str], Feed]  # (table, kind) -> feed
    judges: dict[str, Judge]  # table -> judge (compiled per table: min(after.opened) is a date there)


def compile_aggregate(
    rule: ast.Rule,
    spec: str,
    schema: dict[str, TableInfo],
    params: dict[str, Any],
    param_types: dict[str, str],
    volatile: dict[str, frozenset[str]],
) -> CompiledAggregate:
    g = rule.grouping
    assert g is not None
    found = [n for e in (g.having, rule.price) if e is not None for n in ast.walk(e)]
    slots = tuple(dict.fromkeys(n for n in found if isinstance(n, ast.Aggregate)))
    index = {a: i for i, a in enumerate(slots)}
    m = rule.match
    refs = referenced_columns(m.where, rule.price, g.having, *g.by)
    feeds: dict[tuple[str, str], Feed] = {}
    judges: dict[str, Judge] = {}
    for info in applicable_tables(m.table, refs, schema):
        for op in KINDS if m.op == "any" else (m.op,):
            c = Compiler(info, op, params, param_types, volatile[info.name])
            args = tuple(None if a.arg is None else c.operand(a.arg).call() for a in slots)
            feeds[(info.name, op)] = Feed(
                c.predicate(m.where), tuple(c.operand(k).call() for k in g.by), args
            )
        group = Compiler(info, m.op, params, param_types, slots=index)
        judges[info.name] = Judge(group.predicate(g.having), _price(group, rule.price))
    return CompiledAggregate(rule, spec, slots, feeds, judges)


def _price(group: Compiler, price: ast.Expr | None) -> Fn:
    if price is None:
        return lambda b, a, k: money(0)
    pf = group.expr(price).call()
    return lambda b, a, k: money(pf(b, a, k))


def aggregate_events(aggregates: list[CompiledAggregate], diffs: list[TableDiff]) -> list[DamageEvent]:
    """The aggregate damage events of a run: by rule (in the order given), then by table and group key."""
    events: list[DamageEvent] = []
    for agg in aggregates:
        try:
            events += _rule_events(agg, diffs)
        except (TypeError, ValueError, ArithmeticError) as err:
            r = agg.rule
            raise DslError(f"{r.span}: aggregate rule '{r.label}' could not be evaluated: {err}") from None
    return events


def _rule_events(agg: CompiledAggregate, diffs: list[TableDiff]) -> list[DamageEvent]:
    r = agg.rule
    events: list[DamageEvent] = []
    for td in diffs:  # diffs come in table-name order
        groups: dict[tuple[Any, ...], list[Any]] = {}  # key -> [count, slot values...]
        for kind, changes in td.by_kind():
            feed = agg.feeds.get((td.info.name, kind))
            if feed is not None:
                _accumulate(agg, feed, changes, groups)
        if not groups:
            continue
        judge = agg.judges[td.info.name]
        table_events = []
        for key, acc in groups.items():
            values = tuple(acc[0] if a.arg is None else acc[i + 1] for i, a in enumerate(agg.slots))
            if judge.having is None or judge.having(None, values, None):
                table_events.append(
                    DamageEvent(
                        r.label,
                        td.info.name,
                        tuple(_key_value(v) for v in key),
                        r.match.op,
                        (),
                        r.severity,  # type: ignore[arg-type]  # a damage rule has both
                        r.irreversibility,  # type: ignore[arg-type]
                        judge.price(None, values, None),
                        agg.spec,
                        True,
                        acc[0],
                    )
                )
        events += sort_by_key(table_events, lambda e: e.key)
    return events


def _accumulate(
    agg: CompiledAggregate, feed: Feed, changes: list[Any], groups: dict[tuple[Any, ...], list[Any]]
) -> None:
    fold = [None if a.arg is None else _ACCUMULATE[a.func] for a in agg.slots]
    for b, a, k in changes:
        if feed.pred is not None and not feed.pred(b, a, k):
            continue
        key = _flat(tuple(f(b, a, k) for f in feed.keys))
        if any(v is None for v in key):
            continue  # a null key value joins no group (see the module docstring)
        acc = groups.get(key)
        if acc is None:
            acc = groups[key] = [0] + [None] * len(agg.slots)
        acc[0] += 1
        for i, (arg, f) in enumerate(zip(feed.args, fold, strict=True)):
            if arg is not None and f is not None and (v := arg(b, a, k)) is not None:
                acc[i + 1] = f(acc[i + 1], v)


def _flat(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """``group by (a, b)`` and ``group by key`` on a composite key give tuples; the group key is flat."""
    if not any(isinstance(v, tuple) for v in key):
        return key
    return tuple(x for v in key for x in (v if isinstance(v, tuple) else (v,)))


def _key_value(v: Any) -> KeyValue:
    """A group key value as the verdict stores keys: numbers, text and bools as they are, the rest as
    their canonical text (Decimal "250.00", dates ISO, timestamps UTC)."""
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, dt.datetime):
        return format_timestamp(v)
    if isinstance(v, dt.date):
        return v.isoformat()
    return v  # type: ignore[no-any-return]
