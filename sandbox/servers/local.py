"""LocalCluster: a private Postgres cluster (initdb + pg_ctl) on a unix socket, started on demand.

Every role logs in with scram-sha-256, the superuser with a password kept 0600 under AGENTREL_HOME
(sandbox/servers/auth.py); a cluster an earlier version made with trust is upgraded at its first start.

Postgres refuses to run as root. When this process is root, the cluster runs as an unprivileged system
user, and its data directory and socket are placed where that user can reach them: inside the project's
home when every parent directory lets the user through, otherwise in a per-home directory under the
system temp directory (a fresh `mktemp -d` checkout is mode 0700, so the user could not enter it).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from agentrel.sandbox.notices import notice
from agentrel.sandbox.servers.auth import SuperuserSecret, ensure_sealed, lets_anyone_in, write_pwfile
from agentrel.sandbox.servers.base import SandboxError, ServerInfo
from agentrel.sandbox.servers.settings import server_settings

SUPERUSER = "agentrel"
PG_BINARIES = ("initdb", "pg_ctl", "postgres")
INSTALL_HINT = (
    "install the PostgreSQL server (Debian: apt-get install postgresql; macOS: brew install postgresql)"
)
# A unix socket path must fit in sockaddr_un (107 bytes); leave room for ".s.PGSQL.5432".
MAX_SOCKET_DIR = 90
SERVICE_USERS = ("postgres", "agentrel")
SHM = Path("/dev/shm")
CONF_MARKER = "# AgentRel sandbox settings"
FALLBACK_PARENT = Path("/var/tmp") if Path("/var/tmp").is_dir() else Path(tempfile.gettempdir())


def default_home() -> Path:
    """AGENTREL_HOME, else one place per user ($XDG_STATE_HOME/agentrel, by default
    ~/.local/state/agentrel): the same cluster, registry and signing key from whichever directory agentrel
    runs in (a folder-relative default once started a second, empty world in every new directory)."""
    configured = os.environ.get("AGENTREL_HOME")
    if configured:
        return Path(configured).absolute()
    state = os.environ.get("XDG_STATE_HOME")
    if not state:
        try:
            state = str(Path.home() / ".local" / "state")
        except RuntimeError:  # no home directory (a service account): only an explicit place will do
            raise SandboxError(
                "no home directory to keep AgentRel's state in: set AGENTREL_HOME to a writable directory"
            ) from None
    home = (Path(state) / "agentrel").absolute()
    _say_where_an_older_home_is(home)
    return home


_SAID_OLD_HOME = False


def _say_where_an_older_home_is(home: Path) -> None:
    """Earlier versions kept their state in ./.agentrel: say once that it is no longer used, and how to
    keep using it, rather than silently starting an empty world beside it."""
    global _SAID_OLD_HOME
    old = Path.cwd() / ".agentrel"
    # The checkout's own .agentrel/ also holds build caches (make test-tau2's venv): only a cluster's
    # password file or a registry makes it an earlier home.
    if _SAID_OLD_HOME or old == home or not ((old / "secrets").is_dir() or (old / "registry.jsonl").exists()):
        return
    _SAID_OLD_HOME = True
    notice(
        f"AgentRel keeps its state in {home} now; {old} holds an earlier cluster, registry and key: "
        f"`AGENTREL_HOME={old}` keeps using them"
    )


def find_bindir() -> Path:
    """Where initdb/pg_ctl/postgres live: AGENTREL_PG_BINDIR if set (then only there), else PATH,
    `pg_config --bindir`, and Debian's /usr/lib/postgresql/<version>/bin, newest first."""
    pinned = os.environ.get("AGENTREL_PG_BINDIR")
    if pinned:
        d = Path(pinned)
        if all((d / b).is_file() for b in PG_BINARIES):
            return d
        raise SandboxError(
            f"AGENTREL_PG_BINDIR={pinned} lacks initdb, pg_ctl or postgres: {INSTALL_HINT}, "
            "or unset AGENTREL_PG_BINDIR"
        )
    candidates: list[Path] = []
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=True)
            candidates.append(Path(out.stdout.strip()))
        except (subprocess.CalledProcessError, OSError):
            pass
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: _version_key(p.parent.name))
    candidates.extend(reversed(debian))
    for d in candidates:
        if all((d / b).is_file() and os.access(d / b, os.X_OK) for b in PG_BINARIES):
            return d
    raise SandboxError(f"PostgreSQL server binaries (initdb, pg_ctl, postgres) not found: {INSTALL_HINT}")


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(p) for p in name.split(".") if p.isdigit())


class LocalCluster:
    """The default backend: a cluster owned by this project under AGENTREL_HOME (default `.agentrel/`)."""

    name = "local"
    private = True  # AgentRel made this cluster: its maintenance databases may be closed to PUBLIC

    def __init__(self, home: Path | None = None, port: int = 5432, tcp: bool = False) -> None:
        self.home = (home or default_home()).absolute()
        self.port = port
        self.tcp = tcp
        self._bindir: Path | None = None
        self._root = self._choose_root()
        self.secret = SuperuserSecret.in_home(self.home, "local", SUPERUSER)

    # -- layout --------------------------------------------------------------------------------------
    @property
    def datadir(self) -> Path:
        return self._root / "data"

    @property
    def sockdir(self) -> Path:
        return self._root / "sock"

    @property
    def logfile(self) -> Path:
        return self._root / "postgres.log"

    def _service_user(self) -> pwd.struct_passwd | None:
        if os.geteuid() != 0:
            return None
        for name in SERVICE_USERS:
            try:
                return pwd.getpwnam(name)
            except KeyError:
                continue
        useradd = shutil.which("useradd")
        if not useradd:
            raise SandboxError(
                "running as root needs an unprivileged user for Postgres: create user 'postgres'"
            )
        subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "agentrel"],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam("agentrel")

    def _choose_root(self) -> Path:
        preferred = self.home / "pg"
        user = self._service_user()
        if len(str(preferred / "sock")) <= MAX_SOCKET_DIR and (user is None or _reachable(self.home, user)):
            return preferred
        tag = hashlib.sha256(str(self.home).encode()).hexdigest()[:12]
        # /var/tmp rather than /tmp: on the machines measured, clones in /tmp were several times slower.
        return FALLBACK_PARENT / f"agentrel-pg-{tag}"

    # -- lifecycle -----------------------------------------------------------------------------------
    def conninfo(self, dbname: str) -> str:
        """The superuser's: the password file is named, the password is not (nothing to leak)."""
        return f"{self._address(dbname)} passfile={self.secret.path}"

    def _address(self, dbname: str) -> str:
        host = "127.0.0.1" if self.tcp else str(self.sockdir)
        return f"host={host} port={self.port} user={SUPERUSER} dbname={dbname}"

    def ensure_running(self) -> None:
        try:
            self.home.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SandboxError(
                f"cannot use AGENTREL_HOME {self.home}: {exc.strerror}; point it at a writable directory"
            ) from None
        if (self.datadir / "PG_VERSION").exists() and not self.secret.exists():
            with self._lock():
                # a running cluster that still lets anyone in is sealed over SQL below, without a stop
                trusting = self._accepting() and lets_anyone_in(self._address("postgres"))
                if not self.secret.exists() and not trusting:
                    self._reset_password()
        if not self._accepting():
            self._bin("initdb")  # fail on missing binaries before creating any directory
            with self._lock():
                if not self._accepting():
                    fresh = not (self.datadir / "PG_VERSION").exists()
                    notice(
                        f"{'creating' if fresh else 'starting'} the private Postgres cluster in {self.home}"
                        f"{' (first use, about 10 s)' if fresh else ''}; `agentrel sandbox down` stops it"
                    )
                    self._initdb_if_needed()
                    self._start()
        with self._lock():
            ensure_sealed(
                self._address("postgres"), self.secret, str(self.datadir), "run `agentrel sandbox destroy`"
            )
        self._ensure_run_space()

    def _reset_password(self) -> None:
        """The cluster is ours but its password file is gone (AGENTREL_HOME removed by hand while the
        cluster lived outside it, under /var/tmp): a new password is set in single-user mode, which only
        the data directory's owner can start, the statement on stdin (never argv or the environment)."""
        if (self.datadir / "postmaster.pid").exists():
            self._run([self._bin("pg_ctl"), "-D", str(self.datadir), "-m", "fast", "-w", "stop"], check=False)
        password = self.secret.ensure()
        statement = f"ALTER ROLE {SUPERUSER} PASSWORD '{password}'\n"
        done = self._run(
            [self._bin("postgres"), "--single", "-D", str(self.datadir), "postgres"], False, statement
        )
        if done.returncode != 0 or "ERROR" in done.stderr:
            self.secret.remove()
            raise SandboxError(
                f"cannot set a new superuser password on the cluster in {self.datadir}: "
                "run `agentrel sandbox destroy`"
            )
        print(
            f"agentrel: the sandbox cluster in {self.datadir} had lost its password file: "
            f"a new superuser password is in {self.secret.path}",
            file=sys.stderr,
        )

    def stop(self) -> None:
        if not (self.datadir / "PG_VERSION").exists():
            return
        with self._lock():
            if (self.datadir / "postmaster.pid").exists():
                self._run(
                    [self._bin("pg_ctl"), "-D", str(self.datadir), "-m", "fast", "-w", "stop"], check=False
                )

    def destroy(self) -> None:
        """Stop the cluster and delete its files (tests and `agentrel sandbox destroy`)."""
        self.stop()
        shutil.rmtree(self._root, ignore_errors=True)
        self.secret.remove()
        if self.run_space:
            shutil.rmtree(self.run_space, ignore_errors=True)

    @property
    def run_space(self) -> Path | None:
        """A RAM-backed directory for run databases, when the machine has one (/dev/shm).

        Run databases are dumped before they are dropped and never outlive their run, so they need no
        durable storage; on tmpfs a clone and a drop take milliseconds instead of the hundreds a busy
        disk can cost. Templates stay in the data directory."""
        if os.environ.get("AGENTREL_NO_RAM_RUNS") or not SHM.is_dir() or not os.access(SHM, os.W_OK):
            return None
        tag = hashlib.sha256(str(self.home).encode()).hexdigest()[:12]
        return SHM / f"agentrel-runs-{tag}"

    def _ensure_run_space(self) -> None:
        # tmpfs is emptied at reboot while the tablespace stays in the catalog: recreate the directory.
        space = self.run_space
        if space is None or space.is_dir():
            return
        space.mkdir(mode=0o700, exist_ok=True)
        user = self._service_user()
        if user:
            os.chown(space, user.pw_uid, user.pw_gid)

    def info(self) -> ServerInfo:
        running = self._accepting()
        return ServerInfo(
            backend=self.name,
            location=str(self.datadir),
            running=running,
            extra={"socket": str(self.sockdir), "home": str(self.home)},
        )

    def raise_max_connections(self, wanted: int) -> str | None:
        """Raise max_connections to `wanted` for an audit's concurrency (harness/executors/capacity.py).
        The setting is read only at start, so the cluster restarts: refused, with the reason, while
        another process has a session open on it that a restart would cut."""
        with self._lock(), psycopg.connect(self.conninfo("postgres"), autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
            ).fetchone()
            if row and row[0]:
                return (
                    f"{row[0]} other session(s) are open on the sandbox's Postgres, which a restart would cut"
                )
            conn.execute(f"ALTER SYSTEM SET max_connections = {int(wanted)}")
            conn.close()
            pg_ctl = [self._bin("pg_ctl"), "-D", str(self.datadir), "-l", str(self.logfile)]
            self._run([*pg_ctl, "-m", "fast", "-w", "-t", "60", "restart"])
        return None

    def _accepting(self) -> bool:
        """Does a server answer on our socket (whether it would let us log in is `ensure_sealed`'s)?"""
        if not (self.datadir / "postmaster.pid").exists():
            return False
        ping = psycopg.pq.PGconn.ping(f"{self._address('postgres')} connect_timeout=3".encode())
        return ping == psycopg.pq.Ping.OK

    def _bin(self, name: str) -> str:
        if self._bindir is None:
            self._bindir = find_bindir()
        return str(self._bindir / name)

    @contextmanager
    def _lock(self) -> Iterator[None]:
        try:
            self._root.mkdir(parents=True, exist_ok=True)
            fh = open(self._root / ".lock", "a")  # noqa: SIM115
        except OSError as exc:
            raise SandboxError(
                f"cannot use data directory {self._root}: {exc.strerror}; set AGENTREL_HOME "
                "to a writable directory"
            ) from None
        with fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            yield

    def _initdb_if_needed(self) -> None:
        if (self.datadir / "PG_VERSION").exists():
            return
        initdb = self._bin("initdb")
        if self.run_space is not None:
            # A new cluster: a run space left by a cluster at this home that was deleted without
            # destroy() holds its tablespace directory, which Postgres refuses to reuse.
            shutil.rmtree(self.run_space, ignore_errors=True)
        user = self._service_user()
        for d in (self.datadir, self.sockdir):
            if d.exists() and any(d.iterdir()) and d == self.datadir:
                raise SandboxError(
                    f"data directory {d} exists but is not a Postgres cluster: remove it or set "
                    "AGENTREL_HOME elsewhere"
                )
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
            if user:
                os.chown(d, user.pw_uid, user.pw_gid)
        if user:
            os.chown(self._root, user.pw_uid, user.pw_gid)
        # initdb reads the password from a file (never argv), in our root, gone once it has run.
        pwfile = self._root / f".pwfile-{os.getpid()}"
        write_pwfile(pwfile, self.secret.ensure(), (user.pw_uid, user.pw_gid) if user else None)
        try:
            self._run(
                [
                    initdb,
                    "-D",
                    str(self.datadir),
                    "-U",
                    SUPERUSER,
                    "--auth=scram-sha-256",
                    f"--pwfile={pwfile}",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-sync",
                ]
            )
        finally:
            pwfile.unlink(missing_ok=True)
        self.write_settings()

    def write_settings(self, max_connections: int | None = None) -> None:
        """Write the cluster's settings (sandbox/servers/settings.py) into postgresql.conf, replacing any
        AgentRel block already there; they take effect at the next start."""
        settings = server_settings(
            str(self.sockdir), self.port, "127.0.0.1" if self.tcp else "", max_connections
        )
        write_conf(self.datadir / "postgresql.conf", settings)

    def _start(self) -> None:
        # A stale pid file left by a killed postmaster is handled by pg_ctl itself.
        result = self._run(
            [
                self._bin("pg_ctl"),
                "-D",
                str(self.datadir),
                "-l",
                str(self.logfile),
                "-w",
                "-t",
                "60",
                "start",
            ],
            check=False,
        )
        if result.returncode != 0 or not self._accepting():
            tail = _tail(self.logfile)
            raise SandboxError(f"Postgres failed to start in {self.datadir}: {tail or result.stderr.strip()}")

    def _run(
        self, argv: list[str], check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        user = self._service_user()
        kwargs: dict = {}
        env = dict(os.environ, LC_ALL="C", LANG="C")
        if user:
            kwargs = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
            env["HOME"] = str(self._root)
        try:
            result = subprocess.run(
                argv, capture_output=True, text=True, env=env, cwd=self._root, input=stdin, **kwargs
            )
        except FileNotFoundError:
            raise SandboxError(f"{argv[0]} not found: {INSTALL_HINT}") from None
        if check and result.returncode != 0:
            msg = (result.stderr or result.stdout).strip().splitlines()
            raise SandboxError(
                f"{Path(argv[0]).name} failed in {self._root}: {msg[-1] if msg else 'no output'}"
            )
        return result


def write_conf(path: Path, settings: dict[str, str]) -> None:
    """postgresql.conf with its AgentRel block (from the marker to the end) replaced by `settings`."""
    text = path.read_text()
    head = text.split(CONF_MARKER, 1)[0].rstrip("\n")
    body = "".join(f"{k} = '{v}'\n" for k, v in settings.items())
    path.write_text(f"{head}\n\n{CONF_MARKER}\n{body}")


def _reachable(home: Path, user: pwd.struct_passwd) -> bool:
    """Can `user` traverse every directory down to `home` (creating `home` counts as our job)?"""
    probe = home
    while not probe.exists():
        probe = probe.parent
    for d in [probe, *probe.parents]:
        st = d.stat()
        if st.st_uid == user.pw_uid:
            mode_ok = st.st_mode & 0o100
        elif st.st_gid == user.pw_gid:
            mode_ok = st.st_mode & 0o010
        else:
            mode_ok = st.st_mode & 0o001
        if not mode_ok:
            return False
    return True


def _tail(path: Path, lines: int = 1) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])
