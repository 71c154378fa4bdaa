"""Static types of expressions against one table's schema, for ``check_spec`` and the compiler.

A type is a kind string (``int numeric text bool date timestamp json null any``) or a tuple of them
(a composite key or a tuple literal). ``any`` is what an erroneous node becomes, so one mistake does
not cascade into many. Problems are appended to a list as ``(span, message, fatal)``; *fatal* means
the expression cannot be evaluated as written (labelling refuses such a spec), non-fatal means a rule
can never match or is otherwise dead.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from agentrel.dsl import ast
from agentrel.dsl.errors import Span
from agentrel.dsl.state import TableInfo
from agentrel.dsl.values import parse_timestamp

Type = str | tuple["Type", ...]
NUMBERS = frozenset({"int", "numeric"})
ORDERED = frozenset({"int", "numeric", "text", "date", "timestamp"})
Problem = tuple[Span, str, bool]


@dataclass
class Env:
    """What an expression may read: a table (or none, for constants), the rule's operation, params.

    ``context`` names the place for messages (``where``, ``price``, ``requirement``...). ``op`` is
    ``state`` for a requirement over final-state rows (only ``after.*`` and ``key`` exist there).
    ``group`` is set for the having clause and price of an aggregate rule: there rows are read only
    inside an aggregate, whose argument is typed against ``table`` and ``op`` as a where clause is.
    """

    table: TableInfo | None
    op: str
    params: dict[str, str]
    context: str = "where"
    problems: list[Problem] = field(default_factory=list)
    group: bool = False

    def problem(self, span: Span, message: str, fatal: bool = True) -> None:
        self.problems.append((span, message, fatal))


def column_kind(info: TableInfo, column: str) -> str:
    if not info.kinds:
        return "any"
    kind = info.kind(column)
    return kind if kind in ("int", "numeric", "text", "bool", "date", "timestamp", "json") else "any"


def literal_type(value: Any) -> Type:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, Decimal):
        return "numeric"
    if isinstance(value, dt.datetime):
        return "timestamp"
    if isinstance(value, dt.date):
        return "date"
    return "text"


def show(t: Type) -> str:
    return f"({', '.join(show(i) for i in t)})" if isinstance(t, tuple) else t


def infer(e: ast.Expr, env: Env) -> Type:
    if isinstance(e, ast.Literal):
        return literal_type(e.value)
    if isinstance(e, ast.ParamRef):
        if e.name not in env.params:
            known = ", ".join(sorted(env.params)) or "none declared"
            env.problem(e.span, f"unknown param '{e.name}' (params: {known})")
            return "any"
        return env.params[e.name]
    if isinstance(e, ast.Column | ast.KeyRef | ast.ColumnSet):
        if env.group:
            env.problem(e.span, f"a {env.context} reads rows only inside count, sum(), min() or max()")
            return "any"
        return _row_ref(e, env)
    if isinstance(e, ast.Aggregate):
        return _aggregate(e, env)
    if isinstance(e, ast.Call):
        return _call(e, env)
    if isinstance(e, ast.Neg):
        t = infer(e.operand, env)
        _need_number(e.operand, t, env, "negate")
        return t if t in NUMBERS else "any"
    if isinstance(e, ast.Not):
        _need_bool(e.operand, infer(e.operand, env), env)
        return "bool"
    if isinstance(e, ast.BoolOp):
        _need_bool(e.left, infer(e.left, env), env)
        _need_bool(e.right, infer(e.right, env), env)
        return "bool"
    if isinstance(e, ast.Arith):
        lt, rt = infer(e.left, env), infer(e.right, env)
        ok = _need_number(e.left, lt, env, e.op) & _need_number(e.right, rt, env, e.op)
        if not ok:
            return "any"
        if "null" in (lt, rt):
            return "null"
        return "int" if lt == rt == "int" and e.op != "/" else "numeric"
    if isinstance(e, ast.Compare):
        lt, rt = infer(e.left, env), infer(e.right, env)
        if not comparable(lt, rt, e.left, e.right):
            env.problem(e.span, f"cannot compare {show(lt)} with {show(rt)}")
        elif e.op not in ("==", "!=") and not (_ordered(lt) and _ordered(rt)):
            env.problem(e.span, f"{e.op} needs numbers, text, dates or timestamps, not {show(lt)}")
        return "bool"
    if isinstance(e, ast.In):
        it = infer(e.item, env)
        options = e.options.items if isinstance(e.options, ast.ListExpr | ast.TupleExpr) else ()
        for o in options:
            ot = infer(o, env)
            if not comparable(it, ot, e.item, o):
                env.problem(o.span, f"cannot compare {show(it)} with {show(ot)} in `in`")
        return "bool"
    if isinstance(e, ast.IsNull):
        infer(e.operand, env)
        return "bool"
    if isinstance(e, ast.TupleExpr):
        return tuple(infer(i, env) for i in e.items)
    env.problem(e.span, "a list is only allowed after `in`")  # ListExpr elsewhere
    return "any"


def comparable(a: Type, b: Type, ea: ast.Expr | None = None, eb: ast.Expr | None = None) -> bool:
    """Whether values of types a and b compare. A text *literal* compares with a date or timestamp
    when it parses as one (it is converted once, at compile time)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        if not (isinstance(a, tuple) and isinstance(b, tuple)) or len(a) != len(b):
            return "any" in (a, b)
        items_a = ea.items if isinstance(ea, ast.TupleExpr) else (None,) * len(a)
        items_b = eb.items if isinstance(eb, ast.TupleExpr) else (None,) * len(b)
        return all(comparable(x, y, i, j) for x, y, i, j in zip(a, b, items_a, items_b, strict=True))
    if a == b or "any" in (a, b) or "null" in (a, b) or {a, b} <= NUMBERS:
        return True
    for kind, other, lit in ((a, b, eb), (b, a, ea)):
        if kind in ("date", "timestamp") and other == "text" and isinstance(lit, ast.Literal):
            return coerce_text(kind, lit.value) is not None
    return False


def coerce_text(kind: str, value: Any) -> Any:
    """A text literal as a date or timestamp value, or None when it does not parse."""
    if not isinstance(value, str):
        return None
    try:
        return dt.date.fromisoformat(value) if kind == "date" else parse_timestamp(value)
    except ValueError:
        return None


def _ordered(t: Type) -> bool:
    return not isinstance(t, tuple) and (t in ORDERED or t == "any")


def _need_number(e: ast.Expr, t: Type, env: Env, what: str) -> bool:
    if isinstance(t, tuple) or t not in NUMBERS | {"null", "any"}:
        env.problem(e.span, f"cannot {what} {show(t)} in a {env.context}: arithmetic needs numbers")
        return False
    return True


def _need_bool(e: ast.Expr, t: Type, env: Env) -> None:
    if t not in ("bool", "null", "any"):
        env.problem(e.span, f"expected a condition (true or false), got {show(t)}")


def _row_ref(e: ast.Column | ast.KeyRef | ast.ColumnSet, env: Env) -> Type:
    info = env.table
    if info is None:
        env.problem(e.span, f"a {env.context} cannot read row values; it must be a constant")
        return "any"
    if isinstance(e, ast.KeyRef):
        kinds = tuple(column_kind(info, c) for c in info.primary_key)
        return kinds[0] if len(kinds) == 1 else kinds
    if isinstance(e, ast.ColumnSet):
        for c in e.columns:
            if c not in info.columns:
                env.problem(e.span, f"table {info.name} has no column '{c}'")
        if env.op != "update":
            env.problem(
                e.span,
                f"{e.func}() only means something on updates, but this {env.context} is for"
                f" {_op_text(env.op)}; it never matches there (use `update`)",
                fatal=False,
            )
        return "bool"
    if e.name not in info.columns:
        env.problem(e.span, f"table {info.name} has no column '{e.name}'")
        return "any"
    if e.ns == "key" and e.name not in info.primary_key:
        pk = ", ".join(info.primary_key)
        env.problem(e.span, f"'{e.name}' is not in the primary key of {info.name} ({pk}); use after.{e.name}")
    if e.ns == "before" and env.op in ("insert", "state"):
        env.problem(
            e.span,
            f"{_op_text(env.op)} has no before row, so before.{e.name} is always null here",
            fatal=False,
        )
    if e.ns == "after" and env.op == "delete":
        env.problem(
            e.span, f"a deleted row has no after row, so after.{e.name} is always null here", fatal=False
        )
    return column_kind(info, e.name)


def _op_text(op: str) -> str:
    return {
        "insert": "an insert",
        "delete": "a delete",
        "any": "any operation",
        "state": "a final-state row",
    }.get(op, op)


def _call(e: ast.Call, env: Env) -> Type:
    types = [infer(a, env) for a in e.args]
    if e.func in ("lower", "upper"):
        if types[0] not in ("text", "null", "any"):
            env.problem(e.args[0].span, f"{e.func}() needs text, got {show(types[0])}")
        return "text"
    if e.func == "abs":
        _need_number(e.args[0], types[0], env, "take abs() of")
        return types[0] if types[0] in NUMBERS else "any"
    # coalesce: all arguments must compare with each other; the result is the first non-null's type.
    result: Type = "null"
    for arg, t in zip(e.args, types, strict=True):
        if not comparable(result, t):
            env.problem(arg.span, f"coalesce() mixes {show(result)} and {show(t)}")
            return "any"
        if result in ("null", "int") and t != "null":
            result = t
    return result


def _aggregate(e: ast.Aggregate, env: Env) -> Type:
    """``count`` is an int; ``sum(x)`` has x's number type; ``min(x)``/``max(x)`` x's ordered type."""
    if not env.group:
        env.problem(e.span, f"{e.func} is only allowed in the having clause and price of an aggregate rule")
        return "any"
    if e.arg is None:
        return "int"
    inner = Env(env.table, env.op, env.params, f"{e.func}()", env.problems)
    t = infer(e.arg, inner)
    if e.func == "sum":
        if isinstance(t, tuple) or t not in NUMBERS | {"null", "any"}:
            env.problem(e.arg.span, f"sum() needs numbers, but this is {show(t)}")
            return "any"
        return t
    if not _ordered(t) and t != "null":
        env.problem(e.arg.span, f"{e.func}() needs numbers, text, dates or timestamps, not {show(t)}")
        return "any"
    return t
