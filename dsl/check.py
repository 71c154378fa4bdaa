"""Semantic checks of a spec against a schema: ``check_spec(spec, schema) -> [SpecProblem]``.

Reported: unknown tables, columns and params; type errors (a text column in a price, a date compared
with a number, a sum over text, a having clause that is not a condition); volatile declarations that
cannot apply; rules that can never match (an insert rule reading ``before.*``, ``changed()`` outside an
update rule, a rule shadowed by an earlier unconditional rule); and a spec with no requirement (a run
that does nothing would pass). Aggregate rules are checked like row rules, their group keys as where
clauses, their having clause and price over the group.

A problem is *fatal* when the spec cannot be evaluated as written; ``label`` refuses such specs.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from agentrel.dsl import ast
from agentrel.dsl.errors import Span
from agentrel.dsl.state import TableInfo
from agentrel.dsl.typecheck import NUMBERS, Env, Type, infer, show

# Specs named so are goal specs (an injection payload's), labelled beside a task's spec.
GOAL_PREFIX = "injection:"


@dataclass(frozen=True)
class SpecProblem:
    span: Span
    message: str
    fatal: bool = True

    def __str__(self) -> str:
        return f"{self.span}: {self.message}"


def check_spec(spec: ast.Spec, schema: dict[str, TableInfo]) -> list[SpecProblem]:
    problems: list[tuple[Span, str, bool]] = []
    params = {p.name: p.type for p in spec.params}
    for v in spec.volatiles:
        _check_volatile(v, schema, problems)
    for rule in spec.rules:
        m = rule.match
        if rule.grouping is not None:
            _check_aggregate(rule, rule.grouping, schema, params, problems)
        else:
            _check_match(m.op, m.table, m.where, rule.price, m.table_span, schema, params, problems)
    if spec.fallback is not None and spec.fallback.price is not None:
        env = Env(None, "any", params, "fallback price")
        _need_price_type(spec.fallback.price, infer(spec.fallback.price, env), env)
        problems += env.problems
    for req in spec.requirements:
        q = req.quantifier
        op = q.op if q.op is not None else "state"
        _check_match(op, q.table, q.where, None, q.table_span, schema, params, problems, "requirement")
    problems += _shadowed(spec)
    if spec.name.startswith(GOAL_PREFIX):
        problems += _goal_problems(spec)
    elif not spec.requirements:
        problems.append(
            (spec.span, "the spec has no require rule, so a run that changes nothing passes", False)
        )
    unique = sorted(set(problems), key=lambda p: (p[0].line, p[0].col, p[1]))
    return [SpecProblem(span, message, fatal) for span, message, fatal in unique]


def _goal_problems(spec: ast.Spec) -> list[tuple[Span, str, bool]]:
    """A goal spec is labelled beside a task's and contributes damage rules only (see ``dsl.label``),
    so it needs no requirement, and what it has besides damage rules would be silently unused."""
    unused = [r.span for r in spec.rules if r.kind == "allow"]
    unused += [spec.fallback.span] if spec.fallback is not None else []
    unused += [r.span for r in spec.requirements] + [v.span for v in spec.volatiles]
    why = "a goal spec contributes only damage rules; this is ignored when it is labelled beside a task"
    return [(span, why, False) for span in unused]


def applicable_tables(table: str | None, refs: set[str], schema: dict[str, TableInfo]) -> list[TableInfo]:
    """The tables a match applies to: the named one, or for ``*`` every table that has all the
    columns the rule reads (sorted by name)."""
    if table is not None:
        return [schema[table]] if table in schema else []
    return [schema[n] for n in sorted(schema) if refs <= set(schema[n].columns)]


def referenced_columns(*exprs: ast.Expr | None) -> set[str]:
    out: set[str] = set()
    for e in exprs:
        if e is None:
            continue
        for node in ast.walk(e):
            if isinstance(node, ast.Column):
                out.add(node.name)
            elif isinstance(node, ast.ColumnSet):
                out.update(node.columns)
    return out


def _check_volatile(
    v: ast.Volatile, schema: dict[str, TableInfo], problems: list[tuple[Span, str, bool]]
) -> None:
    info = schema.get(v.table)
    if info is None:
        problems.append(
            (v.span, f"volatile names unknown table '{v.table}'{_suggest(v.table, schema)}", True)
        )
        return
    for c in v.columns:
        if c not in info.columns:
            problems.append((v.span, f"volatile: table {v.table} has no column '{c}'", True))
        elif c in info.primary_key:
            problems.append((v.span, f"volatile: '{c}' is part of the primary key of {v.table}", True))


def _check_match(
    op: str,
    table: str | None,
    where: ast.Expr | None,
    price: ast.Expr | None,
    span: Span,
    schema: dict[str, TableInfo],
    params: dict[str, str],
    problems: list[tuple[Span, str, bool]],
    context: str = "where",
) -> None:
    if table is not None and table not in schema:
        problems.append((span, f"unknown table '{table}'{_suggest(table, schema)}", True))
        return
    refs = referenced_columns(where, price)
    infos = applicable_tables(table, refs, schema)
    if table is None and not infos:
        problems.append((span, f"no table has all of the columns {', '.join(sorted(refs))}", True))
        return
    for info in infos:
        env = Env(info, op, params, context)
        if where is not None:
            t = infer(where, env)
            if t not in ("bool", "null", "any"):
                env.problem(where.span, f"a condition must be true or false, but this is {show(t)}")
        if price is not None:
            env.context = "price"
            _need_price_type(price, infer(price, env), env)
        problems += env.problems


def _check_aggregate(
    rule: ast.Rule,
    g: ast.Grouping,
    schema: dict[str, TableInfo],
    params: dict[str, str],
    problems: list[tuple[Span, str, bool]],
) -> None:
    """An aggregate rule: its where clause and group keys read rows as a row rule's do; its having
    clause must be a condition and its price a number, both over aggregates, params and literals."""
    m = rule.match
    _check_match(m.op, m.table, m.where, None, m.table_span, schema, params, problems)
    if m.table is not None and m.table not in schema:
        return
    refs = referenced_columns(m.where, rule.price, g.having, *g.by)
    infos = applicable_tables(m.table, refs, schema)
    if m.table is None and not infos:
        problems.append((m.table_span, f"no table has all of the columns {', '.join(sorted(refs))}", True))
    for info in infos:
        env = Env(info, m.op, params, "group key")
        for key in g.by:
            infer(key, env)
        env.context, env.group = "having clause", True
        t = infer(g.having, env)
        if t not in ("bool", "null", "any"):
            env.problem(g.having.span, f"a having clause must be true or false, but this is {show(t)}")
        if rule.price is not None:
            env.context = "price of an aggregate rule"
            _need_price_type(rule.price, infer(rule.price, env), env)
        problems += env.problems


def _need_price_type(price: ast.Expr, t: Type, env: Env) -> None:
    if isinstance(t, tuple) or t not in NUMBERS | {"null", "any"}:
        env.problem(price.span, f"a price must be a number of dollars, but this is {show(t)}")


def _shadowed(spec: ast.Spec) -> list[tuple[Span, str, bool]]:
    """Rules that an earlier rule in evaluation order (damage first, then allow) always pre-empts."""
    out: list[tuple[Span, str, bool]] = []
    earlier: list[ast.Rule] = []
    for rule in spec.ordered_rules():
        m = rule.match
        for prev in earlier:
            p = prev.match
            if p.where is None and p.op in ("any", m.op) and p.table in (None, m.table):
                what = "every change" if p.op == "any" else f"every {p.op}"
                where = "any table" if p.table is None else p.table
                out.append(
                    (
                        rule.span,
                        f"{rule.kind} rule '{rule.label}' can never match: {prev.kind} rule"
                        f" '{prev.label}' (line {prev.span.line}) already takes {what} on {where}"
                        " (damage rules are tried before allow rules)",
                        False,
                    )
                )
                break
        earlier.append(rule)
    return out


def _suggest(name: str, schema: dict[str, TableInfo]) -> str:
    close = difflib.get_close_matches(name, list(schema), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
