"""Withholding a tool call's commit: the tool runs as ever and its own answer is given, but what it wrote
is rolled back, whole (`all`) or after its first writing statement (`after-first-write`).

`all` rolls the call's transaction back; whether the call wrote anything at all is Postgres's own
answer (a transaction id is assigned at the first write, whatever path the statements took: cursors,
triggers; reads and sequence draws assign none). `after-first-write` runs the call on a `Savepoints`
connection, which takes a savepoint before each statement and reads each statement's command tag; the
call is then cut back to just after its first statement that wrote rows (INSERT, UPDATE, DELETE, MERGE
or COPY with a row count above zero). The state left is the one the database held at that moment of
the call, so every constraint checked then still holds: a call stopped partway, as a crash would stop
it. A call with fewer than two writing statements has nothing to cut between and is withheld whole.
Both are exact only for tools that write through the connection they are handed
(`Environment.transactional_tools`).
"""

from __future__ import annotations

from typing import Any, Literal

import psycopg

Withhold = Literal["all", "after-first-write"]
WITHHOLDS: tuple[Withhold, ...] = ("all", "after-first-write")
WROTE = "SELECT pg_current_xact_id_if_assigned() IS NOT NULL"
_WRITING = ("INSERT", "UPDATE", "DELETE", "MERGE", "COPY")


def wrote(conn: psycopg.Connection) -> bool:
    """Whether the current transaction wrote anything (Postgres assigned it a transaction id)."""
    row = conn.execute(WROTE).fetchone()
    return bool(row and row[0])


def writes_rows(cursor: Any) -> bool:
    """Whether the statement a cursor just ran wrote rows, from its command tag and row count."""
    tag = (getattr(cursor, "statusmessage", None) or "").split(" ", 1)[0].upper()
    return tag in _WRITING and (getattr(cursor, "rowcount", 0) or 0) > 0


class Savepoints:
    """A call's connection as its tool sees it, with a savepoint before each statement and a note of
    which statements wrote rows. Everything else is the connection's own."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn
        self.statements: list[tuple[str, bool]] = []  # (savepoint taken before it, it wrote rows)

    def _mark(self) -> str:
        name = f"agentrel_statement_{len(self.statements) + 1}"
        self._conn.execute(f"SAVEPOINT {name}")
        return name

    def execute(self, query: Any, params: Any = None, **kw: Any) -> psycopg.Cursor[Any]:
        name = self._mark()
        cursor = self._conn.execute(query, params, **kw)
        self.statements.append((name, writes_rows(cursor)))
        return cursor

    def cursor(self, *args: Any, **kw: Any) -> _Cursor:
        return _Cursor(self, self._conn.cursor(*args, **kw))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def cut_after_first_write(self) -> int:
        """Roll back everything after the first statement that wrote rows; the number of writing
        statements rolled back (0: fewer than two wrote, nothing is cut)."""
        writing = [name for name, wrote_rows in self.statements if wrote_rows]
        if len(writing) < 2:
            return 0
        self._conn.execute(f"ROLLBACK TO SAVEPOINT {writing[1]}")
        return len(writing) - 1


class _Cursor:
    def __init__(self, owner: Savepoints, cursor: psycopg.Cursor[Any]) -> None:
        self._owner = owner
        self._cursor = cursor

    def execute(self, query: Any, params: Any = None, **kw: Any) -> _Cursor:
        name = self._owner._mark()
        self._cursor.execute(query, params, **kw)
        self._owner.statements.append((name, writes_rows(self._cursor)))
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)

    def __iter__(self) -> Any:
        return iter(self._cursor)

    def __enter__(self) -> _Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self._cursor.close()
