"""The tables in the diff: every table of the Tryton template (catalog.py) but its noise, each keyed by
its integer `id`, with Tryton's bookkeeping columns volatile.

Noise, outside the diff: sessions (wizards' too), caches, the task queue, login attempts (each written
by merely using the server, saying nothing about the act). Volatile, in the diff but ignored by it: the
timestamps and writer Tryton stamps on every write, password hashes (salted afresh by every build), and
the invoice report cache's bookkeeping (bytea columns are never listed: schema_listing.py).
"""

from __future__ import annotations

from agentrel.dsl.state import TableInfo
from agentrel.sandbox.environments.contract import table_info
from agentrel.sandbox.environments.tryton.catalog import CATALOG

# ir_session_wizard: a wizard's session (Tryton's client ends its own, proteus leaves it), never the act.
NOISE_TABLES = frozenset(
    {"ir_session", "ir_session_wizard", "ir_cache", "ir_queue", "res_user_login_attempt"}
)
VOLATILE_EVERYWHERE = ("create_date", "write_date", "write_uid")
VOLATILE_IN = {
    "res_user": ("password_hash", "password_reset", "password_reset_expire"),
    "account_invoice": ("invoice_report_format",),
}


def _info(name: str) -> TableInfo:
    columns = CATALOG[name]
    volatile = tuple(c for c in (*VOLATILE_EVERYWHERE, *VOLATILE_IN.get(name, ())) if c in columns)
    return table_info(name, columns, ("id",), volatile)


TABLES: dict[str, TableInfo] = {name: _info(name) for name in sorted(CATALOG) if name not in NOISE_TABLES}
