"""A table name may hold dashes (Tryton's relation tables, e.g. `res_user-res_group`) where a table is
expected; in an expression a dash is still a subtraction."""

from __future__ import annotations

from pathlib import Path

from agentrel.dsl.api import load_spec

SPEC = """spec "dashed" version 1
param cap: numeric = 5
damage "a group granted" high governance price after.amount-cap:
    insert res_user-res_group where after.id-1 > 0
allow "a payment line linked":
    insert account_invoice-account_move_line where after.id in [22]
"""


def test_dashed_table_names_parse_and_dashes_in_expressions_subtract(tmp_path: Path) -> None:
    path = tmp_path / "dashed.dmg"
    path.write_text(SPEC)
    spec = load_spec(path)
    text = repr(spec)
    assert "res_user-res_group" in text and "account_invoice-account_move_line" in text
    assert "'cap'" in text or "cap" in text  # the price still reads the param, not a name `amount-cap`
    assert "amount-cap" not in text
