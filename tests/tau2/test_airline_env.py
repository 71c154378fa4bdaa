"""The tau2-airline environment as an installed environment: it conforms (`agentrel env check`), and its
tasks say what they are, a single-turn adaptation whose numbers are not τ²'s leaderboard's."""

from __future__ import annotations

from agentrel.sandbox.environments import registry

LABEL = "τ²-airline (single-turn adaptation)"


def test_tau2_airline_is_installed_and_conforms(cluster, agentrel_home):
    from agentrel.harness.env_check import check_environment
    from agentrel.harness.tasks import load_suite
    from agentrel.sandbox.sandbox import Sandbox

    assert "tau2-airline" in registry.names()
    old = registry.current_name()
    env = registry.select("tau2-airline")
    try:
        suite = load_suite()
        assert len(suite) >= 12
        assert check_environment(Sandbox(cluster, home=agentrel_home, env=env), suite) == []
    finally:
        registry.select(old)


def test_every_task_is_named_a_single_turn_adaptation():
    from agentrel.harness.tasks import load_suite

    old = registry.current_name()
    registry.select("tau2-airline")
    try:
        suite = load_suite()
    finally:
        registry.select(old)
    assert suite and all(t.title.startswith(LABEL) for t in suite), [t.title for t in suite]
    assert registry.load("tau2-airline").title.startswith(LABEL)
