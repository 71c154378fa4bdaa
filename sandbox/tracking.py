"""Which tables a run wrote: statement-level triggers record every written table in `agentrel_meta`.

Every table of the sandbox schema carries an AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE trigger, FOR
EACH STATEMENT, that notes the table's name. A post-run dump then re-reads only the written tables and
takes the others from the template's pre-run dump, which they provably equal (nothing wrote them). The
triggers fire for every statement the tools run, including cascaded ones; nothing in the tool layer can
disable them. The meta schema is not part of the sandbox schema, so it is never dumped or diffed.

The trigger function is SECURITY DEFINER, so a tool call's restricted role (sandbox/roles.py) is tracked
without any privilege on `agentrel_meta`: it can neither read nor clear what was recorded. Its
search_path is pinned, as a definer function's must be.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from sandbox.schema import sorted_tables

VERSION = "2"  # part of the seed template key: templates without these triggers are rebuilt
SCHEMA = "agentrel_meta"

_SETUP = f"""
CREATE SCHEMA {SCHEMA};
CREATE TABLE {SCHEMA}.touched (table_name text PRIMARY KEY);
CREATE FUNCTION {SCHEMA}.mark_touched() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO {SCHEMA}.touched VALUES (TG_TABLE_NAME) ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
"""


def install(conn: psycopg.Connection) -> None:
    """Add the meta schema and one tracking trigger per sandbox table (seed template build)."""
    conn.execute(_SETUP)
    for table in sorted_tables():
        conn.execute(
            sql.SQL(
                "CREATE TRIGGER agentrel_touched AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {} "
                "FOR EACH STATEMENT EXECUTE FUNCTION {}.mark_touched()"
            ).format(sql.Identifier(table.name), sql.Identifier(SCHEMA))
        )


def reset(conn: psycopg.Connection) -> None:
    """Forget what was written so far (a template's own fixture writes are not a run's)."""
    conn.execute(sql.SQL("TRUNCATE {}.touched").format(sql.Identifier(SCHEMA)))


def touched(conn: psycopg.Connection) -> set[str]:
    rows = conn.execute(sql.SQL("SELECT table_name FROM {}.touched").format(sql.Identifier(SCHEMA)))
    return {r[0] for r in rows.fetchall()}
