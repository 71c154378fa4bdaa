"""The environment contract: what a Postgres-backed system must say for AgentRel to audit agents on it.

An environment owns its *content*: the schema and seed it builds into an empty database, the tables the
diff reads (with their primary keys, column kinds and volatile columns), the tools an agent calls, how a
task's acting user is found, and its suite (tasks, damage specs, token prices). AgentRel keeps the
*machinery*: templates and clones, per-run roles, write tracking, dumps, the labeler, the run session and
its pipeline (conditions, faults), the MCP face, analysis and publication. Nothing in the machinery
names a table or a tool of any environment.

The name and fingerprint enter every audit's manifest, so the runs of two environments (or of one
environment whose build changed) never share a protocol hash and are never pooled.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agentrel.dsl.state import State, TableInfo

if TYPE_CHECKING:  # names only: the contract loads without the tool runtime (psycopg, dumps)
    import psycopg

    from agentrel.sandbox.tools.base import Tool

DEFAULT_PRICES = Path(__file__).resolve().parents[2] / "harness" / "prices.yaml"
KINDS = ("int", "numeric", "bool", "text", "date", "timestamp", "json")


@dataclass(frozen=True)
class RecordLink:
    """A row of `table` is part of the business record of a row of `parent` (an invoice line of its
    invoice, a move of the invoice it posts). `via="child"`: `table`'s column `column` holds the
    parent's id; `via="parent"`: the parent's column `column` holds this row's id. Both tables are keyed
    by one column. Only the view reads these (a run's diff shown per business record); judging never."""

    table: str
    parent: str
    column: str
    via: Literal["child", "parent"] = "child"


class Environment(ABC):
    """One auditable system. Subclass it, or ship an instance through the `agentrel.environments`
    entry-point group (see sandbox/environments/README.md)."""

    #: Unique, lower-case with dashes: what `--env NAME` selects.
    name: str
    #: One line for `agentrel env list`.
    title: str = ""
    #: The folders of its tasks/ (a task's `vertical` must be one of them).
    verticals: tuple[str, ...] = ()
    #: The instant every tool treats as "now", or None when tools read the server clock (then every
    #: column the clock writes must be volatile; `agentrel env check` verifies either way).
    clock: datetime | None = None
    #: True when every task is offered the environment's whole toolset (as τ² does), so an agent can pick
    #: the wrong tool: a task file then omits `tools`, or narrows it and says why (`tools_narrowed`).
    whole_toolset: bool = False
    #: How the tables roll up into business records, for the view's diff (an ERP's one act writes several
    #: tables): each link's table joins its parent's record, recursively. Empty: every row stands alone.
    record_links: tuple[RecordLink, ...] = ()
    #: True when every tool writes only through the connection its call is handed, inside that call's one
    #: transaction (no connection, server or file of its own): AgentRel can then withhold a call's writes
    #: (the lying-success condition) and keep an idempotency key atomic with them. Leave it False when a
    #: tool writes elsewhere (an application server's own connection, as Tryton's tools do).
    transactional_tools: bool = False

    # -- identity ------------------------------------------------------------------------------------
    @abstractmethod
    def versions(self) -> Mapping[str, str]:
        """Versions and content hashes of everything the build reads (schema, seed generator or data
        files, tool code): `fingerprint()` hashes them, and a change rebuilds every template."""

    def fingerprint(self) -> str:
        body = json.dumps({"name": self.name, "versions": dict(self.versions())}, sort_keys=True)
        return hashlib.sha256(body.encode()).hexdigest()

    # -- the build ------------------------------------------------------------------------------------
    @abstractmethod
    def build(self, conn: psycopg.Connection, seed: str, scale: int) -> State | None:
        """Create the schema and load the seed into the empty database `conn` is connected to.

        Deterministic: the same (seed, scale) gives the same rows on any machine. Return the State the
        build meant to load when it knows it (AgentRel then checks the database's dump equals it), else
        None. Triggers, roles and grants are AgentRel's: do not create them here."""

    # -- the tables the diff reads ------------------------------------------------------------------
    @abstractmethod
    def table_infos(self) -> Mapping[str, TableInfo]:
        """The tables in the diff, parents before children: columns, primary key (every table needs
        one), column kinds (see KINDS) and volatile columns (bookkeeping the diff ignores). Tables the
        schema has but this omits (sessions, logs, caches) are outside the diff: never dumped or judged."""

    # -- the agent's side -----------------------------------------------------------------------------
    @abstractmethod
    def tools(self) -> Mapping[str, Tool]:
        """Every tool a task may offer, by name (the tool contract of sandbox/tools/base.py): each call
        gets its run database's connection, in one transaction, and nothing else."""

    @abstractmethod
    def acting_user(self, before: State, name: str) -> int | None:
        """The id a task's `acting_user` resolves to in the task's pre-run state, None if there is none."""

    # -- the suite ---------------------------------------------------------------------------------------
    @abstractmethod
    def suite_root(self) -> Path:
        """The folder holding tasks/<vertical>/*.yaml and the damage specs they name."""

    def prices_path(self) -> Path:
        """The token price table of this environment's audits (USD per million tokens)."""
        return DEFAULT_PRICES

    def describe(self) -> str:
        return self.title or self.name


def table_info(
    name: str, columns: Mapping[str, str], primary_key: tuple[str, ...], volatile: tuple[str, ...] = ()
) -> TableInfo:
    """A TableInfo from column name -> kind (one of KINDS), checked here so a typo fails at import."""
    bad = {c: k for c, k in columns.items() if k not in KINDS}
    if bad:
        raise ValueError(f"table {name}: unknown column kind(s) {bad}; kinds are {', '.join(KINDS)}")
    missing = [c for c in (*primary_key, *volatile) if c not in columns]
    if missing:
        raise ValueError(f"table {name}: key or volatile column(s) {missing} are not columns")
    return TableInfo(
        name=name,
        columns=tuple(columns),
        primary_key=primary_key,
        volatile=frozenset(volatile),
        kinds=tuple(columns.values()),
    )


def record_link_problems(links: tuple[RecordLink, ...], infos: Mapping[str, TableInfo]) -> list[str]:
    """What is wrong with an environment's record links against its tables: one sentence each."""
    out = []
    for link in links:
        where = f"record link {link.table} -> {link.parent}"
        holder = link.table if link.via == "child" else link.parent
        for name in (link.table, link.parent):
            info = infos.get(name)
            if info is None:
                out.append(f"{where}: {name} is not a table in the diff")
            elif len(info.primary_key) != 1:
                out.append(f"{where}: {name} is not keyed by one column")
        if holder in infos and link.column not in infos[holder].columns:
            out.append(f"{where}: {holder} has no column {link.column}")
    return out
