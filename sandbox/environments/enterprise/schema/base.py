"""Shared column helpers for the enterprise schema: money, timestamps and the volatile marker."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

# Columns the diff ignores: bookkeeping that changes on every write and says nothing about the act.
VOLATILE = {"volatile": True}


def money(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.Numeric(12, 2), nullable=nullable)


def ts(name: str, nullable: bool = True) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def id_col() -> sa.Column:
    return sa.Column("id", sa.Integer, primary_key=True, autoincrement=True)


def fk(name: str, target: str, nullable: bool = True) -> sa.Column:
    return sa.Column(name, sa.Integer, sa.ForeignKey(target), nullable=nullable)


def bookkeeping() -> list[sa.Column]:
    """`updated_at` and `sys_mod_count`: volatile on every mutable business table."""
    return [
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True, info=VOLATILE),
        sa.Column("sys_mod_count", sa.Integer, nullable=False, server_default="0", info=VOLATILE),
    ]
