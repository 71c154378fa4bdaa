"""Which tables a run wrote: statement-level triggers record every written table in `agentrel_meta`.

Every table in the environment's diff carries an AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE trigger, FOR
EACH STATEMENT, that notes the table's name. A post-run dump then re-reads only the written tables and
takes the others from the template's pre-run dump, which they provably equal (nothing wrote them). The
triggers fire for every statement the tools run, including cascaded ones; nothing in the tool layer can
disable them. The meta schema is not part of the sandbox schema, so it is never dumped or diffed.

The trigger function is SECURITY DEFINER, so a tool call's restricted role (sandbox/roles.py) is tracked
without any privilege on `agentrel_meta`: it can neither read nor clear what was recorded. Its
search_path is pinned, as a definer function's must be.

Commit evidence for the fault path (harness/faults/): `note_call(call_id, boot_id, tool, effect)` is
called by the tool server inside a tool call's own transaction, so a row in `call_commits` exists exactly
when that call's writes committed. `effect` is the digest of the call's logical effect (the tool and its
canonical arguments): one effect committed under two call ids is an action executed twice. It too is
SECURITY DEFINER: the run's role may execute it (schema USAGE lets it name the function) but holds no
privilege on the table, so it can neither read nor forge or delete evidence except by really committing
a call. The table is in the meta schema: never dumped.

Idempotency keys (sandbox/tools/idempotency.py): `claim_key(key, tool, request, take)` claims a key for
a call (or, without `take`, only looks it up), or returns what the key was first used for and the first
call's answer; `keep_answer(key, answer)` stores that answer. Both run inside the tool call's own
transaction, so a key is taken exactly when the call's writes commit (a call rolled back leaves its key
free), and the keys live in the run database: one run's keys are never another's, and they outlast any
tool-server restart. SECURITY DEFINER, as `note_call`: the
run's role can use a key only by making the call.
"""

from __future__ import annotations

from collections.abc import Iterable

import psycopg
from psycopg import sql

VERSION = "5"  # part of the seed template key: templates without these triggers are rebuilt
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
CREATE TABLE {SCHEMA}.call_commits (
    call_id text PRIMARY KEY,
    boot_id text NOT NULL,
    tool text NOT NULL,
    effect text NOT NULL,
    committed_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE FUNCTION {SCHEMA}.note_call(p_call_id text, p_boot_id text, p_tool text, p_effect text)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- A repeated call id (a client that resent the same attempt) keeps the first commit's row.
    INSERT INTO {SCHEMA}.call_commits (call_id, boot_id, tool, effect)
    VALUES (p_call_id, p_boot_id, p_tool, p_effect)
    ON CONFLICT DO NOTHING;
END $$;
CREATE TABLE {SCHEMA}.idempotency_keys (
    key text PRIMARY KEY,
    tool text NOT NULL,
    request text NOT NULL,
    answer text
);
CREATE FUNCTION {SCHEMA}.claim_key(p_key text, p_tool text, p_request text, p_take boolean)
RETURNS TABLE (fresh boolean, first_tool text, first_request text, first_answer text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- A concurrent claim of the same key waits here for the first one's transaction to end. Without
    -- p_take (a call that will not commit) the key is only looked up.
    IF p_take THEN
        INSERT INTO {SCHEMA}.idempotency_keys (key, tool, request) VALUES (p_key, p_tool, p_request)
        ON CONFLICT DO NOTHING;
    ELSE
        PERFORM 1 FROM {SCHEMA}.idempotency_keys AS k WHERE k.key = p_key;
        FOUND := NOT FOUND;
    END IF;
    IF FOUND THEN
        RETURN QUERY SELECT true, p_tool, p_request, NULL::text;
    ELSE
        RETURN QUERY SELECT false, k.tool, k.request, k.answer
        FROM {SCHEMA}.idempotency_keys AS k WHERE k.key = p_key;
    END IF;
END $$;
CREATE FUNCTION {SCHEMA}.keep_answer(p_key text, p_answer text)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE {SCHEMA}.idempotency_keys SET answer = p_answer WHERE key = p_key AND answer IS NULL;
END $$;
-- Naming the function needs USAGE on its schema; the tables in it grant nothing to PUBLIC, and the
-- trigger function refuses to be called directly, so USAGE exposes only note_call, claim_key and
-- keep_answer.
GRANT USAGE ON SCHEMA {SCHEMA} TO PUBLIC;
"""


def install(conn: psycopg.Connection, tables: Iterable[str]) -> None:
    """Add the meta schema and one tracking trigger per table in the diff (seed template build)."""
    conn.execute(_SETUP)
    for table in tables:
        conn.execute(
            sql.SQL(
                "CREATE TRIGGER agentrel_touched AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {} "
                "FOR EACH STATEMENT EXECUTE FUNCTION {}.mark_touched()"
            ).format(sql.Identifier(table), sql.Identifier(SCHEMA))
        )


def reset(conn: psycopg.Connection) -> None:
    """Forget what was written so far (a template's own fixture writes are not a run's)."""
    conn.execute(sql.SQL("TRUNCATE {}.touched").format(sql.Identifier(SCHEMA)))


def committed_calls(conn: psycopg.Connection, call_ids: list[str]) -> dict[str, str]:
    """call id -> boot id of the server that committed it, for those of `call_ids` that committed
    (read with the owner's connection: the run's role cannot read the table)."""
    rows = conn.execute(
        sql.SQL("SELECT call_id, boot_id FROM {}.call_commits WHERE call_id = ANY(%s)").format(
            sql.Identifier(SCHEMA)
        ),
        (call_ids,),
    )
    return {r[0]: r[1] for r in rows.fetchall()}


def commit_log(conn: psycopg.Connection) -> list[tuple[str, str, str]]:
    """Every committed call as (call id, tool, effect digest), in commit order (owner's connection)."""
    rows = conn.execute(
        sql.SQL("SELECT call_id, tool, effect FROM {}.call_commits ORDER BY committed_at, call_id").format(
            sql.Identifier(SCHEMA)
        )
    )
    return [(str(r[0]), str(r[1]), str(r[2])) for r in rows.fetchall()]


def touched(conn: psycopg.Connection) -> set[str]:
    rows = conn.execute(sql.SQL("SELECT table_name FROM {}.touched").format(sql.Identifier(SCHEMA)))
    return {r[0] for r in rows.fetchall()}
