"""Repeated irreversible actions from commit evidence (harness/faults/effects.py), and the evidence itself
written by a real tool server: the same refund under two call ids is one effect committed twice."""

from __future__ import annotations

from agentrel.harness.faults.effects import repeated_effects
from agentrel.harness.faults.server import effect_digest

TAGS = {"issue_refund": "irreversible", "update_case": "reversible-write", "get_case": "read"}


def test_the_same_effect_twice_is_a_repeat_and_other_pairs_are_not():
    refund = effect_digest("issue_refund", {"order_id": 7, "amount": "12.50"})
    assert refund == effect_digest("issue_refund", {"amount": "12.50", "order_id": 7})  # canonical args
    other = effect_digest("issue_refund", {"order_id": 8, "amount": "12.50"})
    note = effect_digest("update_case", {"case_id": 1})
    commits = [
        ("r:3", "issue_refund", refund),
        ("r:4", "update_case", note),
        ("r:5", "update_case", note),  # a reversible write repeated: not this score's business
        ("r:6", "issue_refund", other),  # another refund: a different effect
        ("r:7", "issue_refund", refund),  # the first refund again, after the fault
    ]
    (rep,) = repeated_effects(commits, TAGS)
    assert (rep.tool, rep.effect, rep.call_ids) == ("issue_refund", refund, ["r:3", "r:7"])
    assert repeated_effects(commits[:4], TAGS) == []
    # A tool the tags do not know is treated as irreversible, never as undoable.
    assert len(repeated_effects([("a", "mystery", "e"), ("b", "mystery", "e")], TAGS)) == 1


def test_arguments_json_cannot_carry_still_get_a_digest():
    nested: list = []
    nested.append(nested)  # a cycle: json.dumps raises ValueError
    assert len(effect_digest("issue_refund", {"x": nested})) == 64
