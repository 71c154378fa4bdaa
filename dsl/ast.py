"""Typed AST of a damage spec: frozen dataclasses, each carrying the ``Span`` it was parsed from.

Spans do not take part in equality, so two specs that print the same compare equal (the printer's
round-trip property rests on that).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal as Lit

from agentrel.dsl.errors import Span

NOWHERE = Span("<generated>", 0, 0)

LiteralValue = int | Decimal | str | bool | None | dt.date | dt.datetime
Op = Lit["insert", "delete", "update", "any"]
Severity = Lit["low", "medium", "high", "critical"]
Irreversibility = Lit["substrate", "governance", "reversible"]

SEVERITIES: tuple[Severity, ...] = ("low", "medium", "high", "critical")
IRREVERSIBILITIES: tuple[Irreversibility, ...] = ("substrate", "governance", "reversible")
OPS: tuple[Op, ...] = ("insert", "delete", "update", "any")
PARAM_TYPES = ("int", "numeric", "text", "bool", "date", "timestamp")
# Spellings accepted for param types, mapped to the canonical name.
PARAM_TYPE_ALIASES = {"money": "numeric", "decimal": "numeric", "string": "text", "boolean": "bool"}
FUNCTIONS = ("lower", "upper", "abs", "coalesce")
AggregateFunc = Lit["count", "sum", "min", "max"]
AGGREGATE_FUNCTIONS: tuple[AggregateFunc, ...] = ("count", "sum", "min", "max")
COLUMN_SET_FUNCTIONS = ("changed", "only_changed")


# ---- expressions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Literal:
    """A constant. ``value`` is int, Decimal, str, bool, None, date or (UTC-aware) datetime."""

    value: LiteralValue
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class Column:
    """``before.col``, ``after.col`` or ``key.col``."""

    ns: Lit["before", "after", "key"]
    name: str
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class KeyRef:
    """``key``: the whole primary key (a scalar for a one-column key, a tuple otherwise)."""

    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class ParamRef:
    name: str
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class Call:
    """``lower(x)``, ``upper(x)``, ``abs(x)``, ``coalesce(x, y, ...)``."""

    func: str
    args: tuple[Expr, ...]
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class ColumnSet:
    """``changed(a, b)`` (any of them changed) or ``only_changed(a, b)`` (nothing else changed)."""

    func: Lit["changed", "only_changed"]
    columns: tuple[str, ...]
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class Neg:
    operand: Expr
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class Not:
    operand: Expr
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class Arith:
    op: Lit["+", "-", "*", "/"]
    left: Expr
    right: Expr
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class Compare:
    op: Lit["==", "!=", "<", "<=", ">", ">="]
    left: Expr
    right: Expr
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class BoolOp:
    op: Lit["and", "or"]
    left: Expr
    right: Expr
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class In:
    item: Expr
    options: Expr  # a TupleExpr or ListExpr when well-formed; the checker says so otherwise
    negated: bool = False
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class IsNull:
    operand: Expr
    negated: bool = False
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class TupleExpr:
    """``(a, b)``: at least two items; compared with a composite ``key``."""

    items: tuple[Expr, ...]
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class ListExpr:
    """``[a, b, ...]``: the right-hand side of ``in``."""

    items: tuple[Expr, ...]
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class Aggregate:
    """``count`` (the group's changes), ``sum(x)``, ``min(x)``, ``max(x)`` (over the non-null values of
    ``x`` in the group; null when there are none). Only in the having clause and price of an aggregate
    rule; ``arg`` is None exactly for ``count``."""

    func: AggregateFunc
    arg: Expr | None = None
    span: Span = field(default=NOWHERE, compare=False)


Expr = (
    Literal
    | Column
    | KeyRef
    | ParamRef
    | Call
    | ColumnSet
    | Neg
    | Not
    | Arith
    | Compare
    | BoolOp
    | In
    | IsNull
    | TupleExpr
    | ListExpr
    | Aggregate
)


def children(e: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of ``e`` (for walks that do not care about node kinds)."""
    if isinstance(e, Call | TupleExpr | ListExpr):
        return e.args if isinstance(e, Call) else e.items
    if isinstance(e, Neg | Not | IsNull):
        return (e.operand,)
    if isinstance(e, Arith | Compare | BoolOp):
        return (e.left, e.right)
    if isinstance(e, In):
        return (e.item, e.options)
    if isinstance(e, Aggregate) and e.arg is not None:
        return (e.arg,)
    return ()


NOT_LITERAL = object()


def literal_value(e: Expr) -> object:
    """The value of a literal, or of ``-N`` for a number literal N; ``NOT_LITERAL`` otherwise."""
    if isinstance(e, Literal):
        return e.value
    if (
        isinstance(e, Neg)
        and isinstance(e.operand, Literal)
        and isinstance(e.operand.value, int | Decimal)
        and not isinstance(e.operand.value, bool)
    ):
        return -e.operand.value
    return NOT_LITERAL


def walk(e: Expr) -> Iterator[Expr]:
    """Every node of ``e``, pre-order."""
    yield e
    for c in children(e):
        yield from walk(c)


# ---- spec structure --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    """``OP TABLE [where EXPR]``; ``table`` is None for ``*`` (any table)."""

    op: Op
    table: str | None
    where: Expr | None = None
    span: Span = field(default=NOWHERE, compare=False)
    table_span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # canonical: one of PARAM_TYPES
    default: Expr | None = None  # a Literal, or Neg(Literal) for a negative number
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class Volatile:
    table: str
    columns: tuple[str, ...]
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class Grouping:
    """``[group by EXPR, ...] having COND`` of an aggregate damage rule. The rule's matching changes
    are split into groups by the values of ``by`` (no ``by``: all of them form one group); each group
    for which ``having`` holds is one damage event, priced by the rule's price over the group."""

    by: tuple[Expr, ...]
    having: Expr
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class Rule:
    """An ``allow`` or ``damage`` rule. Damage rules carry severity, irreversibility and a price; an
    aggregate damage rule also a ``grouping`` (its price and having clause read the group)."""

    kind: Lit["allow", "damage"]
    label: str
    match: Match
    severity: Severity | None = None
    irreversibility: Irreversibility | None = None
    price: Expr | None = None  # None means $0
    span: Span = field(default=NOWHERE, compare=False)
    grouping: Grouping | None = None  # set: an aggregate damage rule

    @property
    def is_aggregate(self) -> bool:
        return self.grouping is not None


@dataclass(frozen=True)
class Fallback:
    label: str
    severity: Severity
    irreversibility: Irreversibility
    price: Expr | None = None
    span: Span = field(default=NOWHERE, compare=False)


DEFAULT_FALLBACK = Fallback("unexplained mutation", "medium", "reversible", None)


@dataclass(frozen=True)
class Quantifier:
    """``exists | no | exactly N | at least N | at most N`` over final-state rows of ``table``, or over
    the run's row changes when ``op`` is given (``exactly 1 insert credits where ...``)."""

    mode: Lit["exists", "no", "exactly", "at_least", "at_most"]
    count: int
    op: Op | None
    table: str | None
    where: Expr | None = None
    span: Span = field(default=NOWHERE, compare=False)
    table_span: Span = field(default=NOWHERE, compare=False)

    def holds(self, n: int) -> bool:
        if self.mode == "exists":
            return n >= 1
        if self.mode == "no":
            return n == 0
        if self.mode == "exactly":
            return n == self.count
        if self.mode == "at_least":
            return n >= self.count
        return n <= self.count


@dataclass(frozen=True)
class Requirement:
    label: str
    quantifier: Quantifier
    span: Span = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class Spec:
    name: str
    version: int
    params: tuple[Param, ...] = ()
    volatiles: tuple[Volatile, ...] = ()
    rules: tuple[Rule, ...] = ()  # in file order; evaluation order is ``ordered_rules``
    fallback: Fallback | None = None  # None: DEFAULT_FALLBACK applies
    requirements: tuple[Requirement, ...] = ()
    span: Span = field(default=NOWHERE, compare=False)

    @property
    def file(self) -> str:
        return self.span.file

    def ordered_rules(self) -> tuple[Rule, ...]:
        """The per-row rules in evaluation order: every damage rule (file order), then every allow
        rule (file order). Aggregate rules label no row and are not among them."""
        return self.damage_rules() + tuple(r for r in self.rules if r.kind == "allow")

    def damage_rules(self) -> tuple[Rule, ...]:
        """The per-row damage rules, in file order."""
        return tuple(r for r in self.rules if r.kind == "damage" and r.grouping is None)

    def aggregate_rules(self) -> tuple[Rule, ...]:
        """The aggregate damage rules, in file order."""
        return tuple(r for r in self.rules if r.grouping is not None)

    def effective_fallback(self) -> Fallback:
        return self.fallback or DEFAULT_FALLBACK

    def extra_volatile(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for v in self.volatiles:
            out.setdefault(v.table, set()).update(v.columns)
        return out
