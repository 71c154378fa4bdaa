"""A Tryton server started ahead of its run: `python -m ...tryton.standby` does the part of a server's
start that needs no database (the interpreter, trytond and its modules imported and registered, the
business date pinned), says `ready`, then waits for one assignment on stdin, a JSON line
{"config", "db", "log", "watch"}: Tryton's config (the run role's database uri), the run database, the
run's log file and the watcher's conninfo. It then moves its stderr to the run's log, loads the
database's pool and serves it exactly as `launch serve` does (server.py keeps one standby warm and hands
it the next run database). Nothing secret is on argv: the assignment comes on a pipe.

A standby that never gets an assignment exits when its parent dies (or closes the pipe).
"""

from __future__ import annotations

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
    line = sys.stdin.readline()
    if not line:
        return
    job = json.loads(line)
    log = os.open(job["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.dup2(log, 2)
    os.close(log)
    config.update_etc(job["config"])
    Pool(job["db"]).init()
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=launch._watch, args=(job["watch"], parent), daemon=True).start()
    print(f"listening {server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
