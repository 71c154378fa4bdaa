"""The state after a run does not depend on the day the audit runs (clock.py).

Every direct clock read in the installed Tryton code is pinned or exempt with a reason; in a process
whose clock is shifted by a year and more, every pinned read answers the environment's instant; and a
task's oracle run by a server on a shifted clock leaves the state a server on the real clock leaves.

The shift is the test's alone: a `sitecustomize` on the spawned process's PYTHONPATH makes the
interpreter use the pure-Python `datetime` (which reads `time.time`) and moves `time.time` by
SHIFT_DAYS, so every Python-level clock read of the process is shifted. The harness has no such hook.
"""

from __future__ import annotations

import ast
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from agentrel.sandbox.environments.tryton import clock, server, settings

SHIFT_DAYS = 400
SITECUSTOMIZE = f"""
import os, sys, time
sys.modules["_datetime"] = None  # the pure-Python datetime reads time.time, which moves below
sys.modules["_zoneinfo"] = None
os.environ["PSYCOPG_IMPL"] = "python"  # psycopg's C part needs the C datetime
_real = time.time
time.time = lambda: _real() + {SHIFT_DAYS} * 86400
time.time_ns = lambda: int(time.time() * 1e9)
if os.environ.get("AGENTREL_TEST_UNPINNED"):
    # The negative: the server without the pin. Once clock.py is imported its pin does nothing.
    import importlib.abc, importlib.util

    class _Unpin(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "agentrel.sandbox.environments.tryton.clock":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            real_exec = spec.loader.exec_module
            def exec_module(module):
                real_exec(module)
                module.pin = lambda day: None
            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _Unpin())
"""


def _shifted_env(tmp_path: Path, unpinned: bool = False) -> dict[str, str]:
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    env["PYTHONWARNINGS"] = "ignore"
    if unpinned:
        env["AGENTREL_TEST_UNPINNED"] = "1"
    return env


def _direct_clock_reads(source: str) -> list[int]:
    """Lines calling datetime's now/today/utcnow or time's time/time_ns directly (not ir.date's today)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        attr, owner = node.func.attr, node.func.value
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)
        if (attr in ("now", "today", "utcnow") and name in ("datetime", "date")) or (
            attr in ("time", "time_ns") and name in ("time", "_time")
        ):
            lines.append(node.lineno)
    return lines


def test_every_direct_clock_read_of_tryton_is_pinned_or_exempt_with_a_reason() -> None:
    """The attack: a Tryton release (or a module added to the environment) whose new direct clock read
    writes the audit's day into a stored value. Every such call in the installed code fails here until
    its module is pinned or exempted with a reason; a stale entry fails too."""
    import trytond

    root = Path(trytond.__file__).parent
    found: dict[str, list[int]] = {}
    for path in sorted(root.rglob("*.py")):
        if "tests" in path.relative_to(root).parts:
            continue
        reads = _direct_clock_reads(path.read_text())
        if reads:
            parts = path.relative_to(root.parent).with_suffix("").parts
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[module] = reads
    known = set(clock.PINNED_GLOBALS) | set(clock.PINNED_EVALS) | set(clock.EXEMPT)
    unaccounted = {m: lines for m, lines in found.items() if m not in known}
    assert unaccounted == {}, f"direct clock reads neither pinned nor exempt: {unaccounted}"
    assert known - set(found) == set(), "clock.py names modules without a direct clock read"
    assert "trytond.modules.account_invoice.invoice" in found  # the scanner sees what it must


PROBE = """
import datetime, json, sys
from agentrel.sandbox.environments.tryton import launch, clock
launch._configure(sys.argv[1])
if sys.argv[2] == "pin":
    launch.pin_clock(datetime.date.fromisoformat(sys.argv[3]))
import importlib
from trytond.pyson import Date, DateTime, PYSONDecoder, PYSONEncoder
from trytond.modules.account_invoice.invoice import InvoiceReportRevision
from trytond.model.modelstorage import ModelStorage
from trytond.ir.date import Date as IrDate
out = {"process": datetime.date.today().isoformat(), "reads": {}}
for name, attrs in clock.PINNED_GLOBALS.items():
    module = importlib.import_module(name)
    for attr in attrs:
        held = getattr(module, attr)
        if hasattr(held, "date"):
            seen = {held.date.today(), held.datetime.now().date(), held.datetime.today().date(),
                    held.datetime.now(datetime.timezone.utc).date()}
        else:
            seen = {datetime.datetime.fromtimestamp(held.time(), datetime.timezone.utc).date()}
        out["reads"][f"{name}.{attr}"] = sorted(d.isoformat() for d in seen)
decode = lambda v: PYSONDecoder().decode(PYSONEncoder().encode(v))
out["reads"]["pyson.Date"] = [decode(Date()).isoformat()]
out["reads"]["pyson.DateTime"] = [decode(DateTime()).date().isoformat()]
out["reads"]["report_revision.date"] = [InvoiceReportRevision.default_date().date().isoformat()]
out["reads"]["default_create_date"] = [ModelStorage.default_create_date().date().isoformat()]
out["reads"]["ir.date"] = [IrDate.today().isoformat()]
# The pinned classes still know the real ones' values, and make values of the real classes.
held = importlib.import_module("trytond.modules.stock.product").datetime
out["real"] = [isinstance(datetime.date(2020, 1, 1), held.date), type(held.date(2020, 1, 1)) is datetime.date,
               type(held.datetime.combine(held.date.today(), datetime.time())) is datetime.datetime]
print(json.dumps(out))
"""


@pytest.mark.parametrize("pinned", [True, False])
def test_a_shifted_process_clock_reaches_no_pinned_read(tmp_path: Path, pinned: bool) -> None:
    """In a process a year and more ahead, every pinned read answers the pinned date; the negative (no
    pin) shows the same reads do see the shifted clock, so the probe could fail."""
    config = tmp_path / "trytond.conf"
    config.write_text("[database]\nuri = postgresql://\n")
    day = settings.PINNED_DATE
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(config), "pin" if pinned else "none", day.isoformat()],
        env=_shifted_env(tmp_path), capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    shifted = dt.date.today() + dt.timedelta(days=SHIFT_DAYS)
    assert dt.date.fromisoformat(out["process"]) in (shifted, shifted + dt.timedelta(days=1))
    reads = out["reads"]
    assert len(reads) == sum(map(len, clock.PINNED_GLOBALS.values())) + 5
    if pinned:
        assert {k: v for k, v in reads.items() if v != [day.isoformat()]} == {}
        assert out["real"] == [True, True, True]
    else:
        assert all(dt.date.fromisoformat(v[-1]) >= shifted - dt.timedelta(days=1) for v in reads.values())


def _script(sb, task_id: str, script: str):
    """A task's prepared template and one of its scripts' steps (a counterexample that credits and pays)."""
    from agentrel.harness.run.episode import prepare
    from agentrel.harness.tasks import load_suite

    task = next(t for t in load_suite(env=sb.env) if t.id == task_id)
    return prepare(sb, task), [{"tool": s.tool, "args": s.args} for s in task.scripts()[script].steps]


def _run_on_fresh_server(sb, prepared, steps, env: dict[str, str] | None, monkeypatch=None):
    """The steps through the tools on a fresh clone, its server spawned now (under `env`), its dump.
    A shifted server's sessions live longer than the shift: Tryton checks a session's age (stamped by the
    database's clock, which the shift does not move) against its process clock (liveness, exempt)."""
    from agentrel.sandbox.dump import dump_database
    from agentrel.sandbox.environments.tryton import tools
    from agentrel.sandbox.tools import ToolBox

    name = sb.dbs.create_run(prepared.template)
    saved = dict(os.environ)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        with server._lock:  # the warm standby was spawned on the real clock: this run spawns its own
            if server._standby is not None:
                server._standby.kill()
                server._standby.wait()
                server._standby = None
        keep, server.KEEP_STANDBY = server.KEEP_STANDBY, False
        if env is not None and monkeypatch is not None:
            real_config = settings.write_config

            def write_config(path: Path, conninfo: str) -> Path:
                written = real_config(path, conninfo)
                span = 3 * SHIFT_DAYS * 86400
                text = written.read_text().replace("max_age = 86400", f"max_age = {span}")
                written.write_text(text.replace("timeout = 86400", f"timeout = {span}"))
                return written

            monkeypatch.setattr(settings, "write_config", write_config)
        try:
            with ToolBox(sb.dbs.tool_conninfo(name), dict(tools.TOOLS), prepared.acting_user_id) as box:
                results = [box.call(s["tool"], s["args"]) for s in steps]
        finally:
            server.KEEP_STANDBY = keep
            if monkeypatch is not None:
                monkeypatch.undo()
            os.environ.clear()
            os.environ.update(saved)
        assert all(r.ok for r in results), [r.content for r in results]
        return dump_database(sb.server.conninfo(name), sb.env.table_infos().values())
    finally:
        sb.dbs.drop(name)


def test_a_run_leaves_the_same_state_whatever_day_the_audit_runs(
    tryton_sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A credit note issued and an invoice paid (dates, moves, posting, reconciliation) by a server whose
    process clock is SHIFT_DAYS ahead leave the state a server on the real clock leaves (volatile columns
    masked); the negative, the same shifted server without the pin, shows the shift in the dump."""
    from agentrel.harness.env_check import differing_tables

    sb = tryton_sandbox
    prepared, steps = _script(sb, "tryton-credit-once", "credit_again")
    real = _run_on_fresh_server(sb, prepared, steps, None)
    shifted = _run_on_fresh_server(sb, prepared, steps, _shifted_env(tmp_path), monkeypatch)
    assert differing_tables(real, shifted, masked=True) == []
    # The noise list hides no day: unmasked, the two states differ only in the database's bookkeeping
    # stamps (the real clock's, whichever day), never in another volatile column.
    assert _differing_columns(real, shifted) <= {"create_date", "write_date"}
    unpinned = _run_on_fresh_server(sb, prepared, steps, _shifted_env(tmp_path, unpinned=True), monkeypatch)
    assert "account_move" in differing_tables(real, unpinned, masked=True)  # its post_date: the day


def _differing_columns(a, b) -> set[str]:
    out = set()
    for name, table in a.tables.items():
        other = b.tables[name]
        assert set(table.rows) == set(other.rows), name
        for key, row in table.rows.items():
            out |= {c for c, x, y in zip(table.info.columns, row, other.rows[key], strict=True) if x != y}
    return out


def test_the_clock_is_not_left_shifted_for_the_next_run(tryton_sandbox) -> None:
    """After the shifted runs, the next run's server answers the pinned date again (no hook leaks)."""
    from agentrel.sandbox.environments.tryton import tools
    from agentrel.sandbox.tools.base import ToolContext

    sb = tryton_sandbox
    template = sb.seed_template()
    clerk = sb.env.acting_user(sb.dbs.template_state(template), "clerk")
    name = sb.dbs.create_run(template)
    try:
        with psycopg.connect(sb.dbs.tool_conninfo(name), autocommit=True) as conn:
            assert (
                tools.client(ToolContext(conn, clerk)).call("model.ir.date.today", []) == settings.PINNED_DATE
            )
    finally:
        sb.dbs.drop(name)
