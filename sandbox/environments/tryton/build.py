"""The template's build: Tryton's modules activated into the empty database, the company seeded through
proteus, then Tryton's bookkeeping made a function of the build alone. Minutes of work (module
activation alone is ~100 s of one CPU), done once per fingerprint: AgentRel keeps the result as the
environment's seed template and clones it per run.

Each step runs in a process of its own (launch.py), with the business date pinned and Python's hash
seed fixed (module loading iterates sets: the seed fixes the order, so ids come out the same), and
says what it is doing on stderr. Afterwards every `create_date`/`write_date` is set to the pinned date's
midnight and every session, cache, queue and password hash is cleared: two builds give equal dumps.

The built database is kept on the server as `agentrel_trytonbase_<key>` (the key hashes the build's
inputs, not the tools'), and each template is a copy of it: `sandbox reset` drops it with the rest.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from agentrel.sandbox.environments.tryton import settings
from agentrel.sandbox.environments.tryton.server import conninfo_of
from agentrel.sandbox.environments.tryton.tables import NOISE_TABLES, TABLES


class BuildFailed(Exception):
    """A Tryton step of the build failed: the step and the last lines of its output."""


def progress(text: str) -> None:
    print(f"tryton-erp: {text}", file=sys.stderr, flush=True)


BASE_PREFIX = "agentrel_trytonbase_"


def base_name(seed: str, scale: int) -> str:
    """The server's built Tryton database for this build's inputs: the Tryton distributions, the build's
    code (not the tools'), the pinned date, the seed and the scale. Tool code is in the fingerprint too,
    so a tool change names a new template; this copy spares that template the minutes of a rebuild."""
    body = json.dumps(
        {"dists": settings.installed_versions(), "code": settings.code_digest(),
         "date": settings.PINNED_DATE.isoformat(), "seed": seed, "scale": scale},
        sort_keys=True,
    )  # fmt: skip
    return BASE_PREFIX + hashlib.sha256(body.encode()).hexdigest()[:16]


def build(conn: psycopg.Connection, seed: str, scale: int) -> None:
    """Fill the empty database `conn` is connected to (as its owner) with the built Tryton database:
    built once per `base_name` on this server, then copied (pg_dump | pg_restore) for each template."""
    target = conninfo_of(conn)
    base = base_name(seed, scale)
    admin = make_conninfo(target, dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as c:
        found = c.execute("SELECT 1 FROM pg_database WHERE datname = %s", (base,)).fetchone()
    if found is None:
        _build_base(admin, base, seed, scale)
    progress(f"copying the built Tryton database {base}")
    _copy(make_conninfo(target, dbname=base), target)


def _build_base(admin: str, base: str, seed: str, scale: int) -> None:
    """Activate, seed and normalize a scratch database, then publish it as `base` by renaming."""
    from agentrel.sandbox.databases import HOST_TAG, RUN_PREFIX

    # Named like a run database, so a crash mid-build is dropped as an orphan at the next start.
    tmp = f"{RUN_PREFIX}{HOST_TAG}_{os.getpid()}_t{secrets.token_hex(3)}"
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8'").format(sql.Identifier(tmp))
        )
    try:
        conninfo = make_conninfo(admin, dbname=tmp)
        _activate_and_seed(conninfo, tmp, seed, scale)
        with psycopg.connect(conninfo) as c:
            normalize(c)
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(
                sql.SQL("ALTER DATABASE {} RENAME TO {}").format(sql.Identifier(tmp), sql.Identifier(base))
            )
    except BaseException:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(tmp)))
        raise


def _activate_and_seed(conninfo: str, database: str, seed: str, scale: int) -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="agentrel-tryton-build-") as tmp:
        config = settings.write_config(Path(tmp) / "trytond.conf", conninfo)
        passfile = Path(tmp) / "admin"
        passfile.touch(mode=0o600)
        passfile.write_text(secrets.token_urlsafe(24))  # never used: the admin's hash is cleared below
        env = {**os.environ, "PYTHONHASHSEED": "0", "TRYTONPASSFILE": str(passfile)}
        progress(f"building Tryton once per build key: activating {', '.join(settings.MODULES)}")
        _step(["activate", str(config), database, *settings.MODULES], env, Path(tmp) / "activate.log")
        progress(f"modules active after {time.monotonic() - started:.0f} s; seeding the company")
        _step(["seed", str(config), database, seed, str(scale)], env, Path(tmp) / "seed.log")
    progress(f"Tryton built in {time.monotonic() - started:.0f} s")


def _copy(source: str, target: str) -> None:
    """pg_dump of `source` restored into the empty `target` (schema, rows and sequence values)."""
    dump = subprocess.Popen(
        [_pg_bin("pg_dump"), "--format=custom", "--no-owner", "--no-privileges", "--dbname", source],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    restore = subprocess.run(
        [_pg_bin("pg_restore"), "--no-owner", "--no-privileges", "--exit-on-error", "--dbname", target],
        stdin=dump.stdout, capture_output=True, check=False,
    )  # fmt: skip
    assert dump.stdout is not None
    dump.stdout.close()
    dumped = dump.wait()
    if dumped != 0 or restore.returncode != 0:
        err = (dump.stderr.read() if dump.stderr else b"") + restore.stderr
        raise BuildFailed(f"copying the built Tryton database failed: {err.decode(errors='replace')[:300]}")


def _pg_bin(name: str) -> str:
    try:
        from agentrel.sandbox.servers.local import find_bindir

        path = find_bindir() / name
        if path.exists():
            return str(path)
    except Exception:  # no server binaries found that way: the PATH's client
        pass
    found = shutil.which(name)
    if found is None:
        raise BuildFailed(f"{name} not found: install the PostgreSQL client programs")
    return found


def _step(args: list[str], env: dict[str, str], log: Path) -> None:
    command = [sys.executable, "-m", "agentrel.sandbox.environments.tryton.launch", *args]
    with log.open("wb") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env, check=False)
    text = log.read_text(errors="replace")
    for line in text.splitlines():
        if line.startswith("tryton seed: "):
            progress(line.removeprefix("tryton seed: "))
    if done.returncode != 0:
        tail = [line for line in text.strip().splitlines() if line.strip()][-3:]
        raise BuildFailed(f"tryton {args[0]} failed (exit {done.returncode}): {' | '.join(tail)}")


def normalize(conn: psycopg.Connection) -> None:
    """Bookkeeping that differs between two builds, made equal: stamps to the pinned date, no sessions."""
    stamp = dt.datetime.combine(settings.PINNED_DATE, dt.time())
    for name, info in TABLES.items():
        for column in ("create_date", "write_date"):
            if column in info.columns:
                conn.execute(
                    sql.SQL("UPDATE {t} SET {c} = %s WHERE {c} IS NOT NULL").format(
                        t=sql.Identifier(name), c=sql.Identifier(column)
                    ),
                    (stamp,),
                )
    conn.execute("UPDATE res_user SET password_hash = NULL")
    for name in sorted(NOISE_TABLES):
        conn.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(name)))
