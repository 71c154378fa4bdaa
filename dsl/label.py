"""The labeler: (spec, params, before dump, after dump, run facts) -> Verdict. Pure.

Every row change is labelled by the first rule that matches it, in this order: damage rules (file
order), then allow rules (file order), then the fallback (the spec's, or the default "unexplained
mutation", medium, reversible, $0). Nothing is ever skipped. Rules are compiled once per
(table, operation) into closures, so a change is tested only against the rules that can apply to
it. The verdict does not depend on row or table order in the dumps: events are reported sorted by
(table, key) and everything else is a count or a sum.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import starmap
from operator import attrgetter
from typing import Any

from dsl import ast
from dsl.check import applicable_tables, check_spec, referenced_columns
from dsl.compile import Compiler, Fn
from dsl.diff import KINDS, Change, ChangeKind, TableDiff, diff_tables, sort_by_key
from dsl.errors import DslError, SpecError
from dsl.params import resolve_params
from dsl.requirements import evaluate_requirement
from dsl.state import State, TableInfo
from dsl.values import money
from dsl.verdict import DamageEvent, RequirementResult, RunFacts, Verdict, build_verdict


@dataclass(frozen=True, slots=True, eq=False)  # identity equality: counted by the 100,000
class CompiledRule:
    rule: ast.Rule | ast.Fallback
    allow: bool
    pred: Fn | None  # None: matches every change it is indexed under
    price: Fn  # (before, after, key) -> dollars, already rounded to cents
    # The rule's event fields, copied here because they are read once per damaged row.
    label: str
    severity: Any  # Severity | None (None on allow rules)
    irreversibility: Any  # Irreversibility | None


Dispatch = Callable[[Any, Any, Any], CompiledRule]


@dataclass(frozen=True)
class Plan:
    """A spec compiled against a schema with resolved params."""

    index: dict[tuple[str, str], Dispatch]  # (table, kind) -> the rule that labels a change
    params: dict[str, Any]
    param_types: dict[str, str]
    schema: dict[str, TableInfo]


def compile_plan(spec: ast.Spec, schema: dict[str, TableInfo], params: dict[str, Any]) -> Plan:
    """Compile every rule for every (table, operation) it can apply to. Raises SpecError when the
    spec has fatal problems against ``schema`` (unknown table, column or param, type errors)."""
    fatal = [p for p in check_spec(spec, schema) if p.fatal]
    if fatal:
        raise SpecError("\n".join(str(p) for p in fatal))
    types = {p.name: p.type for p in spec.params}
    volatile = volatile_columns(spec, schema)
    index: dict[tuple[str, str], list[CompiledRule]] = {(t, op): [] for t in schema for op in KINDS}
    for rule in spec.ordered_rules():
        m = rule.match
        refs = referenced_columns(m.where, rule.price)
        for info in applicable_tables(m.table, refs, schema):
            for op in KINDS if m.op == "any" else (m.op,):
                compiler = Compiler(info, op, params, types, volatile[info.name])
                index[(info.name, op)].append(_compile_rule(rule, m.where, compiler))
    fallback = _compile_rule(spec.effective_fallback(), None, Compiler(None, "any", params, types))
    return Plan({k: _dispatcher(v, fallback) for k, v in index.items()}, params, types, schema)


def volatile_columns(spec: ast.Spec, schema: dict[str, TableInfo]) -> dict[str, frozenset[str]]:
    """Per table, the columns the diff ignores: the dump's volatile columns plus the spec's."""
    extra = spec.extra_volatile()
    return {name: info.volatile | frozenset(extra.get(name, ())) for name, info in schema.items()}


def _dispatcher(rules: list[CompiledRule], fallback: CompiledRule) -> Dispatch:
    """``(before, after, key) -> rule``: the first rule whose condition holds; the first
    unconditional rule (or else the fallback) takes whatever is left."""
    tests: list[tuple[Fn, CompiledRule]] = []
    default = fallback
    for cr in rules:
        if cr.pred is None:
            default = cr
            break
        tests.append((cr.pred, cr))
    if not tests:
        return lambda b, a, k: default
    if len(tests) == 1:
        ((p0, r0),) = tests

        return lambda b, a, k: r0 if p0(b, a, k) else default

    def dispatch(b: Any, a: Any, k: Any) -> CompiledRule:
        for pred, cr in tests:
            if pred(b, a, k):
                return cr
        return default

    return dispatch


def _compile_rule(rule: ast.Rule | ast.Fallback, where: ast.Expr | None, compiler: Compiler) -> CompiledRule:
    allow = isinstance(rule, ast.Rule) and rule.kind == "allow"
    pred = compiler.predicate(where)
    price = compiler.expr(rule.price) if rule.price is not None else None
    if price is None or price.const:
        fixed = money(price.value if price is not None else 0)
        price_fn: Fn = lambda b, a, k: fixed  # noqa: E731
    else:
        pf = price.call()
        price_fn = lambda b, a, k: money(pf(b, a, k))  # noqa: E731
    severity = rule.severity if not allow else None
    irreversibility = rule.irreversibility if not allow else None
    return CompiledRule(rule, allow, pred, price_fn, rule.label, severity, irreversibility)


def label(
    spec: ast.Spec,
    params: Mapping[str, Any] | None,
    before: State,
    after: State,
    facts: RunFacts,
) -> Verdict:
    """Label one run. Raises ParamError (bad override), SpecError (spec unfit for these dumps) or
    DiffError (dumps of different schemas); never a bare exception for user mistakes."""
    plan = compile_plan(spec, before.schema(), resolve_params(spec, params))
    diffs = diff_tables(before, after, spec.extra_volatile())
    events: list[DamageEvent] = []
    allowed: Counter[str] = Counter()
    for td in diffs:
        events += classify(plan, td, allowed)
    requirements = [
        RequirementResult(label=r.label, met=evaluate_requirement(plan, r, after, diffs))
        for r in spec.requirements
    ]
    changes = sum(len(td) for td in diffs)
    return build_verdict(events, changes, requirements, facts, dict(allowed), f"{spec.name}@{spec.version}")


def classify(plan: Plan, td: TableDiff, allowed: Counter[str]) -> list[DamageEvent]:
    """Label each change of one table; count allowed ones into ``allowed`` and return the damage
    events sorted by key."""
    name = td.info.name
    events: list[DamageEvent] = []
    for kind, changes in td.by_kind():
        dispatch = plan.index[(name, kind)]
        try:
            labels = list(starmap(dispatch, changes))
        except (TypeError, ValueError, ArithmeticError):
            raise _locate_error(dispatch, name, changes) from None
        for cr, n in Counter(labels).items():
            if cr.allow:
                allowed[cr.label] += n
        try:
            events += _events(name, kind, changes, labels, td.changed_columns)
        except (TypeError, ValueError, ArithmeticError):
            for c, cr in zip(changes, labels, strict=True):  # find the culprit for the message
                if cr.allow:
                    continue
                try:
                    cr.price(*c)
                except (TypeError, ValueError, ArithmeticError) as err:
                    raise _eval_error(cr.rule, name, c, err) from None
            raise
    return sort_by_key(events, attrgetter("key"))


def _events(
    table: str,
    kind: ChangeKind,
    changes: list[Change],
    labels: list[CompiledRule],
    changed_columns: Callable[[Any, Any], tuple[str, ...]],
) -> list[DamageEvent]:
    """The damage events of ``changes``, labelled by ``labels``. No list of (change, rule) pairs is
    built first: on the benchmark that is 63,000 more objects for the cyclic GC to walk."""
    return [
        DamageEvent(
            cr.label,
            table,
            c[2],
            kind,
            changed_columns(c[0], c[1]),
            cr.severity,
            cr.irreversibility,
            cr.price(*c),
        )
        for c, cr in zip(changes, labels, strict=True)
        if not cr.allow
    ]


def _locate_error(dispatch: Dispatch, table: str, changes: list[Change]) -> DslError:
    """Find the change an evaluation error came from, for the message."""
    for change in changes:
        try:
            dispatch(*change)
        except (TypeError, ValueError, ArithmeticError) as err:
            return DslError(f"a rule could not be evaluated on {table} {list(change[2])}: {err}")
    return DslError(f"a rule could not be evaluated on {table}")  # pragma: no cover


def _eval_error(rule: ast.Rule | ast.Fallback, table: str, change: Change, err: Exception) -> DslError:
    return DslError(
        f"{rule.span}: the price of rule '{rule.label}' failed on {table} {list(change[2])}: {err}"
    )
