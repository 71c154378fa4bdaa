"""A τ² task offers the whole domain toolset, as τ² does (issue 34, item 6): a task file with no `tools`
gets every tool of the environment; a narrower list is refused unless it says why (`tools_narrowed`), and
the report names a narrowed task."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrel.harness.errors import UserError
from agentrel.harness.tasks import load_suite, load_task
from agentrel.sandbox.environments.registry import load

AIRLINE = load("tau2-airline")  # loaded, not selected: selecting is process-wide
SOURCE = AIRLINE.suite_root() / "tasks" / "airline" / "tau2-airline-other-users-reservation.yaml"
NARROW = "tools: [get_user_details, get_reservation_details, update_reservation_passengers]\n"


def test_every_tau2_task_offers_the_whole_toolset() -> None:
    for env in (AIRLINE, load("tau2-retail")):
        every = sorted(env.tools())
        tasks = load_suite(env.suite_root() / "tasks", env=env)
        assert tasks and all(t.tools == every and t.tools_narrowed is None for t in tasks)
    assert len(AIRLINE.tools()) == 14  # the airline domain's 14 tools, cancel and modify among them
    assert {"cancel_reservation", "update_reservation_flights", "book_reservation"} <= set(AIRLINE.tools())


def _copy(tmp_path: Path, extra: str) -> Path:
    folder = tmp_path / "airline"
    folder.mkdir()
    text = SOURCE.read_text().replace("spec: ", extra + "spec: ", 1)
    path = folder / SOURCE.name
    path.write_text(text)
    return path


def test_a_silently_narrowed_task_is_refused(tmp_path: Path) -> None:
    """The attack: a port that offers 3 of 14 tools, so the agent cannot make τ²'s wrong-tool mistakes."""
    with pytest.raises(
        UserError, match="offers every task its whole toolset \\(14 tools\\); this file lists 3"
    ):
        load_task(_copy(tmp_path, NARROW), AIRLINE)


def test_a_narrowed_task_says_why(tmp_path: Path) -> None:
    why = "tools_narrowed: a test of a narrowed task\n"
    task = load_task(_copy(tmp_path, NARROW + why), AIRLINE)
    assert len(task.tools) == 3 and task.tools_narrowed == "a test of a narrowed task"


def test_the_enterprise_environment_keeps_its_task_lists() -> None:
    env = load("agentrel-enterprise")
    assert not env.whole_toolset
    tasks = load_suite(env=env)
    assert all(len(t.tools) < len(env.tools()) for t in tasks[:5])


def test_the_report_notes_a_narrowed_task(tmp_path: Path) -> None:
    import json

    from agentrel.analysis.inputs import load_input
    from tests.analysis.conftest import record, write_results

    out = write_results(tmp_path / "r", [record("m", "t1", i) for i in range(2)])
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["tasks"] = [{"id": "t1", "tools_narrowed": "only the refund tool is in scope"}]
    (out / "manifest.json").write_text(json.dumps(manifest))
    notes = load_input(out).notes
    assert any("task t1 offers fewer tools" in n and "only the refund tool" in n for n in notes)


def test_a_task_that_does_not_narrow_keeps_its_manifest_entry() -> None:
    from agentrel.harness.results.manifest import Manifest, TaskEntry

    entry = {"spec_digest": "s", "fixture_digest": "f", "template_digest": "t", "params": {}}
    doc = Manifest(
        package_version="0",
        server_version="15",
        environment={"name": "e"},
        seed_digest="x",
        conditions=[],
        k=1,
        max_steps=1,
        max_attempts=1,
        sampling={},
        agents=[],
        tasks=[
            TaskEntry(id="a", optimal_steps=1, **entry),
            TaskEntry(id="b", optimal_steps=1, tools_narrowed="why", **entry),
        ],
    ).document()
    assert "tools_narrowed" not in doc["tasks"][0] and doc["tasks"][1]["tools_narrowed"] == "why"
