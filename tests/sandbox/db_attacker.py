"""An attacker with the auditor's environment and no password file: it tries to log in to the sandbox's
Postgres and records what it could read of its own and its parent's environment and command line.

    python db_attacker.py OUT.json CONNINFO [CONNINFO ...]

Each CONNINFO is tried as given, then with a handful of guessed passwords; OUT.json gets, per conninfo,
`null` when every attempt was refused (else what got in), and the bytes of /proc/self and /proc/<ppid>
environ and cmdline (hex), so the test can look for the superuser's password in them. Run as a plain
subprocess or as an agent program (`audit --agent`): it then opens its MCP session and calls no tool.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

PLAIN = Path(__file__).parents[1] / "harness" / "plain_mcp_program.py"
GUESSES = ("", "agentrel", "postgres", "password")


def attempt(conninfo: str) -> str | None:
    for guess in (None, *GUESSES):
        params = {} if guess is None else {"password": guess}
        try:
            with psycopg.connect(make_conninfo(conninfo, **params), connect_timeout=5) as conn:
                row = conn.execute("SELECT current_user, current_database()").fetchone()
                return f"logged in as {row} with password {guess!r}"
        except psycopg.OperationalError:
            continue
    return None


def proc(pid: int | str, what: str) -> str:
    try:
        return Path(f"/proc/{pid}/{what}").read_bytes().hex()
    except OSError as exc:
        return f"unreadable: {exc}"


def main() -> None:
    out, targets = Path(sys.argv[1]), sys.argv[2:]
    seen = {
        f"{who}/{what}": proc(pid, what)
        for who, pid in (("self", "self"), ("parent", os.getppid()))
        for what in ("environ", "cmdline")
    }
    logins = {t: attempt(t) for t in targets}
    out.write_text(json.dumps({"logins": logins, "seen": seen}))
    if os.environ.get("AGENTREL_MCP_URL"):  # as an agent program: open the session, call nothing, end
        plan = out.with_suffix(".plan.json")
        plan.write_text(json.dumps({"steps": [], "final": "nothing done"}))
        os.execv(sys.executable, [sys.executable, "-S", str(PLAIN), str(plan)])


if __name__ == "__main__":
    main()
