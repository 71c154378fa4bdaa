"""The template's build: Tryton's modules activated into the empty database, the company seeded through
proteus, then Tryton's bookkeeping made a function of the build alone. Minutes of work (module
activation alone is ~100 s of one CPU), done once per fingerprint: AgentRel keeps the result as the
environment's seed template and clones it per run.

Each step runs in a process of its own (launch.py), with the business date pinned and Python's hash
seed fixed (module loading iterates sets: the seed fixes the order, so ids come out the same), and
says what it is doing on stderr. Afterwards every `create_date`/`write_date` is set to the pinned date's
midnight and every session, cache, queue and password hash is cleared: two builds give equal dumps.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg import sql

from agentrel.sandbox.environments.tryton import settings
from agentrel.sandbox.environments.tryton.server import conninfo_of
from agentrel.sandbox.environments.tryton.tables import NOISE_TABLES, TABLES


class BuildFailed(Exception):
    """A Tryton step of the build failed: the step and the last lines of its output."""


def progress(text: str) -> None:
    print(f"tryton-erp: {text}", file=sys.stderr, flush=True)


def build(conn: psycopg.Connection, seed: str, scale: int) -> None:
    """Activate, seed and normalize the empty database `conn` is connected to (as its owner)."""
    database = conn.info.dbname
    conninfo = conninfo_of(conn)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="agentrel-tryton-build-") as tmp:
        config = settings.write_config(Path(tmp) / "trytond.conf", conninfo)
        passfile = Path(tmp) / "admin"
        passfile.touch(mode=0o600)
        passfile.write_text(secrets.token_urlsafe(24))  # never used: the admin's hash is cleared below
        env = {**os.environ, "PYTHONHASHSEED": "0", "TRYTONPASSFILE": str(passfile)}
        progress(f"building the template (once per fingerprint): activating {', '.join(settings.MODULES)}")
        _step(["activate", str(config), database, *settings.MODULES], env, Path(tmp) / "activate.log")
        progress(f"modules active after {time.monotonic() - started:.0f} s; seeding the company")
        _step(["seed", str(config), database, seed, str(scale)], env, Path(tmp) / "seed.log")
    normalize(conn)
    progress(f"template built in {time.monotonic() - started:.0f} s")


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
