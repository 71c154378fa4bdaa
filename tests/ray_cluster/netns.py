"""Hosts on one machine: network namespaces joined by veth pairs to a bridge in a namespace of its own.

Each host is a namespace with one interface (`eth0`) on a private /24 that exists only inside the
namespaces made here: nothing is added to the machine's own namespace (no interface, address or route),
and deleting the namespaces removes every link. A host's default route points at its own interface, so
a program that asks the kernel which source address it would use (Ray does, by connecting a UDP socket
to a public address; no packet is sent) gets the host's private address; the bridge has no uplink, so
nothing leaves the namespaces. Killing a host kills every process in its namespace: what losing a machine
looks like to the others.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any


def ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


@dataclass
class Host:
    name: str  # its namespace
    address: str

    def popen(self, argv: Sequence[str], env: dict[str, str] | None = None, **kw: Any) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", self.name, *argv], env=env, **kw)

    def run(
        self, argv: Sequence[str], env: dict[str, str] | None = None, **kw: Any
    ) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", self.name, *argv], env=env, **kw)

    def pids(self) -> list[int]:
        out = subprocess.run(["ip", "netns", "pids", self.name], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def kill(self) -> int:
        """SIGKILL every process in the namespace, until none is left; how many were killed."""
        killed: set[int] = set()
        for _ in range(50):
            pids = [p for p in self.pids() if p != os.getpid()]
            if not pids:
                return len(killed)
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        raise RuntimeError(f"processes survive in namespace {self.name}: {self.pids()}")


@dataclass
class Network:
    tag: str
    switch: str
    hosts: list[Host] = field(default_factory=list)


@contextmanager
def network(names: Sequence[str]) -> Iterator[Network]:
    """One namespace per name, joined on 10.<a>.<b>.0/24 (a random subnet, private to these namespaces),
    all torn down on the way out, however the block ends."""
    tag = secrets.token_hex(3)
    a, b = 100 + secrets.randbelow(150), secrets.randbelow(250)
    net = Network(tag, f"agentrel-{tag}-switch")
    made: list[str] = []
    try:
        ip("netns", "add", net.switch)
        made.append(net.switch)
        ip("-n", net.switch, "link", "add", "br0", "type", "bridge")
        ip("-n", net.switch, "link", "set", "br0", "up")
        for i, name in enumerate(names, start=1):
            host = Host(f"agentrel-{tag}-{name}", f"10.{a}.{b}.{i}")
            ip("netns", "add", host.name)
            made.append(host.name)
            port = f"p{i}"
            ip(
                "-n",
                host.name,
                "link",
                "add",
                "eth0",
                "type",
                "veth",
                "peer",
                "name",
                port,
                "netns",
                net.switch,
            )
            ip("-n", net.switch, "link", "set", port, "master", "br0", "up")
            ip("-n", host.name, "addr", "add", f"{host.address}/24", "dev", "eth0")
            ip("-n", host.name, "link", "set", "lo", "up")
            ip("-n", host.name, "link", "set", "eth0", "up")
            ip("-n", host.name, "route", "add", "default", "dev", "eth0")
            net.hosts.append(host)
        yield net
    finally:
        for host in net.hosts:
            with suppress(RuntimeError):
                host.kill()
        for name in reversed(made):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def leftovers(tag: str) -> list[str]:
    """Namespaces of this network still present (none once `network` has returned)."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(f"agentrel-{tag}-")]
