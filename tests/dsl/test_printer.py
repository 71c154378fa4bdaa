"""The printer: parse -> print -> parse is the identity, for generated expressions and whole specs."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from agentrel.dsl import ast
from agentrel.dsl.api import parse_spec, print_spec
from agentrel.dsl.printer import print_expr

names = st.sampled_from(["status", "amount", "case_id", "kind", "date", "key"])
params = st.sampled_from(["cap", "case_id", "queue", "notes"])
literals = st.one_of(
    st.integers(0, 10**6),
    st.decimals(min_value=0, max_value=10**6, places=2, allow_nan=False, allow_infinity=False),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8),
    st.booleans(),
    st.none(),
    st.dates(),
    st.datetimes(timezones=st.just(dt.UTC)),
).map(ast.Literal)
leaves = st.one_of(
    literals,
    params.map(ast.ParamRef),
    st.builds(ast.Column, st.sampled_from(["before", "after", "key"]), names),
    st.just(ast.KeyRef()),
    st.builds(
        ast.ColumnSet,
        st.sampled_from(["changed", "only_changed"]),
        st.lists(names, min_size=1, max_size=3).map(tuple),
    ),
)


def _extend(children: st.SearchStrategy[ast.Expr]) -> st.SearchStrategy[ast.Expr]:
    two = st.tuples(children, children)
    return st.one_of(
        st.builds(ast.Neg, children),
        st.builds(ast.Not, children),
        two.flatmap(lambda p: st.sampled_from("+-*/").map(lambda op: ast.Arith(op, *p))),
        two.flatmap(
            lambda p: st.sampled_from(["==", "!=", "<", "<=", ">", ">="]).map(lambda op: ast.Compare(op, *p))
        ),
        two.flatmap(lambda p: st.sampled_from(["and", "or"]).map(lambda op: ast.BoolOp(op, *p))),
        st.builds(
            ast.In,
            children,
            st.lists(children, max_size=3).map(lambda i: ast.ListExpr(tuple(i))),
            st.booleans(),
        ),
        st.builds(
            ast.In,
            children,
            st.lists(children, min_size=2, max_size=3).map(lambda i: ast.TupleExpr(tuple(i))),
        ),
        st.builds(ast.IsNull, children, st.booleans()),
        st.builds(ast.Call, st.sampled_from(["lower", "upper", "abs"]), children.map(lambda c: (c,))),
        st.builds(ast.Call, st.just("coalesce"), st.lists(children, min_size=2, max_size=3).map(tuple)),
        st.lists(children, min_size=2, max_size=3).map(lambda i: ast.TupleExpr(tuple(i))),
    )


expressions = st.recursive(leaves, _extend, max_leaves=12)


def _wrap(where: ast.Expr) -> str:
    return f'spec "p" version 1\nallow "a":\n    any * where {print_expr(where)}\n'


@settings(max_examples=300, deadline=None)
@given(expressions)
def test_expression_round_trip(where: ast.Expr) -> None:
    text = _wrap(where)
    parsed = parse_spec(text, "p.dmg").rules[0].match.where
    assert parsed == where
    assert _wrap(parsed) == text  # type: ignore[arg-type]


def test_whole_spec_round_trip_keeps_everything() -> None:
    text = """spec "all \\"things\\"" version 7
param cap: numeric = 250.00
param neg: int = -3
param day: date = date "2026-01-02"
param t: timestamp = "2026-01-02T03:04:05Z"
volatile tickets(updated_at, viewed_at)
damage "d" critical governance price after.amount - cap: insert credits where (a or b) and not c
allow "a\\tb": update tickets where key == (1, 2) and only_changed(status)
fallback "f" low substrate price 1.5
require "r1": at most 3 delete * where before.kind in ["x", "y"]
require "r2": no tickets
"""
    spec = parse_spec(text, "w.dmg")
    printed = print_spec(spec)
    again = parse_spec(printed, "w.dmg")
    assert again == spec and print_spec(again) == printed
    assert again.params[0].default == ast.Literal(Decimal("250.00"))
    assert again.name == 'all "things"' and again.rules[1].label == "a\tb"
