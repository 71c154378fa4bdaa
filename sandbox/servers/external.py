"""ExternalServer: any Postgres >= 14 the user already runs, reached through a DSN."""

from __future__ import annotations

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from agentrel.sandbox.servers.base import SandboxError, ServerInfo

MIN_VERSION = 140000


class ExternalServer:
    name = "external"

    def __init__(self, dsn: str) -> None:
        try:
            self._params = conninfo_to_dict(dsn)
        except psycopg.ProgrammingError as exc:
            raise SandboxError(f"--dsn / AGENTREL_DSN is not a valid connection string: {exc}") from None
        self._maintenance_db = str(self._params.get("dbname") or "postgres")

    def conninfo(self, dbname: str) -> str:
        return make_conninfo("", **{**self._params, "dbname": dbname})

    def _redacted(self) -> str:
        shown = {k: v for k, v in self._params.items() if k != "password"}
        return make_conninfo("", **shown)

    def ensure_running(self) -> None:
        try:
            with psycopg.connect(self.conninfo(self._maintenance_db), connect_timeout=5) as conn:
                version = conn.info.server_version
        except psycopg.OperationalError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else "no answer"
            raise SandboxError(f"cannot reach Postgres at {self._redacted()}: {first}") from None
        if version < MIN_VERSION:
            raise SandboxError(
                f"Postgres at {self._redacted()} is version {version // 10000}; AgentRel needs 14 or newer"
            )

    def info(self) -> ServerInfo:
        try:
            self.ensure_running()
            running = True
        except SandboxError:
            running = False
        return ServerInfo(backend=self.name, location=self._redacted(), running=running)

    def stop(self) -> None:
        """Not ours to stop."""
