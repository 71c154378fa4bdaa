"""The generator's clock, its value formatting and its bookkeeping: rows per table, ids, random picks."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from typing import Any

from agentrel.sandbox.defaults import DEFAULT_SEED  # noqa: F401  (one default for `--seed`)
from agentrel.sandbox.environments.enterprise.schema import table_infos

GENERATOR_VERSION = "2"
SERVICE_ACCOUNT = "svc.agentrel"  # user id 1, the identity every agent acts as
NOW = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)  # the sandbox's "today": fixed, so the data never ages


def ts(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def day(day: date) -> str:
    return day.isoformat()


def money(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


class Generator:
    def __init__(self, seed: str, scale: int) -> None:
        self.r = random.Random(f"{seed}|{scale}|{GENERATOR_VERSION}")
        self.scale = scale
        self.rows: dict[str, list[dict[str, Any]]] = {name: [] for name in table_infos()}

    # helpers -----------------------------------------------------------------------------------------
    def n(self, base: int) -> int:
        return base * self.scale

    def past(self, max_days: int, min_days: int = 0) -> datetime:
        minutes = self.r.randrange(min_days * 1440, max_days * 1440 + 1)
        return NOW - timedelta(minutes=minutes)

    def add(self, table: str, **row: Any) -> int:
        rows = self.rows[table]
        if "id" in table_infos()[table].columns:
            row.setdefault("id", len(rows) + 1)
        rows.append(row)
        return int(row.get("id", len(rows)))

    def pick(self, table: str, **where: Any) -> dict[str, Any]:
        rows = (
            [r for r in self.rows[table] if all(r[k] == v for k, v in where.items())]
            if where
            else self.rows[table]
        )
        return self.r.choice(rows)

    def ids(self, table: str) -> list[int]:
        return [r["id"] for r in self.rows[table]]

    def group_id(self, name: str) -> int:
        return next(g["id"] for g in self.rows["groups"] if g["name"] == name)
