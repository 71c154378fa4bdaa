"""One Tryton server per run database, started on the run's first tool call and gone with the run.

The server reaches Postgres as the run's own role (the tool call's connection says which, with its
password): it can touch its run database and nothing else, exactly as an in-process tool could. It is
started with the business date pinned and the database preloaded (standby.py), listens on 127.0.0.1 on a
port of the kernel's choosing, and exits by itself when the run database is dropped or this process
dies. Each server is a standby (standby.py) started ahead, its imports done, and handed the run database
when the run's first call comes; the next standby starts then. The agent's clerk logs in through a
session key made for this server alone (a fresh random key in `ir_session`, a table outside the diff):
no password exists anywhere for it.

Its stderr (Tryton's log: every traceback behind a refused call) is written to a file per run database
under the AgentRel home (`tryton/<run database>.log`), part of the run's evidence; `log_path` names it.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from agentrel.sandbox.environments.tryton import settings
from agentrel.sandbox.tools.base import ToolError

#: Whether a standby is started for the next run (bench/run_overhead.py measures both ways).
KEEP_STANDBY = True
START_TIMEOUT_S = 180.0  # a cold pool load on a loaded 2-core machine takes tens of seconds


@dataclass
class Running:
    database: str
    port: int
    user_id: int
    login: str
    key: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{self.database}/rpc/"


_WHERE_WHO = frozenset({"host", "hostaddr", "port", "user", "dbname", "sslmode"})
_servers: dict[str, Running] = {}
_standby: subprocess.Popen[bytes] | None = None  # the next run's server, its imports done (standby.py)
_standby_owner = 0  # the pid of the process that started it
_lock = threading.Lock()


def log_dir() -> Path:
    from agentrel.sandbox.servers.local import default_home

    path = default_home() / "tryton"
    path.mkdir(parents=True, exist_ok=True)
    return path


def log_path(database: str) -> Path:
    return log_dir() / f"{database}.log"


def conninfo_of(conn: psycopg.Connection) -> str:
    """The conninfo `conn` was opened with, its password included (libpq keeps it in memory only)."""
    # Only what says where and who: libpq of another version (pg_dump's, trytond's psycopg) refuses
    # options it does not know, and psycopg's dsn lists every option its own libpq has.
    params = {k: v for k, v in conninfo_to_dict(conn.info.dsn).items() if v is not None and k in _WHERE_WHO}
    if conn.info.password:
        params["password"] = conn.info.password
    return make_conninfo("", **params)


def for_connection(conn: psycopg.Connection, user_id: int) -> Running:
    """The server of `conn`'s database, started on first use, its clerk logged in as `user_id`."""
    database = conn.info.dbname
    with _lock:
        running = _servers.get(database)
        if running is not None and running.process.poll() is None:
            return running
        _reap()
        running = _start(conninfo_of(conn), database, user_id)
        _servers[database] = running
        return running


def _open_session(conninfo: str, user_id: int) -> tuple[str, str]:
    """A session key for the clerk, made directly in `ir_session` (Tryton's own check reads it)."""
    key = secrets.token_hex(32)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute("SELECT login FROM res_user WHERE id = %s", (user_id,)).fetchone()
        if row is None:
            raise ToolError(f"no Tryton user with id {user_id} in this database")
        conn.execute(
            "INSERT INTO ir_session (key, create_uid, create_date, ip_address) "
            "VALUES (%s, %s, now() AT TIME ZONE 'UTC', '127.0.0.1')",
            (key, user_id),
        )
    return str(row[0]), key


def _start(conninfo: str, database: str, user_id: int) -> Running:
    """Hand the run database to the warm standby (started cold if there is none), then start the next
    standby, so the next run's server has its imports done before the run asks for it."""
    global _standby, _standby_owner
    login, key = _open_session(conninfo, user_id)
    log = log_path(database)
    # A forked child shares its parent's standby's pipes: only the process that started it hands it a run.
    warm = _standby is not None and _standby.poll() is None and _standby_owner == os.getpid()
    process, _standby = (_standby if warm and _standby is not None else _spawn()), None
    with tempfile.TemporaryDirectory(prefix="agentrel-tryton-") as tmp:
        config = settings.write_config(Path(tmp) / "trytond.conf", conninfo)
        job = {"config": str(config), "db": database, "log": str(log), "watch": conninfo}
        assert process.stdin is not None
        try:
            process.stdin.write(json.dumps(job).encode() + b"\n")
            process.stdin.flush()
        except OSError:
            pass  # the standby died: _await_port says so with its log
        port = _await_port(process, log)
    if KEEP_STANDBY:
        _standby, _standby_owner = _spawn(), os.getpid()
    return Running(database, port, user_id, login, key, process, log)


def _spawn() -> subprocess.Popen[bytes]:
    """A standby server (standby.py): its output before an assignment goes to the standby log."""
    with (log_dir() / "standby.log").open("ab") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "agentrel.sandbox.environments.tryton.standby"],
            stdout=subprocess.PIPE, stderr=err, stdin=subprocess.PIPE,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )  # fmt: skip


def _await_port(process: subprocess.Popen[bytes], log: Path) -> int:
    """The port the server printed once listening; its config file may go once this returns."""
    assert process.stdout is not None
    found: list[int] = []

    def read() -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.decode()
            if line.startswith("listening "):
                found.append(int(line.split()[1]))
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(START_TIMEOUT_S)
    if not found:
        process.kill()
        tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
        raise ToolError(f"the Tryton server did not start: {' | '.join(tail) or 'no output'} (log {log})")
    return found[0]


def _reap() -> None:
    """Forget (and end) servers whose process is gone or whose database was dropped."""
    for name, running in list(_servers.items()):
        if running.process.poll() is not None:
            _servers.pop(name)


def stop(database: str) -> None:
    with _lock:
        running = _servers.pop(database, None)
    if running is not None:
        _end(running)


def _end(running: Running) -> None:
    running.process.terminate()
    try:
        running.process.wait(5)
    except subprocess.TimeoutExpired:
        running.process.kill()
        running.process.wait()


@atexit.register
def _stop_all() -> None:
    global _standby
    with _lock:
        servers = list(_servers.values())
        _servers.clear()
        if _standby is not None and _standby_owner == os.getpid():
            _standby.kill()
            _standby.wait()
            _standby = None
    for running in servers:
        _end(running)


def wait_gone(database: str, timeout_s: float = 10.0) -> bool:
    """Whether the server of `database` has exited within `timeout_s` (after its database was dropped)."""
    running = _servers.get(database)
    if running is None:
        return True
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if running.process.poll() is not None:
            return True
        time.sleep(0.05)
    return False
