"""Logins on a server AgentRel made (the local cluster, the container): scram-sha-256 for every role.

The superuser's password is generated once and kept in a libpq password file, mode 0600, under
`AGENTREL_HOME/secrets/`. The harness names the file in its own connection strings (`passfile=`), so the
password itself is in no connection string, no environment variable and no command line: a child process
learns nothing from its environment or argv, and a process that cannot read the file (an agent program in
its sandbox) cannot log in as the superuser, on the socket or on TCP.

A cluster made by an earlier AgentRel (`initdb --auth=trust`) is upgraded the first time it is started:
the superuser gets the password, `pg_hba.conf` is rewritten to scram-sha-256 and the server reloads it.
Whether a server is sealed is asked of the server itself: a login with a wrong password must be refused.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import os
import secrets
import sys
import time
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from agentrel.sandbox.servers.base import SandboxError

SECRETS_DIR = "secrets"
METHOD = "scram-sha-256"
# Every line a server AgentRel made accepts: the socket and loopback, always with a password.
HBA_LINES = (
    "# AgentRel: every role logs in with a password (sandbox/servers/auth.py)",
    f"local all all {METHOD}",
    f"host all all 127.0.0.1/32 {METHOD}",
    f"host all all ::1/128 {METHOD}",
)
RELOAD_TIMEOUT_S = 10.0
# PBKDF2 rounds in the verifiers AgentRel stores. Rounds slow down guessing a weak password from a stolen
# verifier; these passwords are 256 (superuser) and 192 (run roles) random bits, which no number of
# guesses reaches, while every login pays the rounds on the client: at libpq's 4096 a run's four logins
# cost ~10 ms of PBKDF2 (bench/run_overhead.py's budget is ~48 ms a run), at 16 a few microseconds.
ITERATIONS = 16


class SuperuserSecret:
    """The superuser's password of one server, in a libpq password file (`*:*:*:<user>:<password>`)."""

    def __init__(self, path: Path, user: str) -> None:
        self.path = path
        self.user = user

    @classmethod
    def in_home(cls, home: Path, name: str, user: str) -> SuperuserSecret:
        return cls(home / SECRETS_DIR / f"{name}.pgpass", user)

    def exists(self) -> bool:
        return self.path.is_file()

    def params(self) -> dict[str, str]:
        """What a connection string carries to log in as the superuser: the file's path, not its content."""
        return {"passfile": str(self.path)}

    def read(self) -> str:
        try:
            line = self.path.read_text().strip()
        except OSError as exc:
            raise SandboxError(
                f"cannot read the superuser password file {self.path}: {exc.strerror}"
            ) from None
        password = line.rsplit(":", 1)[-1]
        if not password:
            raise SandboxError(
                f"the superuser password file {self.path} is empty: run `agentrel sandbox destroy`"
            )
        return password

    def ensure(self) -> str:
        """The password, created (random, 0600, written whole or not at all) when there is none yet."""
        if self.exists():
            return self.read()
        password = secrets.token_hex(32)  # hex: nothing a password file would need escaped (: or \)
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(self.path.parent, 0o700)
            tmp = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(f"*:*:*:{self.user}:{password}\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            raise SandboxError(
                f"cannot write the superuser password file {self.path}: {exc.strerror}; "
                "set AGENTREL_HOME to a writable directory"
            ) from None
        return password

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def write_pwfile(path: Path, password: str, owner: tuple[int, int] | None = None) -> None:
    """A one-use file for `initdb --pwfile` (0600, chowned to the server's user when we are root); the
    caller removes it once initdb has read it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(password + "\n")
    if owner is not None:
        os.chown(path, *owner)


def lets_anyone_in(conninfo: str) -> bool:
    """Does the server accept a login with a wrong password (trust, or no password set)? An explicit
    password wins over PGPASSWORD and any password file, so this asks exactly that."""
    probe = make_conninfo(conninfo, password=secrets.token_hex(16), passfile=os.devnull)
    try:
        psycopg.connect(probe, connect_timeout=10).close()
    except psycopg.OperationalError:
        return False
    return True


def ensure_sealed(conninfo: str, secret: SuperuserSecret, where: str, fix: str) -> None:
    """After the server answers: make sure it demands the superuser's password, upgrading a server made
    with trust (and said in one line); refuse one that is sealed with a password we no longer have."""
    if not lets_anyone_in(conninfo):
        if not secret.exists():
            raise SandboxError(
                f"the sandbox server at {where} needs the superuser password, and its file {secret.path} "
                f"is gone: {fix} (it deletes the server and its templates)"
            )
        with psycopg.connect(make_conninfo(conninfo, **secret.params()), autocommit=True) as conn:
            cheapen(conn, secret.read())
        return
    password = secret.ensure()
    with psycopg.connect(make_conninfo(conninfo, **secret.params()), autocommit=True) as conn:
        seal(conn, password)
    deadline = time.monotonic() + RELOAD_TIMEOUT_S
    while lets_anyone_in(conninfo):  # the postmaster reloads pg_hba.conf on SIGHUP, a moment later
        if time.monotonic() > deadline:
            raise SandboxError(
                f"the sandbox server at {where} still lets logins in without a password: {fix}"
            )
        time.sleep(0.05)
    print(
        f"agentrel: upgraded the sandbox server at {where} to {METHOD} logins "
        f"(the superuser's password is in {secret.path}, mode 0600)",
        file=sys.stderr,
    )


def seal(conn: psycopg.Connection, password: str) -> None:
    """Give the connected superuser `password` and make every login need one: rewrite the server's own
    pg_hba.conf (written by the server, so it works inside a container too) and reload it."""
    user = conn.info.user
    verifier = role_verifier(conn, user, password)
    conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(user), sql.Literal(verifier)))
    row = conn.execute("SHOW hba_file").fetchone()
    assert row is not None
    lines = sql.SQL(", ").join(sql.Literal(line) for line in HBA_LINES)
    copy = "COPY (SELECT line FROM unnest(ARRAY[{}]) WITH ORDINALITY AS t(line, n) ORDER BY n) TO {}"
    conn.execute(sql.SQL(copy).format(lines, sql.Literal(str(row[0]))))
    conn.execute("SELECT pg_reload_conf()")


def role_verifier(conn: psycopg.Connection, role: str, password: str) -> str:
    """The scram-sha-256 verifier of `password` for `role`, computed here: CREATE ROLE then carries no
    password in clear (a statement that fails is written to the server's log with its text)."""
    return scram_verifier(password)


def scram_verifier(password: str, iterations: int = ITERATIONS, salt: bytes | None = None) -> str:
    """What Postgres stores for a scram-sha-256 password (RFC 5802, 7677): `SCRAM-SHA-256$<iterations>:
    <salt>$<StoredKey>:<ServerKey>`. The passwords AgentRel makes are ASCII, which SASLprep leaves as is."""
    salt = salt if salt is not None else os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()

    def b64(b: bytes) -> str:
        return base64.b64encode(b).decode()

    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


def cheapen(conn: psycopg.Connection, password: str) -> None:
    """initdb stores the superuser's verifier at libpq's 4096 rounds: store it at ITERATIONS instead
    (one catalog read when it already is), so the harness's own logins stay cheap."""
    row = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = current_user").fetchone()
    if row is None or str(row[0] or "").startswith(f"SCRAM-SHA-256${ITERATIONS}:"):
        return
    verifier = scram_verifier(password)
    conn.execute(
        sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(conn.info.user), sql.Literal(verifier))
    )
