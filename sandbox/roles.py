"""Least privilege for tool calls: each run database gets a login role that reaches it and nothing else.

The harness keeps the server's owner role for clone, dump and drop. Tool calls connect as the run's own
role, named like its database:

- NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS, and a member of no predefined role,
  so no `COPY ... PROGRAM`, no server files, no `pg_authid`, no `SET ROLE` to the owner;
- CONNECT on its own run database only. A clone does not inherit its template's database privileges
  (every new database grants CONNECT to PUBLIC), so PUBLIC is revoked on each template and each run
  database as it is made. One role shared by all runs could not be confined this way: concurrent runs
  would each grant it CONNECT, so every run gets a role of its own (a few catalog rows: ~2 ms with its drop);
- table privileges through the NOLOGIN group role `agentrel_tool`, granted once in the seed template, so
  every clone carries them with no work per run. The write-tracking trigger function is SECURITY DEFINER
  (sandbox/tracking.py): the roles have no privilege on `agentrel_meta`.

Privileges are catalog state, not rows: dumps and digests do not see them.
"""

from __future__ import annotations

import contextlib
import secrets

import psycopg
from psycopg import sql

from agentrel.sandbox.servers.auth import role_verifier

VERSION = "1"  # part of the seed template key: templates without these grants are rebuilt
GROUP = "agentrel_tool"
_LIMITS = "NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"


def ensure_group(conn: psycopg.Connection, private: bool) -> bool:
    """Create the group role once per server; False when the connected role may not create roles.

    On a `private` server (one AgentRel made) the maintenance databases are closed to PUBLIC as well, so
    a run's role cannot connect to `postgres` either; a server the user runs keeps its own settings."""
    may = conn.execute("SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user")
    if may.fetchone() != (True,):
        return False
    if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (GROUP,)).fetchone():
        return True
    # Concurrent first runs race to create it: the loser's duplicate is the same role.
    with contextlib.suppress(psycopg.errors.DuplicateObject, psycopg.errors.UniqueViolation):
        conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN " + _LIMITS).format(sql.Identifier(GROUP)))
    if private:
        for name in ("postgres", "template1"):
            revoke_public(conn, name)
    return True


def grant_tables(conn: psycopg.Connection) -> None:
    """In the seed template: what the tools need and no more (no TRUNCATE, TRIGGER, REFERENCES, CREATE)."""
    group = sql.Identifier(GROUP)
    for stmt in (
        "REVOKE CREATE ON SCHEMA public FROM PUBLIC",  # already so on Postgres 15+; 14 granted it
        "GRANT USAGE ON SCHEMA public TO {}",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {}",
        "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {}",
    ):
        conn.execute(sql.SQL(stmt).format(group))


def revoke_public(conn: psycopg.Connection, dbname: str) -> None:
    conn.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(sql.Identifier(dbname)))


def create_run_role(conn: psycopg.Connection, dbname: str, with_password: bool = True) -> str | None:
    """The run's role, named like its database (closed to PUBLIC when it was cloned), allowed into it
    alone; returns its password: random, this run's alone, held in memory only (the server stores its
    scram verifier, computed here so no statement carries the password). One simple-protocol round
    trip, one implicit transaction."""
    role, db = sql.Identifier(dbname), sql.Identifier(dbname)
    password = secrets.token_urlsafe(24) if with_password else None
    auth = (
        sql.SQL(" PASSWORD {}").format(sql.Literal(role_verifier(conn, dbname, password)))
        if password
        else sql.SQL("")
    )
    conn.execute(
        sql.SQL(
            "CREATE ROLE {role} LOGIN " + _LIMITS + "{auth} IN ROLE {group}; "
            "GRANT CONNECT ON DATABASE {db} TO {role}"
        ).format(role=role, auth=auth, group=sql.Identifier(GROUP), db=db)
    )
    return password


def drop_role(conn: psycopg.Connection, name: str) -> None:
    conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


def role_names(conn: psycopg.Connection, prefix: str) -> list[str]:
    rows = conn.execute(
        "SELECT rolname FROM pg_roles WHERE rolname LIKE %s ORDER BY 1",
        (prefix.replace("_", r"\_") + "%",),
    ).fetchall()
    return [r[0] for r in rows]
