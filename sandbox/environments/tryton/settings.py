"""What the Tryton environment is pinned to: its modules, its business date, how a Tryton process finds
Postgres. Pure: no trytond import here (the environment loads without the extra installed)."""

from __future__ import annotations

import datetime as dt
import hashlib
from importlib import metadata
from pathlib import Path
from urllib.parse import quote

from psycopg.conninfo import conninfo_to_dict

HERE = Path(__file__).parent

#: The modules activated (with their dependencies) into the template.
MODULES = ("account_invoice", "sale", "sale_complaint", "account_payment")
#: The distributions whose versions are the template's: the pins of the `tryton` extra and what they pull.
DISTRIBUTIONS = (
    "trytond", "trytond-sale", "trytond-account-invoice", "trytond-sale-complaint",
    "trytond-account-payment", "trytond-account", "trytond-company", "trytond-party", "trytond-product",
    "trytond-currency", "trytond-country", "trytond-stock", "trytond-account-product",
    "trytond-account-invoice-stock", "proteus",
)  # fmt: skip
#: Tryton's "today" in every process the environment starts (clock.py).
PINNED_DATE = dt.date(2026, 3, 2)
ADMIN_EMAIL = "admin@example.invalid"
#: The environment variable a server's watcher reads its database's conninfo from (never argv).
WATCH_ENV = "AGENTREL_TRYTON_WATCH"
EXTRA = "pip install -e '.[tryton]' in the AgentRel checkout"


def installed_versions() -> dict[str, str]:
    """distribution -> installed version (or 'missing'), for the fingerprint."""
    out = {}
    for name in DISTRIBUTIONS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "missing"
    return out


def code_digest() -> str:
    """SHA-256 of the environment's own files the template and the tools depend on."""
    h = hashlib.sha256()
    for name in (
        "settings.py",
        "launch.py",
        "clock.py",
        "seed.py",
        "fixtures.py",
        "build.py",
        "tables.py",
        "catalog.py",
    ):
        h.update(name.encode() + b"\0" + (HERE / name).read_bytes())
    return h.hexdigest()


def database_uri(conninfo: str) -> str:
    """Tryton's [database] uri for a libpq conninfo (unix socket or TCP; the database name is Tryton's)."""
    params = conninfo_to_dict(conninfo)
    user = quote(str(params.get("user", "")), safe="")
    password = params.get("password")
    auth = f"{user}:{quote(str(password), safe='')}@" if password else f"{user}@"
    query = []
    host = str(params.get("host", ""))
    if host.startswith("/"):
        query.append(f"host={quote(host, safe='')}")
        netloc = auth
    else:
        netloc = f"{auth}{host}"
    if params.get("port"):
        query.append(f"port={params['port']}")
    return f"postgresql://{netloc}/" + (f"?{'&'.join(query)}" if query else "")


def write_config(path: Path, conninfo: str) -> Path:
    """A trytond.conf for a process that reaches Postgres as `conninfo`'s role, private to its owner."""
    body = (
        "[database]\n"
        f"uri = {database_uri(conninfo)}\n"
        "[web]\nlisten = 127.0.0.1:0\n"
        "[session]\nmax_age = 86400\ntimeout = 86400\n"
        "[cache]\nclean_timeout = 0\n"
    )
    path.touch(mode=0o600)
    path.write_text(body)
    return path
