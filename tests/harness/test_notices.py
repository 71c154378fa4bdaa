"""No silence: slow first-use work (a template built, a cluster created, a wheel fetched) says so as it
starts (sandbox/notices.py), and the CLI prints it on whatever stderr is current."""

from __future__ import annotations

import logging
import uuid

from agentrel.sandbox.notices import LOGGER


def test_building_a_template_is_said_as_it_starts_and_when_done(sandbox, caplog):
    from agentrel.harness.tasks import load_suite

    task = load_suite()[0]
    fixture = f"-- a fixture no template has yet: {uuid.uuid4().hex}\nSELECT 1;"
    with caplog.at_level(logging.INFO, logger=LOGGER):
        template = sandbox.dbs.task_template(sandbox.seed_template(), task.id, fixture)
    said = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert said[0] == f"building the template of task {task.id} (first use of this seed and code)"
    assert said[-1].startswith(f"built the template of task {task.id} in ")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=LOGGER):  # built once: the second use is silent
        assert sandbox.dbs.task_template(sandbox.seed_template(), task.id, fixture) == template
    assert not [r for r in caplog.records if r.name == LOGGER]
    sandbox.dbs.drop(template.name)


def test_notices_reach_the_stderr_of_the_moment(capsys):
    """The CLI's handler writes to the current sys.stderr (a capture swapped in after it was installed
    must get the line), and installing it twice does not print twice."""
    from agentrel.harness.cli.main import _show_notices
    from agentrel.sandbox.notices import notice

    _show_notices()
    _show_notices()
    capsys.readouterr()
    notice("building the template of task t (first use of this seed and code)")
    assert (
        capsys.readouterr().err
        == "agentrel: building the template of task t (first use of this seed and code)\n"
    )
