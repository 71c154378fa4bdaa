"""The sealed launcher: an agent program runs in a bubblewrap (`bwrap`) sandbox that holds nothing of the
instrument.

What the agent sees (all else does not exist for it):
- the system directories read-only (`/usr`, `/bin`, `/lib*`, the parts of `/etc` programs need to run:
  users and groups, name resolution, certificates, the dynamic linker's cache; never `/etc/shadow` and its
  kind), its code (the code directory and declared files, `subject_code.SubjectCode`) and the Python
  environment it runs with, read-only, at their own paths;
- its run's files (`/run/agentrel`: the prompts, where to write usage and its final message) and a private
  scratch `/tmp` (a size-bounded tmpfs; `HOME` and `TMPDIR`);
- `/proc` of its own PID namespace: only its own processes. When its first process ends, the namespace
  ends and every process in it is killed, whatever it called (`setsid`, a double fork); the harness waits
  for that before the run's state is read;
- its own network namespace with only a loopback: the endpoints the run offers (`Endpoints`: the MCP
  endpoint, and whatever else the harness adds, e.g. a model proxy) are reached at their usual
  `http://127.0.0.1:<port>` addresses through a forwarder inside (`seal_forward.py`) that relays each
  port to a unix socket this module serves from outside, relayed on to the real endpoint. With
  `network="host"` the namespace is not made (the agent reaches whatever the machine does).

Its uid: when the harness is not root, a user namespace maps the agent to the auditor's own uid (the
files it could read are those above). When the harness is root (CI), no user namespace is made and the
forwarder drops to `SANDBOX_UID:SANDBOX_GID` (nobody) before starting the agent, so even a visible
root-owned 0600 file is unreadable to it.

Never visible: `AGENTREL_HOME` (the cluster's socket, the registry, the signing key), the results
directory, the suite, other runs' files, the auditor's home: none is mounted, and any of them inside a
mounted tree is covered (`masks`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from agentrel.harness.agents.process import ProcessEnd, run_process

SANDBOX_UID = SANDBOX_GID = 65534  # nobody / nogroup: what the agent runs as when the harness is root
RUN_DIR = Path("/run/agentrel")  # the run's files, inside
NET_DIR = Path("/run/agentrel-net")  # the unix sockets of the run's endpoints, inside
FORWARDER = Path(__file__).resolve().with_name("seal_forward.py")
SCRATCH_BYTES = 512 * 1024 * 1024  # the private /tmp's bound (memory-backed)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What programs read in /etc to run; nothing that holds a secret (shadow, gshadow, ssh keys, sudoers).
ETC = (
    "passwd",
    "group",
    "hosts",
    "host.conf",
    "nsswitch.conf",
    "gai.conf",
    "protocols",
    "services",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ca-certificates",
    "ca-certificates.conf",
    "pki",
    "crypto-policies",
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "mime.types",
    "os-release",
    "debian_version",
    "lsb-release",
    "xdg",
)
ETC_GLOBS = ("python3*",)
ETC_HOST_NETWORK = ("resolv.conf",)  # name servers: only of use where the agent may leave the machine
TEARDOWN_S = 5.0  # how long the sandbox's processes may take to die once its first one has ended
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) where user namespaces are allowed"
)


class SealUnavailable(Exception):
    """No sandbox can be made on this machine; the message names why and the fix."""


def is_root() -> bool:
    return os.geteuid() == 0


def namespace_flags(network: str) -> list[str]:
    flags = ["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if network != "host":
        flags.append("--unshare-net")
    if is_root():
        # No user namespace (it would map the agent to outer root); the forwarder drops uid and gid.
        flags += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        flags += ["--unshare-user", "--disable-userns"]
    return flags


@functools.cache
def unavailable() -> str | None:
    """Why no sandbox can be made here (None when one can): bwrap missing, or namespaces refused."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap (bubblewrap) is not installed"
    argv = [bwrap, *namespace_flags("loopback"), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    try:
        done = subprocess.run([*argv, "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap cannot be run ({exc})"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        return f"bwrap cannot make a sandbox here ({last})"
    return None


def require() -> None:
    why = unavailable()
    if why is not None:
        raise SealUnavailable(
            f"agent programs run sealed, and no sandbox can be made: {why}; {INSTALL_HINT}, or pass"
            " --agent-isolation none (the audit is then evidence only, never published)"
        )


class Endpoints(dict[str, str]):
    """Environment variable -> the host URL it names (http on a loopback address). Every entry is
    reachable inside the sandbox at the same URL, through the forwarder; nothing else is.

    The one place a run adds an endpoint (ExternalAgent.endpoints):
        endpoints["AGENTREL_MCP_URL"] = face.url
        endpoints["AGENTREL_MODEL_BASE_URL"] = proxy.url
    """

    def ports(self) -> list[tuple[str, int]]:
        seen: dict[tuple[str, int], None] = {}
        for name, url in self.items():
            parts = urlsplit(url)
            if parts.scheme != "http" or parts.hostname != "127.0.0.1" or not parts.port:
                raise ValueError(f"{name}={url}: a sealed agent reaches only http://127.0.0.1:<port>")
            seen[("127.0.0.1", parts.port)] = None
        return list(seen)


@dataclass
class SealPlan:
    """Everything one sandbox is made of; `argv` turns it into bwrap's command line."""

    command: list[str]
    io_dir: Path  # the run's files on the host, /run/agentrel inside
    net_dir: Path  # the endpoints' unix sockets on the host, /run/agentrel-net inside
    cwd: Path
    network: str = "loopback"
    read_only: list[Path] = field(default_factory=list)  # code, Python environment: at their own paths
    masks: list[Path] = field(default_factory=list)  # covered wherever they fall inside a mounted tree
    ports: list[int] = field(default_factory=list)

    def argv(self, bwrap: str, info_fd: int) -> list[str]:
        out = [bwrap, *namespace_flags(self.network), "--info-fd", str(info_fd)]
        for d in SYSTEM_DIRS:
            p = Path(d)
            if p.is_symlink():
                out += ["--symlink", os.readlink(p), d]
            elif p.is_dir():
                out += ["--ro-bind", d, d]
        etc = [Path("/etc") / n for n in ETC]
        etc += [p for g in ETC_GLOBS for p in sorted(Path("/etc").glob(g))]
        if self.network == "host":
            etc += [Path("/etc") / n for n in ETC_HOST_NETWORK]
        made: set[Path] = set()
        for p in etc:
            if p.exists():
                out += [*_parents(p, [], made), "--ro-bind", str(p), str(p)]
        out += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(SCRATCH_BYTES)]
        out += ["--tmpfs", "/tmp"]
        visible = [Path(d) for d in SYSTEM_DIRS] + [p for p in etc if p.exists()]  # read-only already
        wanted = [*self.read_only, *harness_python_dirs(), FORWARDER]
        mounts = _outermost(p for p in wanted if p.exists() and not any(_under(p, v) for v in visible))
        for path in sorted(mounts, key=lambda p: len(p.parts)):
            out += _parents(path, visible, made)
            out += ["--ro-bind", str(path), str(path)]
            visible.append(path)
        for path in sorted(set(self.masks)):
            if path.exists() and any(_under(path, m) for m in mounts):
                out += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
        out += _parents(RUN_DIR, visible, made)
        out += ["--bind", str(self.io_dir), str(RUN_DIR), "--ro-bind", str(self.net_dir), str(NET_DIR)]
        if not any(_under(self.cwd, m) for m in visible):
            out += [*_parents(self.cwd, visible, made), "--perms", "0755", "--dir", str(self.cwd)]
        out += ["--chdir", str(self.cwd), "--", forwarder_python(), "-I", "-S", str(FORWARDER)]
        if is_root():
            out += ["--drop", f"{SANDBOX_UID}:{SANDBOX_GID}"]
        for i, port in enumerate(self.ports):
            out += ["--listen", f"{port}={NET_DIR / f'{i}.sock'}"]
        return [*out, "--", *self.command]


def forwarder_python() -> str:
    """The harness's own base interpreter (its standard library is under `sys.base_prefix`, mounted)."""
    return os.path.realpath(sys.executable)


def harness_python_dirs() -> list[Path]:
    return [Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parent]


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _outermost(paths: Iterable[Path]) -> list[Path]:
    ps = sorted(set(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for p in ps:
        if not any(_under(p, k) for k in kept):
            kept.append(p)
    return kept


def _parents(path: Path, visible: list[Path], made: set[Path]) -> list[str]:
    """`--dir` for each missing ancestor, world-traversable: bwrap would copy the host's modes (a 0700
    /root would hide a Python under /root/.pyenv from the unprivileged agent)."""
    out: list[str] = []
    for parent in reversed(path.parents):
        if parent in (Path("/"), Path("/tmp")) or parent in made or any(_under(parent, v) for v in visible):
            continue
        made.add(parent)
        out += ["--perms", "0755", "--dir", str(parent)]
    return out


class RunDirs:
    """The host side of one sandbox: the run's files and the endpoints' sockets, in a private folder."""

    def __init__(self, root: Path) -> None:
        self.io = root / "run"
        self.net = root / "net"
        self.io.mkdir(mode=0o700)
        self.net.mkdir(mode=0o700)
        if is_root():  # the agent (nobody) writes its usage and final message here
            os.chown(self.io, SANDBOX_UID, SANDBOX_GID)
            os.chown(self.net, SANDBOX_UID, SANDBOX_GID)

    def inside(self, host_file: Path) -> Path:
        return RUN_DIR / host_file.relative_to(self.io)


@contextlib.asynccontextmanager
async def relays(net_dir: Path, ports: Sequence[int]) -> AsyncIterator[None]:
    """Serve `<i>.sock` in `net_dir` for each port, relaying every connection to 127.0.0.1:<port>."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(OSError, RuntimeError):
                if writer.can_write_eof():
                    writer.write_eof()

    def handler(port: int) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                writer.close()
                return
            try:
                await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
            finally:
                for w in (writer, up_writer):
                    w.close()

        return serve

    servers = []
    try:
        for i, port in enumerate(ports):
            path = net_dir / f"{i}.sock"
            servers.append(await asyncio.start_unix_server(handler(port), path=str(path)))
            os.chmod(path, 0o666)  # the agent's uid connects; the folder is this run's only
        yield
    finally:
        for server in servers:
            server.close()


async def run_sealed(
    plan: SealPlan,
    env: Mapping[str, str],
    timeout_s: float,
    *,
    stop_when: Callable[[], bool] | None = None,
) -> ProcessEnd:
    """Run the plan's sandbox to its end or budget; return only once every process in it has ended."""
    bwrap = shutil.which("bwrap") or "bwrap"
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    try:
        async with relays(plan.net_dir, plan.ports):
            end = await run_process(
                plan.argv(bwrap, write_fd), env, timeout_s, stop_when=stop_when, pass_fds=(write_fd,)
            )
        os.close(write_fd)
        write_fd = -1
        await _namespace_gone(_child_pid(read_fd))
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)
    return end


def _child_pid(fd: int) -> int | None:
    try:
        raw = os.read(fd, 65536)
    except OSError:
        return None
    try:
        pid = json.loads(raw.decode())["child-pid"]
    except (ValueError, KeyError, TypeError):
        return None
    return int(pid)


async def _namespace_gone(pid: int | None) -> None:
    """The sandbox's init (host pid) exits only after the kernel has killed everything in its PID
    namespace: once it is gone or a zombie, nothing the agent started is left."""
    if pid is None:
        return
    deadline = time.monotonic() + TEARDOWN_S
    stat = Path(f"/proc/{pid}/stat")
    while time.monotonic() < deadline:
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state in ("Z", "X"):
            return
        await asyncio.sleep(0.005)
