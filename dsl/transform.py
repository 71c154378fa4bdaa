"""Lark tree to the typed AST (``dsl.ast``), with the schema-free checks that need only the text.

Errors raised here reuse the node's position: ``file:line:col: message`` plus the source line and a
caret. Checks that need the database schema live in ``dsl.check``.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from lark import Token, Transformer, Tree, v_args
from lark.exceptions import VisitError

from agentrel.dsl import ast
from agentrel.dsl.errors import Span, SpecError
from agentrel.dsl.params import ParamTypeError, coerce_literal
from agentrel.dsl.values import parse_timestamp


def to_ast(tree: Tree[Token], text: str, path: str) -> ast.Spec:
    try:
        spec = _ToAst(text, path).transform(tree)
    except VisitError as err:
        if isinstance(err.orig_exc, SpecError):
            raise err.orig_exc from None
        raise
    assert isinstance(spec, ast.Spec)
    return spec


def unescape(token: str) -> str:
    body = token[1:-1]
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            nxt = body[i + 1]
            out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


@v_args(meta=True)
class _ToAst(Transformer[Token, Any]):
    def __init__(self, text: str, path: str) -> None:
        super().__init__(visit_tokens=False)
        self.text = text
        self.path = path

    # ---- helpers ---------------------------------------------------------------------------------

    def _span(self, meta: Any) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.path, 1, 1)
        return Span(self.path, meta.line, meta.column)

    def _tspan(self, tok: Token) -> Span:
        return Span(self.path, tok.line or 1, tok.column or 1)

    def _error(self, span: Span, message: str) -> SpecError:
        return SpecError.at(span, message, self.text)

    def _int(self, tok: Token, what: str) -> int:
        if "." in tok:
            raise self._error(self._tspan(tok), f"{what} must be a whole number, not {tok}")
        return int(tok)

    def _choice(self, tok: Token, allowed: tuple[str, ...], what: str) -> Any:
        if str(tok) not in allowed:
            raise self._error(
                self._tspan(tok),
                f"unknown {what} '{tok}': expected {', '.join(allowed[:-1])} or {allowed[-1]}",
            )
        return str(tok)

    # ---- spec structure --------------------------------------------------------------------------

    def start(self, meta: Any, items: list[Any]) -> ast.Spec:
        name, version = items[0]
        params: list[ast.Param] = []
        volatiles: list[ast.Volatile] = []
        rules: list[ast.Rule] = []
        fallback: ast.Fallback | None = None
        requirements: list[ast.Requirement] = []
        seen_params: dict[str, ast.Param] = {}
        seen_rules: dict[str, Span] = {}
        seen_reqs: dict[str, Span] = {}
        for item in items[1:]:
            if isinstance(item, ast.Param):
                if item.name in seen_params:
                    raise self._error(item.span, f"param '{item.name}' is declared twice")
                seen_params[item.name] = item
                params.append(item)
            elif isinstance(item, ast.Volatile):
                volatiles.append(item)
            elif isinstance(item, ast.Rule | ast.Fallback):
                if item.label in seen_rules:
                    raise self._error(
                        item.span,
                        f"rule label '{item.label}' is already used at line {seen_rules[item.label].line}",
                    )
                seen_rules[item.label] = item.span
                if isinstance(item, ast.Fallback):
                    if fallback is not None:
                        raise self._error(item.span, "a spec has at most one fallback rule")
                    fallback = item
                else:
                    rules.append(item)
            else:
                if item.label in seen_reqs:
                    raise self._error(
                        item.span,
                        f"requirement label '{item.label}' is already used"
                        f" at line {seen_reqs[item.label].line}",
                    )
                seen_reqs[item.label] = item.span
                requirements.append(item)
        return ast.Spec(
            name=name,
            version=version,
            params=tuple(params),
            volatiles=tuple(volatiles),
            rules=tuple(rules),
            fallback=fallback,
            requirements=tuple(requirements),
            span=Span(self.path, 1, 1),
        )

    def header(self, meta: Any, c: list[Token]) -> tuple[str, int]:
        return unescape(c[0]), self._int(c[1], "the version")

    def param(self, meta: Any, c: list[Any]) -> ast.Param:
        name, type_tok = c[0], c[1]
        type_name = ast.PARAM_TYPE_ALIASES.get(str(type_tok), str(type_tok))
        if type_name not in ast.PARAM_TYPES:
            raise self._error(
                self._tspan(type_tok),
                f"unknown param type '{type_tok}': expected {', '.join(ast.PARAM_TYPES)}",
            )
        default = c[2] if len(c) > 2 else None
        span = self._span(meta)
        if default is not None:
            value = ast.literal_value(default)
            if value is ast.NOT_LITERAL:
                raise self._error(default.span, 'a param default must be a literal value, e.g. 7 or "open"')
            try:
                coerce_literal(type_name, value)
            except ParamTypeError as err:
                raise self._error(default.span, f"default of param '{name}': {err}") from None
        return ast.Param(str(name), type_name, default, span)

    def volatile(self, meta: Any, c: list[Token]) -> ast.Volatile:
        return ast.Volatile(str(c[0]), tuple(str(t) for t in c[1:]), self._span(meta))

    def allow(self, meta: Any, c: list[Any]) -> ast.Rule:
        self._row_level(c[1].where)
        return ast.Rule("allow", unescape(c[0]), c[1], span=self._span(meta))

    def damage(self, meta: Any, c: list[Any]) -> ast.Rule:
        label, sev, irr = unescape(c[0]), c[1], c[2]
        grouping = c.pop() if isinstance(c[-1], ast.Grouping) else None
        match: ast.Match = c[-1]
        price = c[3] if len(c) == 5 else None
        self._row_level(match.where, *(grouping.by if grouping else ()))
        if grouping is None:
            self._row_level(price)
        else:
            self._group_level(grouping.having, "the having clause")
            self._group_level(price, "the price of an aggregate rule")
        return ast.Rule(
            "damage",
            label,
            match,
            self._choice(sev, ast.SEVERITIES, "severity"),
            self._choice(irr, ast.IRREVERSIBILITIES, "irreversibility"),
            price,
            self._span(meta),
            grouping,
        )

    def grouping(self, meta: Any, c: list[Any]) -> ast.Grouping:
        return ast.Grouping(tuple(c[:-1]), c[-1], self._span(meta))

    def fallback(self, meta: Any, c: list[Any]) -> ast.Fallback:
        price = c[3] if len(c) > 3 else None
        self._row_level(price)
        return ast.Fallback(
            unescape(c[0]),
            self._choice(c[1], ast.SEVERITIES, "severity"),
            self._choice(c[2], ast.IRREVERSIBILITIES, "irreversibility"),
            price,
            self._span(meta),
        )

    # Aggregates are placed by these two checks, here rather than in ``check_spec``, because they need no
    # schema and a misplaced ``count`` is a structural mistake worth a caret.

    def _row_level(self, *exprs: ast.Expr | None) -> None:
        """No aggregate in a per-row expression (a where clause, a row rule's price, a group key)."""
        for e in exprs:
            for node in ast.walk(e) if e is not None else ():
                if isinstance(node, ast.Aggregate):
                    raise self._error(
                        node.span,
                        f"{node.func} is an aggregate: it is only allowed in the having clause and the"
                        " price of an aggregate damage rule (`... group by X having count > 1`)",
                    )

    def _group_level(self, e: ast.Expr | None, what: str) -> None:
        """In a having clause or aggregate price, rows are read only inside an aggregate (a group has
        many rows), and aggregates do not nest."""
        if e is None:
            return
        if isinstance(e, ast.Aggregate):
            for node in ast.walk(e.arg) if e.arg is not None else ():
                if isinstance(node, ast.Aggregate):
                    raise self._error(node.span, f"aggregates do not nest: {node.func} inside {e.func}()")
            return
        if isinstance(e, ast.Column | ast.KeyRef | ast.ColumnSet):
            raise self._error(
                e.span,
                f"{what} describes a whole group, so it reads rows only inside count, sum(), min()"
                " or max(), e.g. sum(after.amount)",
            )
        for child in ast.children(e):
            self._group_level(child, what)

    def price(self, meta: Any, c: list[Any]) -> ast.Expr:
        return c[0]  # type: ignore[no-any-return]

    def require(self, meta: Any, c: list[Any]) -> ast.Requirement:
        self._row_level(c[1].where)
        return ast.Requirement(unescape(c[0]), c[1], self._span(meta))

    def match(self, meta: Any, c: list[Any]) -> ast.Match:
        (table, table_span) = c[1]
        return ast.Match(c[0], table, c[2] if len(c) > 2 else None, self._span(meta), table_span)

    def quantifier(self, meta: Any, c: list[Any]) -> ast.Quantifier:
        (mode, count), rest = c[0], c[1:]
        op = rest.pop(0) if isinstance(rest[0], str) else None
        table, table_span = rest.pop(0)
        where = rest[0] if rest else None
        return ast.Quantifier(mode, count, op, table, where, self._span(meta), table_span)

    def op(self, meta: Any, c: list[Token]) -> str:
        return str(c[0])

    def target(self, meta: Any, c: list[Token]) -> tuple[str | None, Span]:
        return (None if c[0].type == "STAR" else str(c[0])), self._tspan(c[0])

    def exists(self, meta: Any, c: list[Token]) -> tuple[str, int]:
        return "exists", 1

    def no(self, meta: Any, c: list[Token]) -> tuple[str, int]:
        return "no", 0

    def exactly(self, meta: Any, c: list[Token]) -> tuple[str, int]:
        return "exactly", self._int(c[0], "a count")

    def at_least(self, meta: Any, c: list[Token]) -> tuple[str, int]:
        return "at_least", self._int(c[0], "a count")

    def at_most(self, meta: Any, c: list[Token]) -> tuple[str, int]:
        return "at_most", self._int(c[0], "a count")

    # ---- expressions -----------------------------------------------------------------------------

    def or_(self, meta: Any, c: list[Any]) -> ast.BoolOp:
        return ast.BoolOp("or", c[0], c[1], self._span(meta))

    def and_(self, meta: Any, c: list[Any]) -> ast.BoolOp:
        return ast.BoolOp("and", c[0], c[1], self._span(meta))

    def not_(self, meta: Any, c: list[Any]) -> ast.Not:
        return ast.Not(c[0], self._span(meta))

    def compare(self, meta: Any, c: list[Any]) -> ast.Compare:
        return ast.Compare(str(c[1]), c[0], c[2], self._span(meta))  # type: ignore[arg-type]

    def _in(self, meta: Any, c: list[Any], negated: bool) -> ast.In:
        options = c[1]
        if not isinstance(options, ast.ListExpr | ast.TupleExpr):
            raise self._error(options.span, '`in` needs a list, e.g. in [1, 2] or in ["open"]')
        return ast.In(c[0], options, negated, self._span(meta))

    def in_(self, meta: Any, c: list[Any]) -> ast.In:
        return self._in(meta, c, False)

    def not_in(self, meta: Any, c: list[Any]) -> ast.In:
        return self._in(meta, c, True)

    def is_null(self, meta: Any, c: list[Any]) -> ast.IsNull:
        return ast.IsNull(c[0], False, self._span(meta))

    def is_not_null(self, meta: Any, c: list[Any]) -> ast.IsNull:
        return ast.IsNull(c[0], True, self._span(meta))

    def arith(self, meta: Any, c: list[Any]) -> ast.Arith:
        return ast.Arith(str(c[1]), c[0], c[2], self._span(meta))  # type: ignore[arg-type]

    def neg(self, meta: Any, c: list[Any]) -> ast.Neg:
        return ast.Neg(c[1], self._span(meta))

    def number(self, meta: Any, c: list[Token]) -> ast.Literal:
        value: int | Decimal = Decimal(str(c[0])) if "." in c[0] else int(c[0])
        return ast.Literal(value, self._span(meta))

    def string(self, meta: Any, c: list[Token]) -> ast.Literal:
        return ast.Literal(unescape(c[0]), self._span(meta))

    def true(self, meta: Any, c: list[Token]) -> ast.Literal:
        return ast.Literal(True, self._span(meta))

    def false(self, meta: Any, c: list[Token]) -> ast.Literal:
        return ast.Literal(False, self._span(meta))

    def null(self, meta: Any, c: list[Token]) -> ast.Literal:
        return ast.Literal(None, self._span(meta))

    def date(self, meta: Any, c: list[Token]) -> ast.Literal:
        text = unescape(c[0])
        try:
            return ast.Literal(dt.date.fromisoformat(text), self._span(meta))
        except ValueError:
            raise self._error(self._tspan(c[0]), f"'{text}' is not a date (expected YYYY-MM-DD)") from None

    def timestamp(self, meta: Any, c: list[Token]) -> ast.Literal:
        text = unescape(c[0])
        try:
            return ast.Literal(parse_timestamp(text), self._span(meta))
        except ValueError:
            raise self._error(
                self._tspan(c[0]), f"'{text}' is not a timestamp (expected e.g. 2026-01-02T03:04:05Z)"
            ) from None

    def before(self, meta: Any, c: list[Token]) -> ast.Column:
        return ast.Column("before", str(c[0]), self._span(meta))

    def after(self, meta: Any, c: list[Token]) -> ast.Column:
        return ast.Column("after", str(c[0]), self._span(meta))

    def key_col(self, meta: Any, c: list[Token]) -> ast.Column:
        return ast.Column("key", str(c[0]), self._span(meta))

    def key(self, meta: Any, c: list[Token]) -> ast.KeyRef:
        return ast.KeyRef(self._span(meta))

    def count(self, meta: Any, c: list[Token]) -> ast.Aggregate:
        return ast.Aggregate("count", None, self._span(meta))

    def param_ref(self, meta: Any, c: list[Token]) -> ast.ParamRef:
        return ast.ParamRef(str(c[0]), self._span(meta))

    def call(self, meta: Any, c: list[Any]) -> ast.Expr:
        func, args = str(c[0]), tuple(a for a in c[1:] if a is not None)
        span = self._span(meta)
        if func in ("sum", "min", "max"):
            if len(args) != 1:
                raise self._error(span, f"{func}() takes exactly one argument, got {len(args)}")
            return ast.Aggregate(func, args[0], span)  # type: ignore[arg-type]
        if func not in ast.FUNCTIONS:
            known = ", ".join(ast.FUNCTIONS + ast.COLUMN_SET_FUNCTIONS + ast.AGGREGATE_FUNCTIONS)
            raise self._error(span, f"unknown function '{func}': expected one of {known}")
        if func == "coalesce" and len(args) < 2:
            raise self._error(span, "coalesce() takes two or more arguments")
        if func != "coalesce" and len(args) != 1:
            raise self._error(span, f"{func}() takes exactly one argument, got {len(args)}")
        return ast.Call(func, args, span)

    def changed(self, meta: Any, c: list[Token]) -> ast.ColumnSet:
        return ast.ColumnSet("changed", tuple(str(t) for t in c), self._span(meta))

    def only_changed(self, meta: Any, c: list[Token]) -> ast.ColumnSet:
        return ast.ColumnSet("only_changed", tuple(str(t) for t in c), self._span(meta))

    def tuple_(self, meta: Any, c: list[Any]) -> ast.TupleExpr:
        return ast.TupleExpr(tuple(c), self._span(meta))

    def list_(self, meta: Any, c: list[Any]) -> ast.ListExpr:
        return ast.ListExpr(tuple(x for x in c if x is not None), self._span(meta))
