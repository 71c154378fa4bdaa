"""AST back to canonical spec text. ``parse_spec(print_spec(s)) == s`` (spans aside) for any spec.

Expressions get the fewest parentheses the grammar's precedence allows; binary operators are left
associative, so a right operand of equal precedence is parenthesized.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from agentrel.dsl import ast
from agentrel.dsl.values import format_timestamp

# Binding strength, loosest first (matches dsl/agentrel.lark).
_OR, _AND, _NOT, _CMP, _SUM, _PROD, _UNARY, _ATOM = range(8)


def print_spec(spec: ast.Spec) -> str:
    out = [f"spec {quote(spec.name)} version {spec.version}"]
    if spec.params or spec.volatiles:
        out.append("")
    for p in spec.params:
        default = f" = {print_expr(p.default)}" if p.default is not None else ""
        out.append(f"param {p.name}: {p.type}{default}")
    for v in spec.volatiles:
        out.append(f"volatile {v.table}({', '.join(v.columns)})")
    for r in spec.rules:
        out.append("")
        out.append(print_rule(r))
    if spec.fallback is not None:
        f = spec.fallback
        out.append("")
        out.append(f"fallback {quote(f.label)} {f.severity} {f.irreversibility}{_price(f.price)}")
    if spec.requirements:
        out.append("")
    for q in spec.requirements:
        out.append(f"require {quote(q.label)}:\n    {print_quantifier(q.quantifier)}")
    return "\n".join(out) + "\n"


def print_rule(r: ast.Rule) -> str:
    head = f"allow {quote(r.label)}"
    if r.kind == "damage":
        head = f"damage {quote(r.label)} {r.severity} {r.irreversibility}{_price(r.price)}"
    text = f"{head}:\n    {print_match(r.match.op, r.match.table, r.match.where)}"
    g = r.grouping
    if g is not None:
        by = f"group by {', '.join(print_expr(e) for e in g.by)} " if g.by else ""
        text += f"\n    {by}having {print_expr(g.having)}"
    return text


def print_match(op: str | None, table: str | None, where: ast.Expr | None) -> str:
    text = (f"{op} " if op else "") + (table if table is not None else "*")
    return text + (f" where {print_expr(where)}" if where is not None else "")


def print_quantifier(q: ast.Quantifier) -> str:
    word = {
        "exists": "exists",
        "no": "no",
        "exactly": f"exactly {q.count}",
        "at_least": f"at least {q.count}",
        "at_most": f"at most {q.count}",
    }[q.mode]
    return f"{word} {print_match(q.op, q.table, q.where)}"


def _price(price: ast.Expr | None) -> str:
    return f" price {print_expr(price)}" if price is not None else ""


def quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def print_expr(e: ast.Expr) -> str:
    return _expr(e)[0]


def _wrap(e: ast.Expr, at_least: int) -> str:
    text, level = _expr(e)
    return text if level >= at_least else f"({text})"


def _expr(e: ast.Expr) -> tuple[str, int]:
    """Text of ``e`` and its binding level."""
    if isinstance(e, ast.Literal):
        return _literal(e.value), _ATOM
    if isinstance(e, ast.Column):
        return f"{e.ns}.{e.name}", _ATOM
    if isinstance(e, ast.KeyRef):
        return "key", _ATOM
    if isinstance(e, ast.ParamRef):
        return e.name, _ATOM
    if isinstance(e, ast.Call):
        return f"{e.func}({', '.join(print_expr(a) for a in e.args)})", _ATOM
    if isinstance(e, ast.Aggregate):
        return (e.func if e.arg is None else f"{e.func}({print_expr(e.arg)})"), _ATOM
    if isinstance(e, ast.ColumnSet):
        return f"{e.func}({', '.join(e.columns)})", _ATOM
    if isinstance(e, ast.TupleExpr):
        return f"({', '.join(print_expr(i) for i in e.items)})", _ATOM
    if isinstance(e, ast.ListExpr):
        return f"[{', '.join(print_expr(i) for i in e.items)}]", _ATOM
    if isinstance(e, ast.Neg):
        return f"-{_wrap(e.operand, _UNARY)}", _UNARY
    if isinstance(e, ast.Not):
        return f"not {_wrap(e.operand, _NOT)}", _NOT
    if isinstance(e, ast.Arith):
        level = _SUM if e.op in "+-" else _PROD
        return f"{_wrap(e.left, level)} {e.op} {_wrap(e.right, level + 1)}", level
    if isinstance(e, ast.Compare):
        return f"{_wrap(e.left, _SUM)} {e.op} {_wrap(e.right, _SUM)}", _CMP
    if isinstance(e, ast.BoolOp):
        level = _OR if e.op == "or" else _AND
        return f"{_wrap(e.left, level)} {e.op} {_wrap(e.right, level + 1)}", level
    if isinstance(e, ast.In):
        word = "not in" if e.negated else "in"
        return f"{_wrap(e.item, _SUM)} {word} {_wrap(e.options, _ATOM)}", _CMP
    if isinstance(e, ast.IsNull):
        return f"{_wrap(e.operand, _SUM)} is {'not ' if e.negated else ''}null", _CMP
    raise TypeError(f"not an expression: {e!r}")  # pragma: no cover


def _literal(value: ast.LiteralValue) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        text = format(value, "f")
        return text if "." in text else text + ".0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dt.datetime):
        return f"timestamp {quote(format_timestamp(value))}"
    if isinstance(value, dt.date):
        return f"date {quote(value.isoformat())}"
    return quote(value)
