"""Database lifecycle on a server: the seed template, task templates, per-run clones, orphan cleanup.

Names say what a database is: `agentrel_seed_<key>`, `agentrel_task_<key>`, and
`agentrel_run_<host>_<pid>_<nonce>`. A run database whose owning process on this host is gone was
orphaned by a crash and is dropped by `drop_orphans()` at the next start.

Templates are closed (`datallowconn = false`) once built: nobody logs into one, not even the superuser, and
`CREATE DATABASE ... TEMPLATE` clones it all the same. Before a process first clones a template, its
content is dumped (through a scratch clone) and checked against the digest recorded when it was built; a
template changed out of band is said in one line, dropped and built again, never used.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from agentrel.dsl.state import DIGEST_VERSION, State
from agentrel.sandbox import roles, tracking
from agentrel.sandbox.defaults import DEFAULT_SEED  # one default for `--seed`
from agentrel.sandbox.dump import dump_database
from agentrel.sandbox.environments.contract import Environment
from agentrel.sandbox.notices import notice
from agentrel.sandbox.servers.base import FixtureError, SandboxError, Server

PREFIX = "agentrel_"
RUN_PREFIX = f"{PREFIX}run_"
RUN_TABLESPACE = "agentrel_runs"
HOST_TAG = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:6]
# (server, template name) -> the digest its content was found to have, once per process: a template is
# checked before this process first clones it, not before every run (bench/run_overhead.py's budget).
_CHECKED: dict[tuple[str, str], str] = {}
_CHECKED_LOCK = threading.Lock()
JsonValue = int | str | bool | None


@dataclass(frozen=True)
class Template:
    name: str
    digest: str  # SHA-256 of the full-state dump of this template


class Databases:
    """Creates and drops AgentRel databases on one server. Connections are short-lived and autocommit."""

    def __init__(self, server: Server, env: Environment, cache_dir: Path | None = None) -> None:
        # The environment is handed down (Sandbox(env=)): the machinery never looks one up.
        self.server = server
        self.env = env
        self.cache_dir = cache_dir
        self._run_tablespace: str | bool | None = False  # False: not looked up yet
        self._confined: bool | None = None  # whether runs get their own role (sandbox/roles.py)
        self._passwords: dict[str, str] = {}  # run database -> its role's password, in memory only
        self._states: dict[str, State] = {}
        self._lock = threading.Lock()  # template digest -> its pre-run state, shared read-only

    # -- plumbing ----------------------------------------------------------------------------------
    def admin(self) -> psycopg.Connection:
        return psycopg.connect(self.server.conninfo("postgres"), autocommit=True)

    def names(self, prefix: str = PREFIX) -> list[str]:
        with self.admin() as conn:
            rows = conn.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s ORDER BY 1",
                (prefix.replace("_", r"\_") + "%",),
            ).fetchall()
        return [r[0] for r in rows]

    def exists(self, name: str) -> bool:
        with self.admin() as conn:
            return (
                conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None
            )

    def comment(self, name: str) -> str | None:
        with self.admin() as conn:
            row = conn.execute(
                "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s", (name,)
            ).fetchone()
        return row[0] if row else None

    def drop(self, name: str) -> None:
        """Drop a database and, for a run database, its role (FORCE has ended the role's sessions)."""
        with self.admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            if name.startswith(RUN_PREFIX) and self.confined():
                self._passwords.pop(name, None)
                roles.drop_role(conn, name)

    def clone(self, template: str, name: str, tablespace: str | None = None) -> None:
        with self.admin() as conn:
            _clone(conn, template, name, tablespace)

    def confined(self) -> bool:
        """Whether tool calls get a run role of their own: False only where the server's role may not
        create roles (an external server), which is said once on stderr."""
        with self._lock:
            if self._confined is not None:
                return self._confined
            with self.admin() as conn:
                confined = roles.ensure_group(conn, bool(getattr(self.server, "private", False)))
                user = conn.info.user
            if not confined:
                print(
                    f"agentrel: warning: role {user} cannot create roles (CREATEROLE), so tool calls "
                    f"connect as {user} itself, unconfined; see README, The sandbox",
                    file=sys.stderr,
                )
            self._confined = confined
            return confined

    def tool_conninfo(self, run: str) -> str:
        """How a run's tool box connects: as the run's own role (sandbox/roles.py), not as the owner."""
        if not self.confined():
            return self.server.conninfo(run)
        # Neither the owner's password nor where it is kept: the run's role has its own.
        secret = ("password", "passfile")
        params = {k: v for k, v in conninfo_to_dict(self.server.conninfo(run)).items() if k not in secret}
        params["user"] = run
        if run in self._passwords:
            params["password"] = self._passwords[run]
        return make_conninfo("", **params)

    def run_tablespace(self) -> str | None:
        """The tablespace run databases go to: a RAM-backed one when the server offers it."""
        with self._lock:  # concurrent runs ask at once; the tablespace is created once
            if self._run_tablespace is False:
                location = getattr(self.server, "run_space", None)
                self._run_tablespace = None if location is None else self._ensure_tablespace(str(location))
        return self._run_tablespace  # type: ignore[return-value]

    def _ensure_tablespace(self, location: str) -> str:
        with self.admin() as conn:
            row = conn.execute(
                "SELECT pg_tablespace_location(oid) FROM pg_tablespace WHERE spcname = %s", (RUN_TABLESPACE,)
            ).fetchone()
            if row is None:
                create = sql.SQL("CREATE TABLESPACE {} LOCATION {}")
                with contextlib.suppress(psycopg.errors.DuplicateObject):  # another process was first
                    conn.execute(create.format(sql.Identifier(RUN_TABLESPACE), sql.Literal(location)))
            elif row[0] != location:
                raise SandboxError(
                    f"tablespace {RUN_TABLESPACE} points at {row[0]}, not {location}: "
                    "run `agentrel sandbox reset`"
                )
        return RUN_TABLESPACE

    def _publish(self, tmp: str, final: str, digest: str) -> None:
        with self.admin() as conn:
            conn.execute(
                sql.SQL("COMMENT ON DATABASE {} IS {}").format(sql.Identifier(tmp), sql.Literal(digest))
            )
            _close(conn, tmp)
            conn.execute(
                sql.SQL("ALTER DATABASE {} RENAME TO {}").format(sql.Identifier(tmp), sql.Identifier(final))
            )

    # -- templates -----------------------------------------------------------------------------------
    def seed_name(self, seed: str = DEFAULT_SEED, scale: int = 1, env: Environment | None = None) -> str:
        """The name of `env`'s (default: this one's) seed template: one per (environment fingerprint,
        digest format, tracking, grants, seed, scale). Pure but for the server's confinement, read once."""
        grants = roles.VERSION if self.confined() else "none"
        versions = f"{(env or self.env).fingerprint()}|{DIGEST_VERSION}|{tracking.VERSION}|{grants}"
        key = hashlib.sha256(f"{versions}|{seed}|{scale}".encode()).hexdigest()
        return f"{PREFIX}seed_{key[:16]}"

    def seed_template(self, seed: str = DEFAULT_SEED, scale: int = 1) -> Template:
        """The environment's seeded database, built once per `seed_name`."""
        confined = self.confined()

        def make(tmp: str) -> State:
            state = self.build_seed(tmp, seed, scale)
            with psycopg.connect(self.server.conninfo(tmp)) as conn:
                tracking.install(conn, self.env.table_infos())
                if confined:
                    roles.grant_tables(conn)
            return state

        return self._build(self.seed_name(seed, scale), make, f"the {self.env.name} seed template")

    def build_seed(self, name: str, seed: str = DEFAULT_SEED, scale: int = 1) -> State:
        """Create database `name` and run the environment's build in it; return its dump. Where the build
        says what it meant to load, the dump must equal it (no value normalized differently)."""
        with self.admin() as conn:
            create = "CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8'"
            conn.execute(sql.SQL(create).format(sql.Identifier(name)))
            roles.revoke_public(conn, name)
        with psycopg.connect(self.server.conninfo(name)) as conn:
            try:
                expected = self.env.build(conn, seed, scale)
            except Exception as exc:  # a plugin's bug, said in one line with the environment's name
                text = str(exc).strip()
                first = text.splitlines()[0] if text else type(exc).__name__
                raise SandboxError(f"environment {self.env.name}: its build failed: {first}") from None
        got = dump_database(self.server.conninfo(name), self.env.table_infos().values())
        if expected is not None and got.digest() != expected.digest():
            raise SandboxError(
                f"seed round trip mismatch (generated {expected.digest()[:12]}, loaded {got.digest()[:12]}): "
                "the server normalizes values differently; report this with `agentrel sandbox status`"
            )
        return got

    def task_template(self, base: Template, task_id: str, fixture_sql: str) -> Template:
        """`base` plus a task's fixture SQL, built once per (base digest, fixture) and reused."""
        key = hashlib.sha256(f"{base.name}|{base.digest}|{task_id}|{fixture_sql}".encode()).hexdigest()

        def make(tmp: str) -> State:
            self.clone(base.name, tmp)
            if fixture_sql.strip():
                with psycopg.connect(self.server.conninfo(tmp)) as conn:
                    try:
                        conn.execute(fixture_sql)
                    except psycopg.Error as exc:
                        first = str(exc).strip().splitlines()[0]
                        raise FixtureError(f"fixture SQL failed: {first}") from None
                    tracking.reset(conn)
            return dump_database(self.server.conninfo(tmp), self.env.table_infos().values())

        return self._build(f"{PREFIX}task_{key[:20]}", make, f"the template of task {task_id}")

    def _build(self, name: str, make: Callable[[str], State], what: str) -> Template:
        """Build template `name` once: `make(tmp)` fills a scratch database and returns its state, which
        is then published by renaming, its digest in the database comment, closed to connections. Reused
        while it exists, once its content is found to match that digest (`_checked_template`)."""
        digest = self.comment(name)
        if digest and self._checked_template(name, digest):
            return Template(name, digest)
        tmp = self._tmp_name()
        notice(f"building {what} (first use of this seed and code)")
        started = time.monotonic()
        try:
            state = make(tmp)
            digest = state.digest()
            self._publish(tmp, name, digest)
        except psycopg.errors.DuplicateDatabase:  # another process published the same template first
            self.drop(tmp)
            return Template(name, self.comment(name) or "")
        except BaseException:
            self.drop(tmp)
            raise
        self._remember(name, state)
        notice(f"built {what} in {time.monotonic() - started:.1f} s")
        return Template(name, digest)

    def _checked_template(self, name: str, recorded: str) -> bool:
        """Whether template `name` holds what its recorded digest says, dumped once per process; False
        (said on stderr, the template dropped) when it does not, so the caller builds it again."""
        key = (self.server.conninfo("postgres"), name)
        with _CHECKED_LOCK:
            if _CHECKED.get(key) == recorded:
                return True
        if self._witnessed(name, recorded):
            with _CHECKED_LOCK:
                _CHECKED[key] = recorded
            return True
        state = self.dump_template(name)
        got = state.digest()
        if got != recorded:
            notice(
                f"template {name} holds {got[:12]}…, not the {recorded[:12]}… it was built with "
                "(changed outside AgentRel): dropped and built again"
            )
            self.drop(name)
            return False
        with self.admin() as conn:
            _close(conn, name)  # one an earlier version built and left open
        self._remember(name, state)
        return True

    def _remember(self, name: str, state: State) -> None:
        """`name` was just built or checked and holds `state`: no dump of it is needed again here, nor in
        a later process while its witness holds."""
        with _CHECKED_LOCK:
            _CHECKED[(self.server.conninfo("postgres"), name)] = state.digest()
        self._states.setdefault(state.digest(), state)
        self._cache(name, state)
        witness, path = self._witness(name), self._witness_path(name)
        if witness is not None and path is not None:
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
                tmp.write_text(f"{witness}\n{state.digest()}\n")
                os.replace(tmp, path)

    def _witness(self, name: str) -> str | None:
        """What must change before anyone can write template `name`: the cluster (its system identifier),
        the database (its oid) and the version of its catalog row (`xmin`). A template takes no logins
        (`_close`), nothing writes a database without logging into it, and reopening it is an update of
        that row: a new `xmin`, never an old one again (vacuum's in-place updates keep it). None when the
        template takes logins or the server will not say (a role that may not read its control data)."""
        query = (
            "SELECT c.system_identifier, d.oid, d.xmin, d.datallowconn "
            "FROM pg_database d, pg_control_system() c WHERE d.datname = %s"
        )
        try:
            with self.admin() as conn:
                row = conn.execute(query, (name,)).fetchone()
        except psycopg.errors.InsufficientPrivilege:
            return None
        if row is None or row[3]:
            return None
        return f"{row[0]}:{row[1]}:{row[2]}"

    def derived(
        self, template: Template, key: str, compute: Callable[[], JsonValue], fresh: bool = False
    ) -> JsonValue:
        """A fact computed from `template`'s content (`compute()`, e.g. a task's acting user), kept beside
        its cached dump for its digest, so a later process that needs only the fact (`audit --plan`) does
        not load the dump; `fresh` computes it again (and keeps that) even when one is kept."""
        path = self.cache_dir / f"{template.name}.derived.json" if self.cache_dir else None
        try:
            kept = json.loads(path.read_text()) if path is not None else {}
        except (OSError, ValueError):
            kept = {}
        facts = (
            kept.get("facts") if isinstance(kept, dict) and kept.get("digest") == template.digest else None
        )
        if isinstance(facts, dict) and key in facts and not fresh:
            return cast(JsonValue, facts[key])
        value = compute()
        if path is not None:
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
                tmp.write_text(
                    json.dumps({"digest": template.digest, "facts": {**(facts or {}), key: value}})
                )
                os.replace(tmp, path)
        return value

    def _witness_path(self, name: str) -> Path | None:
        return self.cache_dir / f"{name}.witness" if self.cache_dir else None

    def _witnessed(self, name: str, recorded: str) -> bool:
        """Whether template `name` is, by its witness, the one this user built or checked with digest
        `recorded` (kept in AgentRel's private state folder, beyond the server's reach)."""
        path = self._witness_path(name)
        try:
            kept = path.read_text().split() if path is not None else []
        except OSError:
            return False
        return len(kept) == 2 and kept[1] == recorded and kept[0] == self._witness(name)

    def forget_check(self, name: str) -> None:
        """The next `_build` of template `name` in this process dumps and checks it again (its witness
        too is dropped: what follows is read from its content)."""
        with _CHECKED_LOCK:
            _CHECKED.pop((self.server.conninfo("postgres"), name), None)
        path = self._witness_path(name)
        if path is not None:
            path.unlink(missing_ok=True)

    def computed_digest(self, name: str) -> str | None:
        """The digest of template `name` as dumped by this process (at its build or its check), if any."""
        with _CHECKED_LOCK:
            return _CHECKED.get((self.server.conninfo("postgres"), name))

    def dump_template(self, name: str) -> State:
        """A full dump of a template, read through a scratch clone: templates take no connections."""
        scratch = self._tmp_name()
        self.clone(name, scratch, self.run_tablespace())
        try:
            return dump_database(self.server.conninfo(scratch), self.env.table_infos().values())
        finally:
            self.drop(scratch)

    def dump(self, name: str) -> State:
        """A full dump of any AgentRel database: through a clone where it takes no connections."""
        with self.admin() as conn:
            row = conn.execute("SELECT datallowconn FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if row == (False,):
            return self.dump_template(name)
        return dump_database(self.server.conninfo(name), self.env.table_infos().values())

    def template_state(self, template: Template) -> State:
        """The pre-run dump of a template: computed once, cached on disk and in memory, checked by digest.

        Callers share the returned State: it must not be mutated."""
        if template.digest in self._states:
            return self._states[template.digest]
        state = self._template_state(template)
        self._states[template.digest] = state
        return state

    def _template_state(self, template: Template) -> State:
        path = self.cache_path(template.name)
        if path and path.exists():
            from agentrel.dsl.state import DumpFormatError, load

            try:
                state = load(path)
                if state.digest() == template.digest:
                    return state
            except DumpFormatError:
                pass
        state = self.dump_template(template.name)
        if state.digest() != template.digest:
            raise SandboxError(
                f"template {template.name} no longer matches its digest: run `agentrel sandbox reset`"
            )
        self._cache(template.name, state)
        return state

    def cache_path(self, name: str) -> Path | None:
        return self.cache_dir / f"{name}.jsonl.gz" if self.cache_dir else None

    def _cache(self, name: str, state: State) -> None:
        path = self.cache_path(name)
        if path:
            state.save(path)

    # -- run databases --------------------------------------------------------------------------------
    def create_run(self, template: Template) -> str:
        """Clone `template` for one run; connect its tool box with `tool_conninfo(name)`."""
        name = f"{RUN_PREFIX}{HOST_TAG}_{os.getpid()}_{secrets.token_hex(4)}"
        tablespace, confined = self.run_tablespace(), self.confined()
        with self.admin() as conn:
            _clone(conn, template.name, name, tablespace)
            try:
                password = roles.create_run_role(conn, name) if confined else None
            except BaseException:
                self.drop(name)
                raise
        if password:
            self._passwords[name] = password
        return name

    def _tmp_name(self) -> str:
        # Building databases look like run databases, so a crash mid-build is cleaned up the same way.
        return f"{RUN_PREFIX}{HOST_TAG}_{os.getpid()}_b{secrets.token_hex(3)}"

    def drop_orphans(self) -> list[str]:
        """Drop run databases of this host whose owning process is gone; return their names."""
        dropped = []
        names = set(self.names(RUN_PREFIX))
        if self.confined():  # a crash between dropping a run's database and its role leaves the role
            with self.admin() as conn:
                names.update(roles.role_names(conn, RUN_PREFIX))
        for name in sorted(names):
            parts = name[len(RUN_PREFIX) :].split("_")
            if len(parts) != 3 or parts[0] != HOST_TAG or not parts[1].isdigit():
                continue
            if not _alive(int(parts[1])):
                self.drop(name)
                dropped.append(name)
        return dropped

    def drop_all(self) -> list[str]:
        names = self.names()
        for name in names:
            self.drop(name)
        with self.admin() as conn:
            conn.execute(sql.SQL("DROP TABLESPACE IF EXISTS {}").format(sql.Identifier(RUN_TABLESPACE)))
            if self.confined():
                for role in [*roles.role_names(conn, RUN_PREFIX), roles.GROUP]:
                    roles.drop_role(conn, role)
        self._run_tablespace = False
        self._confined = None
        return names


def _clone(conn: psycopg.Connection, template: str, name: str, tablespace: str | None) -> None:
    """Clone `template` as `name`, closed to PUBLIC from the start: a new database grants PUBLIC CONNECT
    and TEMP whatever its template's privileges were, and a run's role must reach its own alone."""
    # FILE_COPY (Postgres 15+) copies files instead of WAL-logging every page: a run database is
    # dropped soon after, so the default strategy's dirty pages would only be written for nothing.
    strategy = sql.SQL(" STRATEGY FILE_COPY" if conn.info.server_version >= 150000 else "")
    space = sql.SQL(" TABLESPACE {}").format(sql.Identifier(tablespace)) if tablespace else sql.SQL("")
    conn.execute(
        sql.SQL("CREATE DATABASE {} TEMPLATE {}{}{}").format(
            sql.Identifier(name), sql.Identifier(template), strategy, space
        )
    )
    roles.revoke_public(conn, name)


def _close(conn: psycopg.Connection, name: str) -> None:
    """No more logins to database `name`, the superuser's included; cloning it still works."""
    conn.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(sql.Identifier(name)))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
