"""The run page groups identical events: 393 deleted SLA records read as one line with the first row in
full and the other keys, not 393 cards; different rules or operations stay apart."""

from __future__ import annotations

import re
from decimal import Decimal
from types import SimpleNamespace

from agentrel.harness.view.relabel import LabelledChange, Relabel
from agentrel.harness.view.run_diff import group_changes
from agentrel.harness.view.run_html import diff_html


def change(key: int, rule: str = "deleted another case's SLA record", op: str = "delete") -> LabelledChange:
    return LabelledChange(
        table="case_slas",
        key=(key,),
        op=op,  # type: ignore[arg-type]
        columns=("id", "case_id"),
        key_columns=("id",),
        before=(key, 7),
        after=None,
        changed=(),
        rule=rule,
        kind="damage",
        severity="high",
        irreversibility="governance",
        dollars=Decimal("10.00"),
        spec="csm-sla-gold-relink",
    )


def test_identical_events_are_one_group_and_others_stay_apart():
    changes = [change(i) for i in range(1, 394)] + [change(900, rule="other rule"), change(901, op="update")]
    groups = group_changes(changes)
    assert [len(g) for g in groups] == [393, 1, 1]
    html = diff_html(SimpleNamespace(relabel=Relabel(changes, [])), 0, "r1", "csm-sla-gold-relink", {})
    assert "<b>393 ×</b> delete <b>case_slas</b>: deleted another case&#39;s SLA record" in html
    assert "$3,930.00 in all" in html and "the other 392 row(s)" in html and "(id=393)" in html
    cards = re.findall(r'<div class="change k-damage"', html)
    assert len(cards) == 3  # one full card per group, not 395
    assert "395 rows in 3 group(s)" in html
