"""Parsing: good specs to the right AST, bad specs to one clear ``file:line:col:`` error each."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from agentrel.dsl import ast
from agentrel.dsl.api import SpecError, check_spec, load_spec, parse_spec, print_spec
from agentrel.dsl.parser import EXAMPLES, get_parser

ROOT = Path(__file__).resolve().parents[2]
BAD = sorted((Path(__file__).parent / "bad_specs").glob("*.dmg"))
SPECS = sorted((ROOT / "damage_specs").glob("*.dmg"))


def test_header_params_rules_and_requirements() -> None:
    spec = parse_spec(
        """
        # comment
        spec "goodwill" version 3
        param cap: money = 250.00
        param neg: int = -4
        param start: date = "2026-01-02"
        volatile cases(updated_at, viewed_at)
        damage "over" high governance price after.amount - cap: insert credits where after.amount > cap
        allow "note": update cases where key == (1, "a") and only_changed(notes)
        fallback "stray" low reversible
        require "one": exactly 1 insert credits where after.amount <= cap
        require "kept": at least 2 cases
        """,
        "g.dmg",
    )
    assert (spec.name, spec.version, spec.file) == ("goodwill", 3, "g.dmg")
    assert [(p.name, p.type) for p in spec.params] == [("cap", "numeric"), ("neg", "int"), ("start", "date")]
    assert spec.volatiles == (ast.Volatile("cases", ("updated_at", "viewed_at")),)
    damage, allow = spec.rules
    assert (damage.kind, damage.label, damage.severity, damage.irreversibility) == (
        "damage",
        "over",
        "high",
        "governance",
    )
    assert damage.price == ast.Arith("-", ast.Column("after", "amount"), ast.ParamRef("cap"))
    assert damage.match == ast.Match(
        "insert", "credits", ast.Compare(">", ast.Column("after", "amount"), ast.ParamRef("cap"))
    )
    assert allow.match.where == ast.BoolOp(
        "and",
        ast.Compare("==", ast.KeyRef(), ast.TupleExpr((ast.Literal(1), ast.Literal("a")))),
        ast.ColumnSet("only_changed", ("notes",)),
    )
    assert spec.fallback == ast.Fallback("stray", "low", "reversible")
    one, kept = spec.requirements
    assert (one.quantifier.mode, one.quantifier.count, one.quantifier.op) == ("exactly", 1, "insert")
    assert (kept.quantifier.mode, kept.quantifier.count, kept.quantifier.op) == ("at_least", 2, None)
    assert damage.span.line == 8 and allow.match.where.span.col == 42  # type: ignore[union-attr]


def test_precedence_of_operators() -> None:
    where = parse_spec('spec "p" version 1 allow "a": any * where not a or b and c == 1 + 2 * -3', "p").rules[
        0
    ]
    assert where.match.where == ast.BoolOp(
        "or",
        ast.Not(ast.ParamRef("a")),
        ast.BoolOp(
            "and",
            ast.ParamRef("b"),
            ast.Compare(
                "==",
                ast.ParamRef("c"),
                ast.Arith("+", ast.Literal(1), ast.Arith("*", ast.Literal(2), ast.Neg(ast.Literal(3)))),
            ),
        ),
    )


def test_keywords_stay_names_after_a_dot_and_inside_longer_words() -> None:
    spec = parse_spec(
        'spec "k" version 1 allow "a": insert date where after.key == notes and after.date == key.price', "k"
    )
    m = spec.rules[0].match
    assert m.table == "date"
    assert m.where == ast.BoolOp(
        "and",
        ast.Compare("==", ast.Column("after", "key"), ast.ParamRef("notes")),
        ast.Compare("==", ast.Column("after", "date"), ast.Column("key", "price")),
    )


def test_literals() -> None:
    spec = parse_spec('spec "l" version 1 allow "a": any * where x in [1, 2.50, "s\\"q", true, null]', "l")
    where = spec.rules[0].match.where
    assert isinstance(where, ast.In) and isinstance(where.options, ast.ListExpr)
    assert [i.value for i in where.options.items] == [1, Decimal("2.50"), 's"q', True, None]  # type: ignore[union-attr]


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_bad_spec_gives_one_clear_error(path: Path) -> None:
    text = path.read_text()
    expect = re.match(r"# expect: (\d+):(\d+): (.*)", text.splitlines()[0])
    assert expect, f"{path.name}: first line must be '# expect: LINE:COL: fragment'"
    line, col, fragment = expect.groups()
    with pytest.raises(SpecError) as info:
        parse_spec(text, str(path))
    first, *context = str(info.value).splitlines()
    assert first.startswith(f"{path}:{line}:{col}: "), first
    assert fragment in first, first
    if context:  # the offending line with a caret under the column
        assert context[1].strip() == "^"


def test_the_corpus_is_big_enough() -> None:
    assert len(BAD) >= 15


def test_every_parser_example_fails_to_parse() -> None:
    for label, snippets in EXAMPLES.items():
        for snippet in snippets:
            with pytest.raises(Exception) as info:
                get_parser().parse(snippet)
            assert "Unexpected" in type(info.value).__name__, (label, snippet)


def test_missing_spec_file_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no such spec file"):
        load_spec(tmp_path / "nope.dmg")


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_checked_in_specs_round_trip_through_the_printer(path: Path) -> None:
    spec = load_spec(path)
    text = print_spec(spec)
    again = parse_spec(text, "printed.dmg")
    assert again == spec
    assert print_spec(again) == text


def test_readme_example_parses() -> None:
    readme = (ROOT / "dsl" / "README.md").read_text()
    block = readme.split("## A complete example", 1)[1].split("```", 2)[1]
    spec = parse_spec(block, "README.md")
    assert spec.name == "csm-goodwill-cap" and len(spec.rules) == 5 and len(spec.requirements) == 2
    assert [r.label for r in spec.aggregate_rules()] == ["more than one credit on the case"]
    schema = pytest.importorskip("agentrel.sandbox.environments.enterprise.schema")
    assert check_spec(spec, schema.table_infos()) == []
