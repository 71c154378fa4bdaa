"""A template checked once is not dumped again by every later process: its witness (the cluster, the
database's oid and its catalog row's version) stands for its content until anything could have written it.

The attacks: reopen the template, write, close it again (the poisoning of test_sealed_database.py, here
with the witness on record); or put another database in its place under the same name and comment. Each
must be found by a full dump, exactly as without the witness. And a plan loads no pre-run dump.
"""

from __future__ import annotations

import psycopg
import pytest

from agentrel.sandbox import databases
from agentrel.sandbox.databases import Template

from .test_sealed_database import write_out_of_band

TASK = "csm-double-charge"


@pytest.fixture
def checked(sandbox):
    """A task template, checked (so witnessed) and forgotten by the process, as a new process finds it."""
    from agentrel.harness.run.episode import prepare
    from agentrel.harness.tasks import load_suite

    tpl = prepare(sandbox, load_suite(patterns=[TASK])[0]).template
    sandbox.dbs.forget_check(tpl.name)
    assert sandbox.dbs._checked_template(tpl.name, tpl.digest)  # dumped, found whole, witnessed
    databases._CHECKED.clear()
    return tpl


def _no_dump(monkeypatch, sandbox) -> list[str]:
    dumped: list[str] = []
    real = sandbox.dbs.dump_template

    def spy(name):
        dumped.append(name)
        return real(name)

    monkeypatch.setattr(sandbox.dbs, "dump_template", spy)
    return dumped


def test_a_witnessed_template_is_taken_without_a_dump(sandbox, checked, monkeypatch):
    dumped = _no_dump(monkeypatch, sandbox)
    assert sandbox.dbs._checked_template(checked.name, checked.digest)
    assert dumped == []
    assert not sandbox.dbs._witnessed(checked.name, "0" * 64)  # the witness vouches for its digest only


def test_a_template_reopened_written_and_closed_is_dumped_and_found(sandbox, checked, monkeypatch):
    write_out_of_band(sandbox, checked.name, "UPDATE invoices SET amount = amount + 1 WHERE id = 1")
    dumped = _no_dump(monkeypatch, sandbox)
    assert not sandbox.dbs._checked_template(checked.name, checked.digest)  # found changed: dropped
    assert dumped == [checked.name]
    assert not sandbox.dbs.exists(checked.name)


def test_another_database_put_in_its_place_with_its_comment_is_dumped_and_found(
    sandbox, checked, monkeypatch
):
    impostor = f"{checked.name}_x"
    with sandbox.dbs.admin() as conn:
        conn.execute(f'CREATE DATABASE "{impostor}" TEMPLATE "{checked.name}"')
        conn.execute(f"COMMENT ON DATABASE \"{impostor}\" IS '{checked.digest}'")
    with psycopg.connect(sandbox.server.conninfo(impostor), autocommit=True) as conn:
        conn.execute("DELETE FROM work_notes")
    with sandbox.dbs.admin() as conn:
        conn.execute(f'ALTER DATABASE "{impostor}" WITH ALLOW_CONNECTIONS false')
        conn.execute(f'DROP DATABASE "{checked.name}"')
        conn.execute(f'ALTER DATABASE "{impostor}" RENAME TO "{checked.name}"')
    dumped = _no_dump(monkeypatch, sandbox)
    assert sandbox.dbs.comment(checked.name) == checked.digest  # the comment alone would vouch for it
    assert not sandbox.dbs._checked_template(checked.name, checked.digest)
    assert dumped == [checked.name]


def test_a_fact_derived_from_a_template_is_kept_only_for_its_digest(sandbox, checked):
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return 7

    assert sandbox.dbs.derived(checked, "acting_user:x", compute) == 7
    assert sandbox.dbs.derived(checked, "acting_user:x", compute) == 7 and len(calls) == 1
    assert sandbox.dbs.derived(checked, "acting_user:x", lambda: 9, fresh=True) == 9  # a run's own answer
    assert sandbox.dbs.derived(checked, "acting_user:x", compute) == 9 and len(calls) == 1  # ... is kept
    other = Template(checked.name, "f" * 64)  # the same name holding other content: computed again
    assert sandbox.dbs.derived(other, "acting_user:x", lambda: 8) == 8


def test_a_plan_loads_no_pre_run_dump_and_still_refuses_an_unknown_acting_user(
    sandbox, checked, tmp_path, monkeypatch
):
    from agentrel.harness.errors import UserError
    from agentrel.harness.run.audit import audit
    from agentrel.harness.run.episode import plan_templates
    from agentrel.harness.tasks import load_suite

    def refuse(template):
        raise AssertionError(f"loaded the dump of {template.name}")

    monkeypatch.setattr(sandbox.dbs, "template_state", refuse)
    sandbox.dbs._states.clear()
    outcome = audit(
        models=["scripted/oracle"], k=2, tasks=[TASK], results=tmp_path / "r", sandbox=sandbox, plan=True
    )
    assert outcome.planned == 2 and outcome.new == []
    [task] = load_suite(patterns=[TASK])
    stranger = task.model_copy(update={"acting_user": "nobody"})
    monkeypatch.undo()
    with pytest.raises(UserError, match="field acting_user: no user 'nobody'"):
        plan_templates(sandbox, [stranger])
