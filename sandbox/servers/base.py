"""The one contract every Postgres backend implements, and the errors they raise."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import psycopg


class SandboxError(Exception):
    """A sandbox problem the user can act on; the message is one line naming what to do."""


class FixtureError(SandboxError):
    """A task's fixture SQL failed on the seed template: the task file is at fault, not the server."""


@dataclass(frozen=True)
class ServerInfo:
    backend: str
    location: str
    running: bool
    version: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


class Server(Protocol):
    """A Postgres server AgentRel may create and drop databases on."""

    name: str

    def ensure_running(self) -> None:
        """Start the server if needed (idempotent); raise SandboxError with one clear line on failure."""
        ...

    def conninfo(self, dbname: str) -> str:
        """A libpq connection string for `dbname` on this server."""
        ...

    def info(self) -> ServerInfo: ...

    def stop(self) -> None: ...


def server_version(server: Server) -> str:
    with psycopg.connect(server.conninfo("postgres"), autocommit=True) as conn:
        row = conn.execute("SELECT version()").fetchone()
    assert row is not None
    return str(row[0])
