"""The dump loader: every malformed header or row line is one `file:line: message` DumpFormatError."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentrel.dsl.state import DumpFormatError, State, TableInfo, load, load_delta
from tests.dsl.helpers import base_state, changed, ticket, write_lines

GOOD = list(base_state().lines())  # line 2: credits; 3-5: links (1,2) (1,3) (2,3); 6-10: tickets 1-5
HEADER: dict[str, Any] = json.loads(GOOD[0])
ROWS: list[Any] = [json.loads(line) for line in GOOD[1:]]


def load_error(path: Path) -> str:
    with pytest.raises(DumpFormatError) as info:
        load(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def with_tickets(edit: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    """The good header with the tickets entry edited in place by ``edit``."""
    header = copy.deepcopy(HEADER)
    edit(header["tables"]["tickets"])
    return header


def set_field(name: str, value: object) -> Callable[[dict[str, Any]], object]:
    return lambda meta: meta.__setitem__(name, value)


def drop_field(name: str) -> Callable[[dict[str, Any]], object]:
    return lambda meta: meta.pop(name)


# ---- good dumps load ------------------------------------------------------------------------------


def test_a_good_dump_loads_exactly(tmp_path: Path) -> None:
    state = base_state()
    digest = state.save(tmp_path / "d.jsonl.gz")
    loaded = load(tmp_path / "d.jsonl.gz")
    assert loaded.digest() == digest
    assert loaded.schema() == state.schema()
    assert {n: t.rows for n, t in loaded.tables.items()} == {n: t.rows for n, t in state.tables.items()}


def test_unsorted_rows_and_a_table_split_in_two_runs_still_load(tmp_path: Path) -> None:
    rows = [ROWS[5], ROWS[1], ROWS[6], ROWS[0], *ROWS[7:], ROWS[2], ROWS[4], ROWS[3]]
    loaded = load(write_lines(tmp_path / "d.jsonl.gz", [GOOD[0], *rows]))
    assert loaded.digest() == base_state().digest()


def test_optional_header_fields_and_empty_tables(tmp_path: Path) -> None:
    header = {"format": "agentrel-dump/1", "tables": {"t": {"columns": ["k", "v"], "primary_key": ["k"]}}}
    loaded = load(write_lines(tmp_path / "a.jsonl.gz", [header, ["t", [1], [1, "x"]]]))
    assert loaded.tables["t"].info == TableInfo("t", ("k", "v"), ("k",))
    assert loaded.tables["t"].rows == {(1,): (1, "x")}
    assert load(write_lines(tmp_path / "b.jsonl.gz", [header])).row_count() == 0


# ---- the header -----------------------------------------------------------------------------------

KINDS = HEADER["tables"]["tickets"]["kinds"]


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (
            with_tickets(set_field("primary_key", ["nope"])),
            "table tickets: primary key column(s) nope not among its columns",
        ),
        (with_tickets(set_field("kinds", KINDS[:-1])), "table tickets: 7 kinds for 8 columns"),
        (with_tickets(set_field("kinds", [*KINDS, "int"])), "table tickets: 9 kinds for 8 columns"),
        ({"format": "agentrel-dump/1"}, "the header has no 'tables' mapping (table name to its columns)"),
        (
            {"format": "agentrel-dump/1", "tables": [["tickets"]]},
            "the header has no 'tables' mapping (table name to its columns)",
        ),
        (
            {"format": "agentrel-dump/1", "tables": {"tickets": ["id"]}},
            "table tickets: expected a mapping with 'columns' and 'primary_key'",
        ),
        (with_tickets(drop_field("columns")), "table tickets: 'columns' is missing"),
        (with_tickets(drop_field("primary_key")), "table tickets: 'primary_key' is missing"),
        (with_tickets(set_field("columns", "id")), "table tickets: 'columns' is not a list of strings"),
        (with_tickets(set_field("columns", ["id", 2])), "table tickets: 'columns' is not a list of strings"),
        (
            with_tickets(set_field("primary_key", [0])),
            "table tickets: 'primary_key' is not a list of strings",
        ),
        (
            with_tickets(set_field("volatile", "updated_at")),
            "table tickets: 'volatile' is not a list of strings",
        ),
        (with_tickets(set_field("kinds", {"id": "int"})), "table tickets: 'kinds' is not a list of strings"),
        (
            with_tickets(set_field("volatile", ["nope"])),
            "table tickets: volatile column(s) nope not among its columns",
        ),
        (
            with_tickets(lambda m: m["columns"].__setitem__(2, "status")),
            "table tickets: 'columns' names status more than once",
        ),
        (
            with_tickets(set_field("primary_key", ["id", "id"])),
            "table tickets: 'primary_key' names id more than once",
        ),
        (
            with_tickets(set_field("primary_key", [])),
            "table tickets: the primary key is empty (rows are keyed by it)",
        ),
        (["agentrel-dump/1"], "not an agentrel-dump/1 header"),
        ({"format": "agentrel-dump/9", "tables": {}}, "not an agentrel-dump/1 header"),
        ("{not json", "header is not JSON (Expecting property name enclosed in double quotes)"),
    ],
)
def test_a_bad_header_is_named_on_line_1(tmp_path: Path, header: object, message: str) -> None:
    path = write_lines(tmp_path / "d.jsonl.gz", [header, *GOOD[1:]])
    assert load_error(path) == f"{path}:1: {message}"


def test_an_empty_or_unreadable_file(tmp_path: Path) -> None:
    empty = write_lines(tmp_path / "empty.jsonl.gz", [])
    assert load_error(empty) == f"{empty}:1: empty dump"
    plain = tmp_path / "plain.jsonl.gz"
    plain.write_text("\n".join(GOOD))
    assert load_error(plain).startswith(f"{plain}:1: not a gzipped AgentRel dump (Not a gzipped file")
    latin = tmp_path / "latin.jsonl.gz"
    latin.write_bytes(gzip.compress(GOOD[0].encode() + b"\n\xff\n"))
    assert load_error(latin).startswith(f"{latin}:1: not a gzipped AgentRel dump ('utf-8' codec")
    assert load_error(tmp_path / "missing.jsonl.gz") == f"{tmp_path / 'missing.jsonl.gz'}: no such dump file"


def test_a_truncated_file_names_the_first_line_it_lost(tmp_path: Path) -> None:
    state = base_state()
    for i in range(6, 5000):
        state.tables["tickets"].add(ticket(i))
    whole = tmp_path / "whole.jsonl.gz"
    state.save(whole)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    message = load_error(cut)
    line = int(message.removeprefix(f"{cut}:").split(":")[0])
    assert 1 < line < 5000 and "the file is cut short or corrupt" in message


# ---- row lines ------------------------------------------------------------------------------------


def rows_with(line: int, *replacement: object) -> list[object]:
    """The good rows with file line ``line`` replaced by ``replacement`` (nothing: deleted)."""
    rows: list[object] = list(ROWS)
    rows[line - 2 : line - 1] = list(replacement)
    return rows


TICKET_3 = ROWS[6]  # line 8


@pytest.mark.parametrize(
    ("rows", "line", "message"),
    [
        (
            rows_with(8, ["tickets", [4], TICKET_3[2]]),
            8,
            "table tickets: stored key [4] disagrees with the row's primary-key values [3] (id)",
        ),
        (
            rows_with(4, ["links", [3, 1], [1, 3, "depends_on"]]),
            4,
            "table links: stored key [3,1] disagrees with the row's primary-key values [1,3] (a, b)",
        ),
        (rows_with(8, TICKET_3, TICKET_3), 9, "table tickets: key [3] appears again (first on line 8)"),
        (
            rows_with(8, TICKET_3, ["tickets", [3], list(ticket(3, "closed"))]),
            9,
            "table tickets: key [3] appears again (first on line 8)",
        ),
        (
            [*ROWS, ROWS[1]],  # a repeat in a later run of the table's lines
            11,
            "table links: key [1,2] appears again (first on line 3)",
        ),
        (rows_with(8, ["nope", [3], [3]]), 8, "table 'nope' is not one of the dump's tables"),
        (rows_with(8, ["tickets", [3], TICKET_3[2][:-1]]), 8, "table tickets: row has 7 values, expected 8"),
        (rows_with(8, ["tickets", [3], [*TICKET_3[2], 1]]), 8, "table tickets: row has 9 values, expected 8"),
        (rows_with(8, "[tickets, [3]]"), 8, "row line is not JSON (Expecting value)"),
        (rows_with(8, ""), 8, "row line is not JSON (Expecting value)"),
        (
            rows_with(8, json.dumps(TICKET_3) + "," + json.dumps(ROWS[8])),
            8,
            "row line is not JSON (Extra data)",
        ),
        (rows_with(8, {"tickets": 3}), 8, "expected a row line [table, [key...], [values...]]"),
        (rows_with(8, {"a": 1, "b": 2, "c": 3}), 8, "expected a row line [table, [key...], [values...]]"),
        (rows_with(8, '"tkt"'), 8, "expected a row line [table, [key...], [values...]]"),
        (rows_with(8, ["tickets", [3]]), 8, "expected a row line [table, [key...], [values...]]"),
        (rows_with(8, ["tickets", [3], None]), 8, "expected a row line [table, [key...], [values...]]"),
        (
            rows_with(8, ["tickets", 3, TICKET_3[2]]),
            8,
            "table tickets: the key must be a list of 1 value(s) (id)",
        ),
        (
            rows_with(8, ["tickets", [3, 3], TICKET_3[2]]),
            8,
            "table tickets: the key must be a list of 1 value(s) (id)",
        ),
        (
            rows_with(8, ["tickets", [[3]], [[3], *TICKET_3[2][1:]]]),
            8,
            "table tickets: key [[3]] holds a list or object, not plain values",
        ),
    ],
)
def test_a_bad_row_line_is_named(tmp_path: Path, rows: list[object], line: int, message: str) -> None:
    path = write_lines(tmp_path / "d.jsonl.gz", [GOOD[0], *rows])
    assert load_error(path) == f"{path}:{line}: {message}"


# ---- deltas ---------------------------------------------------------------------------------------


def delta_lines(tmp_path: Path) -> tuple[State, State, list[str]]:
    """A base, a post-run state and its delta's lines: the header, then links (9,9) inserted, links
    (1,3) deleted and tickets 2 updated (lines 2, 3, 4)."""
    base = base_state()
    after = changed(
        base, put=[("tickets", ticket(2, "closed")), ("links", (9, 9, "new"))], drop=[("links", (1, 3))]
    )
    after.save_delta(tmp_path / "good.delta.jsonl.gz", base)
    with gzip.open(tmp_path / "good.delta.jsonl.gz", "rt", encoding="utf-8") as fh:
        return base, after, fh.read().splitlines()


def delta_error(path: Path, base: State) -> str:
    with pytest.raises(DumpFormatError) as info:
        load_delta(path, base)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_a_good_delta_rebuilds_the_state(tmp_path: Path) -> None:
    base, after, lines = delta_lines(tmp_path)
    assert [json.loads(line)[:2] for line in lines[1:]] == [
        ["links", [9, 9]],
        ["links", [1, 3]],
        ["tickets", [2]],
    ]
    rebuilt = load_delta(tmp_path / "good.delta.jsonl.gz", base)
    assert rebuilt.digest() == after.digest()
    assert rebuilt.tables["links"].rows == after.tables["links"].rows


def test_a_delta_line_repeated_is_refused(tmp_path: Path) -> None:
    base, _, lines = delta_lines(tmp_path)
    repeat = write_lines(tmp_path / "repeat.jsonl.gz", [*lines, lines[3]])  # the digest still matches
    assert delta_error(repeat, base) == f"{repeat}:5: table tickets: key [2] appears again (first on line 4)"
    both = write_lines(tmp_path / "both.jsonl.gz", [*lines, ["links", [9, 9], None]])
    assert delta_error(both, base) == f"{both}:5: table links: key [9,9] appears again (first on line 2)"


def test_a_delta_key_that_disagrees_with_its_row_is_refused(tmp_path: Path) -> None:
    base, _, lines = delta_lines(tmp_path)
    name, _, values = json.loads(lines[3])
    path = write_lines(tmp_path / "key.jsonl.gz", [*lines[:3], [name, [7], values]])  # digest still matches
    assert delta_error(path, base) == (
        f"{path}:4: table tickets: stored key [7] disagrees with the row's primary-key values [2] (id)"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (["links", [7, 7], None], "table links: deletes key [7,7], which the base does not hold"),
        (["nope", [1], None], "table 'nope' is not one of the dump's tables"),
        (["links", [1], None], "table links: the key must be a list of 2 value(s) (a, b)"),
        (["tickets", [3], [3]], "table tickets: row has 1 values, expected 8"),
        (["tickets", [3]], "expected a row line [table, [key...], [values...]] or [table, [key...], null]"),
        ("not json", "row line is not JSON (Expecting value)"),
    ],
)
def test_a_bad_delta_line_is_named(tmp_path: Path, line: object, message: str) -> None:
    base, _, lines = delta_lines(tmp_path)
    path = write_lines(tmp_path / "bad.jsonl.gz", [*lines, line])
    assert delta_error(path, base) == f"{path}:5: {message}"


def test_a_bad_delta_header_or_digest(tmp_path: Path) -> None:
    base, _, lines = delta_lines(tmp_path)
    header = json.loads(lines[0])
    for name in ("base", "digest"):
        path = write_lines(tmp_path / f"no-{name}.jsonl.gz", [{**header, name: None}, *lines[1:]])
        assert delta_error(path, base) == f"{path}:1: the delta header has no {name!r} digest"
    full = write_lines(tmp_path / "full.jsonl.gz", GOOD)
    assert delta_error(full, base) == f"{full}:1: not an agentrel-delta/1 header"
    edited = json.loads(lines[3])
    edited[2][1] = "pending"
    path = write_lines(tmp_path / "digest.jsonl.gz", [*lines[:3], edited])
    assert (
        delta_error(path, base)
        == f"{path}:1: the rebuilt state does not match digest {header['digest'][:12]}"
    )


def test_a_dump_cut_short_by_a_full_disk_leaves_no_half_written_file(tmp_path: Path, monkeypatch) -> None:
    """The disk fills mid-write (a full-disk audit): the save fails, and neither the dump nor its temporary
    file is left beside the others (an audit that exits on a full disk leaves only whole files)."""
    import errno

    real_write = gzip.GzipFile.write

    def full(self: gzip.GzipFile, data: bytes) -> int:
        real_write(self, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gzip.GzipFile, "write", full)
    with pytest.raises(OSError, match="No space left"):
        base_state().save(tmp_path / "d.jsonl.gz")
    with pytest.raises(OSError, match="No space left"):
        changed(base_state(), put=[("tickets", ticket(9))]).save_delta(
            tmp_path / "e.delta.jsonl.gz", base_state()
        )
    assert list(tmp_path.iterdir()) == []
