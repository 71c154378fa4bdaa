"""Whether a Postgres server can hold the connections an executor's slots open, sized when AgentRel owns it.

A run in flight holds one connection for its tool calls from its first call to its dump, and each worker
thread (one per slot, `size_thread_pool`) may hold one more while it clones, dumps or drops; a server
whose `max_connections` is below that refuses the overflow with "too many clients", and those runs end
`harness_invalid`. A private local cluster is raised to fit (`LocalCluster.raise_max_connections`, a
restart while no other session is open on it); any other server is the user's to configure, and the
audit says so in one line rather than failing runs one by one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

PER_SLOT = 2  # its tool box's connection, and its worker thread's clone/dump/drop connection
RESERVE = 10  # the driver's own (templates, status), a sampler, the server's superuser slots


def connections_needed(slots: int) -> int:
    return PER_SLOT * slots + RESERVE


def max_connections(server: Any) -> int:
    with psycopg.connect(server.conninfo("postgres"), autocommit=True) as conn:
        row = conn.execute("SHOW max_connections").fetchone()
    return int(row[0]) if row else 0


def size_server(server: Any, slots: int, say: Callable[[str], None]) -> int:
    """Make room for `slots` runs in flight on `server`, or say in one line why not; returns the server's
    max_connections afterwards."""
    needed, have = connections_needed(slots), max_connections(server)
    if have >= needed:
        return have
    raise_to = getattr(server, "raise_max_connections", None)
    why = (
        raise_to(needed) if raise_to is not None else f"the {server.name} server is not AgentRel's to restart"
    )
    if why is None:
        say(f"raised the sandbox's Postgres max_connections from {have} to {needed} for {slots} runs at once")
        return needed
    say(
        f"warning: Postgres allows {have} connections and {slots} runs in flight need about {needed} "
        f"(two per run); {why}: raise max_connections on the server or lower --concurrency"
    )
    return have
