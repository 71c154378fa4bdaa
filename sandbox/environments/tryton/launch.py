"""The one entry point of every Tryton process the environment starts: `python -m ...tryton.launch`.

    launch activate CONFIG DB       activate the modules into an empty database (trytond-admin's work)
    launch seed CONFIG DB SEED      seed the company through proteus, in process (seed.py)
    launch serve CONFIG DB          serve DB over JSON-RPC on the config's loopback address

Every one pins Tryton's clock first (clock.py): `trytond.ir.date.Date.today` and every direct clock read
that reaches a stored value answer the environment's date (settings.PINNED_DATE), whatever day the
process runs on, so invoice, accounting, payment and sale dates are a function of the template and
the calls. A server prints `listening <port>` on stdout
once it accepts requests, and exits by itself when its database goes away (dropped with its run) or its
parent process dies: no Tryton process outlives the run that started it.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import threading
import time


def pin_clock(day: dt.date) -> None:
    """Tryton's business date and every direct clock read that reaches a stored value (clock.py)."""
    from agentrel.sandbox.environments.tryton import clock

    clock.pin(day)


def _configure(config_path: str) -> None:
    # Tryton checks e-mail addresses with email_validator whenever it is importable, and then asks DNS
    # whether each domain takes mail (refusing the admin's reserved `.invalid` address outright): the
    # seed, a replay and an agent's writes would depend on what else shares the interpreter and on the
    # auditor's network. Every Tryton process takes the library-free path the template was built on.
    sys.modules["email_validator"] = None  # type: ignore[assignment]
    import trytond.config as config

    config.update_etc(config_path)


def _watch(conninfo: str, parent: int) -> None:
    """Exit the process once its database is gone (the run was dropped) or its parent died."""
    import psycopg

    try:
        conn = psycopg.connect(conninfo, autocommit=True, application_name="agentrel-tryton-watch")
    except psycopg.Error:
        os._exit(0)
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(0)
        try:
            conn.execute("SELECT 1")
        except psycopg.Error:
            os._exit(0)


def activate(config_path: str, db: str, modules: list[str]) -> None:
    from agentrel.sandbox.environments.tryton import settings

    _configure(config_path)  # first: importing trytond picks its database backend from the config
    pin_clock(settings.PINNED_DATE)
    from trytond import admin
    from trytond.commandline import get_parser_admin

    options = get_parser_admin().parse_args(
        ["-d", db, "--all", "-u", *modules, "--activate-dependencies", "--email", settings.ADMIN_EMAIL]
    )
    options.indexes = True
    admin.run(options)


def seed(config_path: str, db: str, seed_text: str, scale: int) -> None:
    from agentrel.sandbox.environments.tryton import seed as seeding
    from agentrel.sandbox.environments.tryton import settings

    _configure(config_path)  # first: importing trytond picks its database backend from the config
    pin_clock(settings.PINNED_DATE)
    seeding.run(config_path, db, seed_text, scale)


def fixtures(config_path: str, db: str) -> None:
    """The tasks' records alone, on an already seeded database (while writing a task)."""
    from agentrel.sandbox.environments.tryton import fixtures as made
    from agentrel.sandbox.environments.tryton import settings

    _configure(config_path)
    pin_clock(settings.PINNED_DATE)
    from proteus import config as pconfig

    cfg = pconfig.set_trytond(database=db, user="admin", config_file=config_path)
    cfg.skip_warning = True
    made.make()


def serve(config_path: str, db: str) -> None:
    from agentrel.sandbox.environments.tryton import settings

    _configure(config_path)  # first: importing trytond picks its database backend from the config
    pin_clock(settings.PINNED_DATE)
    from trytond.pool import Pool
    from trytond.wsgi import app
    from werkzeug.serving import make_server

    Pool.start()
    Pool(db).init()  # preloaded: a fresh copy's first request would otherwise meet a half-built pool
    server = make_server("127.0.0.1", 0, app, threaded=True)
    # The watcher's conninfo (the run role's, with its password) comes by environment, never argv.
    conninfo = os.environ.pop(settings.WATCH_ENV)
    threading.Thread(target=_watch, args=(conninfo, os.getppid()), daemon=True).start()
    print(f"listening {server.server_port}", flush=True)
    server.serve_forever()


def main(argv: list[str]) -> None:
    command, config_path, db, *rest = argv
    if command == "activate":
        activate(config_path, db, rest)
    elif command == "seed":
        seed(config_path, db, rest[0], int(rest[1]))
    elif command == "fixtures":
        fixtures(config_path, db)
    elif command == "serve":
        serve(config_path, db)
    else:
        raise SystemExit(f"launch: unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
