"""The run journal's chain (harness/results/journal.py): a prefix keeps its head as lines are appended;
removing, editing or reordering a line changes the head of every prefix that covered it."""

from __future__ import annotations

from agentrel.harness.results.journal import GENESIS, heads_at, journal_head

LINES = [b'{"run_id": "a"}\n', b'{"run_id": "b"}\n', b'{"run_id": "c"}\n']


def test_appending_keeps_every_earlier_head():
    two, n = journal_head(b"".join(LINES[:2]))
    assert n == 2
    assert heads_at(b"".join(LINES), {0, 2, 3}) == {0: GENESIS, 2: two, 3: journal_head(b"".join(LINES))[0]}


def test_a_torn_tail_is_not_a_line():
    assert journal_head(b"".join(LINES) + b'{"run_id": "d"') == journal_head(b"".join(LINES))


def test_removing_editing_or_reordering_a_line_changes_the_anchored_head():
    anchored, _ = journal_head(b"".join(LINES))
    removed = LINES[:1] + LINES[2:] + [LINES[1]]  # the line removed, then drawn again at the end
    edited = [LINES[0], b'{"run_id": "B"}\n', LINES[2]]
    for data in (removed, edited, LINES[::-1]):
        assert heads_at(b"".join(data), {3}) != {3: anchored}
    assert heads_at(b"".join(LINES[:2]), {3}) == {}  # fewer lines than anchored: no head at all
