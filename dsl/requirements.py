"""Requirement evaluation: counting final-state rows (or the run's changes) that match a condition.

``exactly 1 cases where ...`` counts rows of ``cases`` in the after dump; ``exactly 1 update cases
where ...`` counts the run's updates to ``cases``. Counting stops as soon as the answer is decided,
and a condition that fixes the whole primary key (``key.id == case_id``) is a dict lookup, not a
scan.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING, Any

from agentrel.dsl import ast
from agentrel.dsl.check import applicable_tables, referenced_columns
from agentrel.dsl.compile import Compiler, chain
from agentrel.dsl.diff import TableDiff
from agentrel.dsl.errors import DslError
from agentrel.dsl.state import State, TableInfo

if TYPE_CHECKING:
    from agentrel.dsl.label import Plan


def evaluate_requirement(plan: Plan, req: ast.Requirement, after: State, diffs: list[TableDiff]) -> bool:
    q = req.quantifier
    limit = {"exists": 1, "no": 1, "exactly": q.count + 1, "at_least": q.count, "at_most": q.count + 1}[
        q.mode
    ]
    by_table = {td.info.name: td for td in diffs}
    count = 0
    try:
        for info in applicable_tables(q.table, referenced_columns(q.where), plan.schema):
            if count >= limit:
                break
            if q.op is None:
                compiler = Compiler(info, "state", plan.params, plan.param_types)
                count += _count_rows(compiler, q.where, info, after, limit - count)
            elif info.name in by_table:
                count += _count_changes(plan, q, info, by_table[info.name])
    except (TypeError, ValueError, ArithmeticError) as err:
        raise DslError(f"{req.span}: requirement '{req.label}' could not be evaluated: {err}") from None
    return q.holds(count)


def _count_changes(plan: Plan, q: ast.Quantifier, info: TableInfo, td: TableDiff) -> int:
    count = 0
    for kind, changes in td.by_kind():
        if q.op not in ("any", kind):
            continue
        pred = Compiler(info, kind, plan.params, plan.param_types, td.volatile).predicate(q.where)
        if pred is None:
            count += len(changes)
        else:
            count += sum(1 for b, a, k in changes if pred(b, a, k))
    return count


def _count_rows(compiler: Compiler, where: ast.Expr | None, info: TableInfo, after: State, limit: int) -> int:
    """Matching rows of one table in the final state, counted up to ``limit`` (enough to decide)."""
    rows = after.tables[info.name].rows
    pred = compiler.predicate(where)
    if pred is None:
        return len(rows)
    pinned = _pinned_key(compiler, where, info)
    if pinned is not None:
        row = rows.get(pinned)
        return int(row is not None and bool(pred(None, row, pinned)))
    return sum(islice((1 for k, row in rows.items() if pred(None, row, k)), limit))


def _pinned_key(compiler: Compiler, where: ast.Expr | None, info: TableInfo) -> tuple[Any, ...] | None:
    """The full primary key when ``where`` fixes it with top-level ``and``-ed equalities to constants
    (``key == 7``, ``key.a == 1 and key.b == 2``, ``key == (1, 2)``), so the row is looked up instead
    of scanned. Only for keys stored as they compare (int, text and bool columns)."""
    if (
        where is None
        or not info.kinds
        or any(info.kind(c) not in ("int", "text", "bool") for c in info.primary_key)
    ):
        return None
    pk = info.primary_key
    fixed: dict[str, Any] = {}
    for term in chain(where, "and"):
        if not (isinstance(term, ast.Compare) and term.op == "=="):
            continue
        for side, other in ((term.left, term.right), (term.right, term.left)):
            if isinstance(side, ast.Column) and side.ns == "key":
                value = compiler.expr(other)
                if value.const:
                    fixed[side.name] = value.value
            elif isinstance(side, ast.KeyRef):
                value = compiler.expr(other)
                if value.const and len(pk) == 1:
                    fixed[pk[0]] = value.value
                elif value.const and isinstance(value.value, tuple) and len(value.value) == len(pk):
                    fixed.update(zip(pk, value.value, strict=True))
    if not all(c in fixed for c in pk):
        return None
    return tuple(fixed[c] for c in pk)
