"""Each τ² port as an installed environment: it conforms (`agentrel env check`) with its twelve or more
tasks, and it and its tasks say what they are, a single-turn adaptation whose numbers are not τ²'s
leaderboard's."""

from __future__ import annotations

import pytest

from agentrel.sandbox.environments import registry
from tests.tau2.ports import suite_of

PORTS = {
    "tau2-airline": "τ²-airline (single-turn adaptation)",
    "tau2-retail": "τ²-retail (single-turn adaptation)",
}


@pytest.mark.parametrize("name", PORTS)
def test_the_port_is_installed_and_conforms(name, cluster, agentrel_home):
    from agentrel.harness.env_check import check_environment
    from agentrel.sandbox.sandbox import Sandbox

    assert name in registry.names()
    with suite_of(name) as (env, suite):
        assert len(suite) >= 12
        assert check_environment(Sandbox(cluster, home=agentrel_home, env=env), suite) == []


@pytest.mark.parametrize(("name", "label"), PORTS.items())
def test_every_task_is_named_a_single_turn_adaptation(name, label):
    with suite_of(name) as (env, suite):
        assert suite and all(t.title.startswith(label) for t in suite), [t.title for t in suite]
        assert env.title.startswith(label)
