"""The `tryton-erp` environment: a real ERP (Tryton 8.2: accounting, invoicing, sales, complaints,
payments) whose own workflow and accounting rules decide what each call does, audited like any other.

The template is Tryton's own database, built once per fingerprint (the Tryton distributions' versions,
this package's code, the pinned date) by activating the modules and seeding a company through proteus
(build.py, seed.py). A run's tools reach a Tryton server of the run's own (server.py) over JSON-RPC as
the back-office clerk; the diff reads Tryton's tables (tables.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from agentrel.dsl.state import State, TableInfo
from agentrel.sandbox.environments.contract import Environment
from agentrel.sandbox.environments.tryton import settings
from agentrel.sandbox.environments.tryton.records import RECORD_LINKS

if TYPE_CHECKING:
    import psycopg

    from agentrel.sandbox.tools.base import Tool

HERE = Path(__file__).parent


class TrytonErp(Environment):
    name = "tryton-erp"
    title = "Tryton 8.2 ERP: invoicing, sales, complaints and payments, over Tryton's own JSON-RPC"
    verticals = ("finance", "sales")
    # Tryton's clock is pinned (clock.py); the instants the database stamps on every write are
    # volatile (tables.py).
    clock = datetime.combine(settings.PINNED_DATE, datetime.min.time(), tzinfo=UTC)
    # One act writes several tables (posting an invoice: the invoice, a move, its lines): the view shows
    # a run's diff per invoice, sale, complaint and party (records.py).
    record_links = RECORD_LINKS

    def versions(self) -> Mapping[str, str]:
        return {
            **{f"dist:{k}": v for k, v in settings.installed_versions().items()},
            "pinned_date": settings.PINNED_DATE.isoformat(),
            "modules": ",".join(settings.MODULES),
            "code": settings.code_digest(),
            "tools": hashlib.sha256(
                b"".join((HERE / f).read_bytes() for f in ("tools.py", "rpc.py", "server.py"))
            ).hexdigest(),
        }

    def build(self, conn: psycopg.Connection, seed: str, scale: int) -> State | None:
        from agentrel.sandbox.environments.tryton import build

        build.build(conn, seed, scale)
        return None

    def table_infos(self) -> Mapping[str, TableInfo]:
        from agentrel.sandbox.environments.tryton.tables import TABLES

        return TABLES

    def tools(self) -> Mapping[str, Tool]:
        from agentrel.sandbox.environments.tryton.tools import TOOLS

        return TOOLS

    def acting_user(self, before: State, name: str) -> int | None:
        """A task's acting_user is a Tryton login (the clerk): its res_user id in the template."""
        users = before.tables.get("res_user")
        if users is None:
            return None
        at_login, at_id = users.info.columns.index("login"), users.info.columns.index("id")
        for row in users.rows.values():
            found = row[at_id]
            if row[at_login] == name and isinstance(found, int):
                return found
        return None

    def suite_root(self) -> Path:
        return HERE / "suite"


ENVIRONMENT = TrytonErp()
