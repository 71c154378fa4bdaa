"""Expressions compiled once, per table, into Python closures that read row tuples by position.

A compiled predicate is called as ``fn(before_row, after_row, key)``; rows are the dump's tuples
(None where absent). ``changed(...)``/``only_changed(...)`` compare the two rows at the columns'
positions (volatile columns never count as changed), so the diff need not list changed columns for
every update. Column values are converted lazily by kind (numeric -> Decimal, date -> date,
timestamp -> datetime) only where an expression reads them, and constant sub-expressions (literals,
params) are folded at compile time.

Null semantics (two-valued, documented in dsl/README.md): ``==``/``!=`` treat null as an ordinary
value (``null == null``); ordering comparisons with a null side are false; arithmetic and functions
on null give null (``coalesce`` aside); ``and``/``or``/``not`` treat null as false. Division by zero
gives null.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from agentrel.dsl import ast
from agentrel.dsl.state import TableInfo
from agentrel.dsl.typecheck import Env, Type, coerce_text, column_kind, infer
from agentrel.dsl.values import CONVERTERS

Fn = Callable[[Any, Any, Any], Any]

_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}


class Compiled:
    """A compiled expression: a constant (``fn is None``) or a closure. Plain column reads also keep
    where they read from, so comparisons against constants can be fused into one closure."""

    __slots__ = ("conv", "fn", "index", "src", "value")

    def __init__(
        self,
        fn: Fn | None = None,
        value: Any = None,
        src: str | None = None,
        index: int = -1,
        conv: Callable[[Any], Any] | None = None,
    ) -> None:
        self.fn, self.value, self.src, self.index, self.conv = fn, value, src, index, conv

    @property
    def const(self) -> bool:
        return self.fn is None

    def call(self) -> Fn:
        if self.fn is not None:
            return self.fn
        value = self.value
        return lambda b, a, k: value


def const(value: Any) -> Compiled:
    return Compiled(None, value)


class Compiler:
    """Compiles expressions for one table and one concrete operation: insert, delete, update, or
    ``state`` (a final-state row: the after row only). A rule for ``any`` operation is compiled once
    per operation, so no closure ever tests whether a row is present. With ``info=None`` only
    constants compile.

    With ``slots`` it compiles the having clause or price of an aggregate rule instead: the closure
    is called as ``fn(None, values, None)`` where ``values[slots[agg]]`` is the group's value of each
    aggregate (``dsl.aggregate`` computes them)."""

    def __init__(
        self,
        info: TableInfo | None,
        op: str,
        params: dict[str, Any],
        param_types: dict[str, str],
        volatile: frozenset[str] = frozenset(),
        slots: dict[ast.Aggregate, int] | None = None,
    ) -> None:
        self.info, self.op, self.params, self.volatile = info, op, params, volatile
        self.slots = slots
        self.env = Env(info, op, dict(param_types), group=slots is not None)

    def predicate(self, e: ast.Expr | None) -> Fn | None:
        """A truth test, or None for a condition that always holds (no ``where``)."""
        if e is None:
            return None
        c = self.expr(e)
        if c.const:
            return None if c.value else (lambda b, a, k: False)
        return c.fn

    def operand(self, e: ast.Expr) -> Compiled:
        """``e`` compiled for use as a value: an ``and``/``or`` yields exactly true or false."""
        c = self.expr(e)
        if isinstance(e, ast.BoolOp) and not c.const:
            f = c.call()
            return Compiled(lambda b, a, k: bool(f(b, a, k)))
        return c

    def type_of(self, e: ast.Expr) -> Type:
        self.env.problems.clear()
        return infer(e, self.env)

    def expr(self, e: ast.Expr) -> Compiled:
        method = getattr(self, "_" + type(e).__name__.lower())
        result: Compiled = method(e)
        if not result.const and not _reads_row(e):
            result = const(result.call()(None, None, None))
        return result

    # ---- leaves ----------------------------------------------------------------------------------

    def _literal(self, e: ast.Literal) -> Compiled:
        return const(e.value)

    def _paramref(self, e: ast.ParamRef) -> Compiled:
        return const(self.params[e.name])

    def _column(self, e: ast.Column) -> Compiled:
        assert self.info is not None
        info, op = self.info, self.op
        conv = CONVERTERS.get(column_kind(info, e.name))
        if e.ns == "key":
            return _getter("k", info.primary_key.index(e.name), conv)
        if (e.ns == "before" and op in ("insert", "state")) or (e.ns == "after" and op == "delete"):
            return const(None)
        src = "b" if e.ns == "before" else "a"
        return _getter(src, info.columns.index(e.name), conv)

    def _aggregate(self, e: ast.Aggregate) -> Compiled:
        assert self.slots is not None  # check_spec rejects aggregates outside aggregate rules
        return _getter("a", self.slots[e], None)

    def _keyref(self, e: ast.KeyRef) -> Compiled:
        assert self.info is not None
        convs = [CONVERTERS.get(column_kind(self.info, c)) for c in self.info.primary_key]
        if len(convs) == 1:
            return _getter("k", 0, convs[0])
        if not any(convs):
            return Compiled(lambda b, a, k: k)
        pairs = tuple(enumerate(convs))
        return Compiled(
            lambda b, a, k: tuple(None if k[i] is None or f is None else f(k[i]) for i, f in pairs)
        )

    def _columnset(self, e: ast.ColumnSet) -> Compiled:
        """``changed(c...)``: some listed column differs; ``only_changed(c...)``: every other
        non-volatile column is equal. Only updates have both rows; elsewhere both are false."""
        if self.op != "update":
            return const(False)
        assert self.info is not None
        cols = self.info.columns
        if e.func == "changed":
            positions = [i for i, c in enumerate(cols) if c in e.columns and c not in self.volatile]
        else:
            positions = [i for i, c in enumerate(cols) if c not in e.columns and c not in self.volatile]
        if not positions:  # nothing to compare: nothing can change / nothing else can change
            return const(e.func == "only_changed")
        if len(positions) == 1:
            (i,) = positions
            if e.func == "changed":
                return Compiled(lambda b, a, k: b[i] != a[i])
            return Compiled(lambda b, a, k: b[i] == a[i])
        pick = operator.itemgetter(*positions)
        if e.func == "changed":
            return Compiled(lambda b, a, k: pick(b) != pick(a))
        return Compiled(lambda b, a, k: pick(b) == pick(a))

    # ---- operators -------------------------------------------------------------------------------

    def _call(self, e: ast.Call) -> Compiled:
        args = [self.operand(a).call() for a in e.args]
        if e.func == "coalesce":

            def coalesce(b: Any, a: Any, k: Any) -> Any:
                for f in args:
                    v = f(b, a, k)
                    if v is not None:
                        return v
                return None

            return Compiled(coalesce)
        funcs: dict[str, Callable[[Any], Any]] = {"lower": str.lower, "upper": str.upper, "abs": abs}
        func = funcs[e.func]
        (f,) = args
        return Compiled(lambda b, a, k: None if (v := f(b, a, k)) is None else func(v))

    def _neg(self, e: ast.Neg) -> Compiled:
        f = self.expr(e.operand).call()
        return Compiled(lambda b, a, k: None if (v := f(b, a, k)) is None else -v)

    def _not(self, e: ast.Not) -> Compiled:
        f = self.expr(e.operand).call()
        return Compiled(lambda b, a, k: not f(b, a, k))

    def _boolop(self, e: ast.BoolOp) -> Compiled:
        """A whole chain ``x and y and z`` becomes one closure (nested closures cost a call per level).
        Constant terms fold: ``false and x`` is false, ``true and x`` is ``x``; dually for ``or``."""
        is_or = e.op == "or"
        fns: list[Fn] = []
        for term in chain(e, e.op):
            c = self.expr(term)
            if not c.const:
                fns.append(c.fn)  # type: ignore[arg-type]
            elif bool(c.value) == is_or:
                return const(is_or)
        if not fns:
            return const(not is_or)
        if len(fns) == 1:
            return Compiled(fns[0])
        # The raw ``and``/``or`` value is only ever tested for truth; ``operand`` makes it a bool where
        # its value matters (compared, tested for null, passed to a function).
        return Compiled(_any_of(fns) if is_or else _all_of(fns))

    def _arith(self, e: ast.Arith) -> Compiled:
        lf, rf = self.expr(e.left).call(), self.expr(e.right).call()
        f = _ARITH[e.op]
        if e.op != "/":
            return Compiled(
                lambda b, a, k: None if (x := lf(b, a, k)) is None or (y := rf(b, a, k)) is None else f(x, y)
            )

        def divide(b: Any, a: Any, k: Any) -> Any:
            x, y = lf(b, a, k), rf(b, a, k)
            if x is None or y is None or y == 0:
                return None
            return Decimal(x) / y if isinstance(x, int) else x / y

        return Compiled(divide)

    def _isnull(self, e: ast.IsNull) -> Compiled:
        f = self.operand(e.operand).call()
        if e.negated:
            return Compiled(lambda b, a, k: f(b, a, k) is not None)
        return Compiled(lambda b, a, k: f(b, a, k) is None)

    def _tupleexpr(self, e: ast.TupleExpr) -> Compiled:
        parts = [self.operand(i) for i in e.items]
        if all(p.const for p in parts):
            return const(tuple(p.value for p in parts))
        fns = [p.call() for p in parts]
        return Compiled(lambda b, a, k: tuple(f(b, a, k) for f in fns))

    def _listexpr(self, e: ast.ListExpr) -> Compiled:
        return self._tupleexpr(ast.TupleExpr(e.items, e.span))

    def _compare(self, e: ast.Compare) -> Compiled:
        left = self.coerced(e.left, self.type_of(e.right))
        right = self.coerced(e.right, self.type_of(e.left))
        f = _CMP[e.op]
        ordering = e.op not in ("==", "!=")
        if left.const and not right.const:  # put the constant on the right
            left, right = right, left
            f = _CMP[_FLIP[e.op]]
        if right.const:
            c = right.value
            if ordering and c is None:
                return const(False)
            if left.src is not None:
                return Compiled(_fused_compare(left, f, c, ordering))
        lf, rf = left.call(), right.call()
        if ordering:
            return Compiled(
                lambda b, a, k: (x := lf(b, a, k)) is not None and (y := rf(b, a, k)) is not None and f(x, y)
            )
        return Compiled(lambda b, a, k: f(lf(b, a, k), rf(b, a, k)))

    def _in(self, e: ast.In) -> Compiled:
        item_type = self.type_of(e.item)
        items = e.options.items if isinstance(e.options, ast.ListExpr | ast.TupleExpr) else ()
        options = [self.coerced(o, item_type) for o in items]
        item = self.coerced(e.item, self.type_of(items[0]) if items else "any")
        negated = e.negated
        if all(o.const for o in options):
            values = [o.value for o in options]
            try:
                pool: frozenset[Any] | list[Any] = frozenset(values)
            except TypeError:  # pragma: no cover - every literal value is hashable
                pool = values
            f = item.call()
            if negated:
                return Compiled(lambda b, a, k: f(b, a, k) not in pool)
            return Compiled(lambda b, a, k: f(b, a, k) in pool)
        f, fns = item.call(), [o.call() for o in options]

        def member(b: Any, a: Any, k: Any) -> bool:
            v = f(b, a, k)
            return any(v == g(b, a, k) for g in fns) != negated

        return Compiled(member)

    def coerced(self, e: ast.Expr, other: Type) -> Compiled:
        """Compile ``e``; a text literal compared with a date or timestamp becomes one (elementwise
        for tuples, so ``key == (7, "2026-01-02")`` works on a composite key with a date)."""
        if isinstance(e, ast.Literal) and other in ("date", "timestamp"):
            value = coerce_text(str(other), e.value)
            if value is not None:
                return const(value)
        if isinstance(e, ast.TupleExpr) and isinstance(other, tuple) and len(other) == len(e.items):
            parts = [self.coerced(i, t) for i, t in zip(e.items, other, strict=True)]
            if all(p.const for p in parts):
                return const(tuple(p.value for p in parts))
        return self.operand(e)


def chain(e: ast.Expr, op: str) -> list[ast.Expr]:
    """The terms of a left- or right-nested chain of one boolean operator, in order."""
    if isinstance(e, ast.BoolOp) and e.op == op:
        return chain(e.left, op) + chain(e.right, op)
    return [e]


def _all_of(fns: list[Fn]) -> Fn:
    if len(fns) == 2:
        f, g = fns
        return lambda b, a, k: f(b, a, k) and g(b, a, k)
    if len(fns) == 3:
        f, g, h = fns
        return lambda b, a, k: f(b, a, k) and g(b, a, k) and h(b, a, k)
    return lambda b, a, k: all(f(b, a, k) for f in fns)


def _any_of(fns: list[Fn]) -> Fn:
    if len(fns) == 2:
        f, g = fns
        return lambda b, a, k: f(b, a, k) or g(b, a, k)
    if len(fns) == 3:
        f, g, h = fns
        return lambda b, a, k: f(b, a, k) or g(b, a, k) or h(b, a, k)
    return lambda b, a, k: any(f(b, a, k) for f in fns)


_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _reads_row(e: ast.Expr) -> bool:
    return any(isinstance(n, ast.Column | ast.KeyRef | ast.ColumnSet | ast.Aggregate) for n in ast.walk(e))


def _getter(src: str, i: int, conv: Callable[[Any], Any] | None) -> Compiled:
    """Read position ``i`` of the before row (b), after row (a) or key (k), converting by kind. The
    row is always present: rules are compiled per concrete operation, never for ``any``."""
    if src == "k":
        fn: Fn = lambda b, a, k: k[i]  # noqa: E731
    elif src == "b":
        fn = lambda b, a, k: b[i]  # noqa: E731
    else:
        fn = lambda b, a, k: a[i]  # noqa: E731
    if conv is not None:
        raw = fn
        fn = lambda b, a, k: None if (v := raw(b, a, k)) is None else conv(v)  # noqa: E731
    return Compiled(fn, src=src, index=i, conv=conv)


def _fused_compare(col: Compiled, f: Callable[[Any, Any], bool], c: Any, ordering: bool) -> Fn:
    """One closure for ``column OP constant``: the hot shape of where clauses."""
    i, conv = col.index, col.conv
    if conv is None and not ordering:
        if col.src == "a":
            return (lambda b, a, k: a[i] == c) if f is operator.eq else (lambda b, a, k: a[i] != c)
        if col.src == "b":
            return (lambda b, a, k: b[i] == c) if f is operator.eq else (lambda b, a, k: b[i] != c)
        return (lambda b, a, k: k[i] == c) if f is operator.eq else (lambda b, a, k: k[i] != c)
    if conv is None:
        if col.src == "a":
            return lambda b, a, k: (v := a[i]) is not None and f(v, c)
        if col.src == "b":
            return lambda b, a, k: (v := b[i]) is not None and f(v, c)
        return lambda b, a, k: (v := k[i]) is not None and f(v, c)
    if not ordering:
        if col.src == "a":
            return lambda b, a, k: f(None if (v := a[i]) is None else conv(v), c)
        if col.src == "b":
            return lambda b, a, k: f(None if (v := b[i]) is None else conv(v), c)
        return lambda b, a, k: f(None if (v := k[i]) is None else conv(v), c)
    if col.src == "a":
        return lambda b, a, k: (v := a[i]) is not None and f(conv(v), c)
    if col.src == "b":
        return lambda b, a, k: (v := b[i]) is not None and f(conv(v), c)
    return lambda b, a, k: (v := k[i]) is not None and f(conv(v), c)
