"""A Tryton server started ahead of its run: `python -m ...tryton.standby` does the part of a server's
start that needs no database (the interpreter, trytond and its modules imported and registered, the
business date pinned), says `ready`, then reads JSON lines on stdin. A `{"preload": {"uri", "db"}}` line
names the previous run's database (a clone of the same template) and its role's uri: the standby loads
that database's pool ahead (read-only), the part of a start that costs most. The assignment,
`{"config", "db", "log", "watch"}` (Tryton's config with the run role's uri, the run database, the run's
log file, the watcher's conninfo), follows: the standby moves its stderr to the run's log, takes the
preloaded pool as the run database's (or loads it, when nothing was preloaded) and serves it exactly as
`launch serve` does. server.py keeps one standby warm and hands it the next run database. Nothing secret
is on argv: the lines come on a pipe.

A standby that never gets an assignment exits when its parent dies (or closes the pipe).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time


def _orphan_guard(parent: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(0)


def _preload(uri: str, db: str) -> str | None:
    """Load the pool of `db`, a clone of the same template as the run to come (the previous run's
    database, read-only, as that run's role), so the run's own pool is that pool under the run's name.
    None when it could not be loaded (the database went meanwhile): the run then loads its own."""
    import trytond.config as config
    from trytond import backend
    from trytond.pool import Pool
    from trytond.transaction import Transaction

    config.set("database", "uri", uri)
    try:
        with Transaction().start(db, 0, readonly=True):
            Pool(db).init()
        return db
    except Exception as exc:  # the previous run ended first: nothing preloaded
        print(f"standby: no preloaded pool ({type(exc).__name__})", file=sys.stderr, flush=True)
        Pool._pools.pop(db, None)
        return None
    finally:
        with contextlib.suppress(Exception):
            backend.Database(db).close()  # no connection left to the other run's database


def _alias(loaded: str, db: str) -> bool:
    """The pool loaded for `loaded` registered as `db`'s (Tryton 8.2's Pool keeps one per database
    name; both are clones of one template with the same modules activated, so their pools are equal)."""
    from trytond.pool import Pool

    with Pool._lock:
        if loaded not in Pool._pools:
            return False
        Pool._pools[db] = Pool._pools.pop(loaded)
        Pool._pool_modules[db] = Pool._pool_modules.pop(loaded)
    return True


def main() -> None:
    import trytond.config as config

    # Tryton picks its backend from the uri's scheme at import: postgresql, whatever the run's role.
    config.set("database", "uri", "postgresql://")
    from agentrel.sandbox.environments.tryton import launch, settings

    launch.pin_clock(settings.PINNED_DATE)
    from trytond.pool import Pool
    from trytond.wsgi import app
    from werkzeug.serving import make_server

    Pool.start()
    parent = os.getppid()
    threading.Thread(target=_orphan_guard, args=(parent,), daemon=True).start()
    print("ready", flush=True)
    loaded = None
    for line in sys.stdin:
        job = json.loads(line)
        if "preload" not in job:
            break
        loaded = _preload(job["preload"]["uri"], job["preload"]["db"])
    else:
        return  # the pipe closed: no run for this standby
    log = os.open(job["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.dup2(log, 2)
    os.close(log)
    config.update_etc(job["config"])
    if loaded is None or not _alias(loaded, job["db"]):
        Pool(job["db"]).init()
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=launch._watch, args=(job["watch"], parent), daemon=True).start()
    print(f"listening {server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
