"""Read a sandbox database into a full-state dump (and load one into an empty database).

Values are normalized inside Postgres (numeric and dates to text, timestamps to ISO-8601 UTC), so the
Python side only receives str/int/bool/None and the dump of a freshly loaded seed is byte-identical to
the generated one.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
from psycopg import sql
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.types.string import TextLoader

from agentrel.dsl.state import State, TableInfo, TableState
from agentrel.sandbox import tracking


class _UtcTimestampLoader(Loader):
    """'2026-01-02 03:04:05.25+00' (server text, TimeZone=UTC) -> '2026-01-02T03:04:05.25Z'."""

    def load(self, data: Buffer) -> str:
        text = bytes(data).decode()
        return f"{text[:10]}T{text[11:-3]}Z"


def connect_canonical(conninfo: str) -> psycopg.Connection:
    """An autocommit connection whose results come back in the dump's canonical value forms."""
    conn = psycopg.connect(conninfo, autocommit=True)
    conn.execute("SET TimeZone = 'UTC'")
    conn.execute("SET DateStyle = ISO")
    # Text loaders hand back the server's own canonical text: no Decimal or datetime objects to round-trip.
    for oid_name in ("numeric", "date", "json", "jsonb"):
        conn.adapters.register_loader(oid_name, TextLoader)
    conn.adapters.register_loader("timestamptz", _UtcTimestampLoader)
    return conn


# Server text of a timestamptz under TimeZone=UTC is '2026-01-02 03:04:05.25+00'; two replaces in C make it
# '2026-01-02T03:04:05.25Z', much cheaper than a Python loader call per value.
_UTC_TEXT = "replace(replace({}::text, ' ', 'T'), '+00', 'Z')"


def _query(info: TableInfo) -> sql.Composed:
    cols = sql.SQL(", ").join(
        sql.SQL(_UTC_TEXT).format(sql.Identifier(c)) if info.kind(c) == "timestamp" else sql.Identifier(c)
        for c in info.columns
    )
    return sql.SQL("SELECT {} FROM {}").format(cols, sql.Identifier(info.name))


def _read_table(cur: psycopg.Cursor[Any], table: TableState) -> None:
    """Fill `table` with every row of its database table, keyed by the full primary key."""
    kp = table.info.key_positions
    fetched = cur.execute(_query(table.info)).fetchall()
    if kp == (0,):
        table.rows.update(((row[0],), row) for row in fetched)
    else:
        table.rows.update((tuple(row[i] for i in kp), row) for row in fetched)


def _fetch(conninfo: str, infos: list[TableInfo], state: State) -> None:
    with connect_canonical(conninfo) as conn, conn.cursor() as cur:
        for info in infos:
            _read_table(cur, state.tables[info.name])


def dump_run(conninfo: str, base: State) -> State:
    """The full state of a run database cloned from the template whose pre-run dump is `base`.

    Tables the run wrote (see sandbox/tracking.py) are read again; every other table is `base`'s,
    shared, not copied: callers must treat the returned state as read-only."""
    state = State()
    with connect_canonical(conninfo) as conn, conn.cursor() as cur:
        try:
            written = tracking.touched(conn)
        except psycopg.errors.UndefinedTable:  # a template built without tracking: read everything
            return dump_database(conninfo, [t.info for t in base.tables.values()])
        for name, table in base.tables.items():
            if name not in written:
                state.tables[name] = table
                continue
            state.tables[name] = TableState(table.info)
            _read_table(cur, state.tables[name])
    return state


def dump_database(conninfo: str, infos: Iterable[TableInfo], workers: int = 2) -> State:
    """Every row of every table in the diff (`infos`: the environment's `table_infos()`). Two
    connections share the tables: a fresh clone's first reads are dominated by cold buffers and catalog
    lookups, which the server can serve in parallel."""
    infos = list(infos)
    state = State.empty(infos)
    shares = [infos[i::workers] for i in range(workers)]
    with ThreadPoolExecutor(workers) as pool:
        for future in [pool.submit(_fetch, conninfo, share, state) for share in shares]:
            future.result()
    return state


def load_state(conn: psycopg.Connection, state: State, order: Iterable[str]) -> None:
    """COPY every row of `state` into the (empty, schema-created) database, tables in `order` (parents
    first), then advance the sequences of `id` keys."""
    for name in order:
        ts = state.tables[name]
        cols = sql.SQL(", ").join(sql.Identifier(c) for c in ts.info.columns)
        stmt = sql.SQL("COPY {} ({}) FROM STDIN").format(sql.Identifier(name), cols)
        with conn.cursor().copy(stmt) as copy:
            for key in sorted(ts.rows):
                copy.write_row(ts.rows[key])
        if "id" in ts.info.columns and ts.info.primary_key == ("id",):
            conn.execute(
                sql.SQL(
                    "SELECT setval(pg_get_serial_sequence({t}, 'id'), COALESCE(MAX(id), 0) + 1, false)"
                    " FROM {i}"
                ).format(t=sql.Literal(name), i=sql.Identifier(name))
            )
