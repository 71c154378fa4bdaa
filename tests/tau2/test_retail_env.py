"""The tau2-retail environment as an installed environment: it conforms (`agentrel env check`), its tasks
say what they are (a single-turn adaptation whose numbers are not τ²'s leaderboard's), and its tools are
τ²'s retail toolkit by name, each tagged with whether it writes."""

from __future__ import annotations

from agentrel.sandbox.environments import registry

LABEL = "τ²-retail (single-turn adaptation)"
TAU2_TOOLS = {
    "calculate": "read",
    "transfer_to_human_agents": "read",
    "find_user_id_by_email": "read",
    "find_user_id_by_name_zip": "read",
    "get_order_details": "read",
    "get_product_details": "read",
    "get_user_details": "read",
    "list_all_product_types": "read",
    "cancel_pending_order": "write",
    "exchange_delivered_order_items": "write",
    "return_delivered_order_items": "write",
    "modify_pending_order_address": "write",
    "modify_pending_order_items": "write",
    "modify_pending_order_payment": "write",
    "modify_user_address": "write",
}


def test_tau2_retail_is_installed_and_conforms(cluster, agentrel_home):
    from agentrel.harness.env_check import check_environment
    from agentrel.harness.tasks import load_suite
    from agentrel.sandbox.sandbox import Sandbox

    assert "tau2-retail" in registry.names()
    old = registry.current_name()
    env = registry.select("tau2-retail")
    try:
        suite = load_suite()
        assert len(suite) >= 12
        assert check_environment(Sandbox(cluster, home=agentrel_home, env=env), suite) == []
    finally:
        registry.select(old)


def test_every_task_is_named_a_single_turn_adaptation():
    from agentrel.harness.tasks import load_suite

    old = registry.current_name()
    registry.select("tau2-retail")
    try:
        suite = load_suite()
    finally:
        registry.select(old)
    assert suite and all(t.title.startswith(LABEL) for t in suite), [t.title for t in suite]
    assert all(t.priced or t.irreversibility != "substrate" for t in suite)
    assert registry.load("tau2-retail").title.startswith(LABEL)


def test_the_tools_are_tau2s_by_name_and_tagged_by_effect():
    tools = registry.load("tau2-retail").tools()
    assert {
        name: ("read" if t.reversibility == "read" else "write") for name, t in tools.items()
    } == TAU2_TOOLS


def test_the_fingerprint_follows_the_tool_code(tmp_path, monkeypatch):
    """A changed tool file is a changed environment: its runs never pool with the old ones."""
    from agentrel.sandbox.environments.tau2 import retail_env

    env = retail_env.Tau2Retail()
    before = env.fingerprint()
    for name in env.tool_files:
        (tmp_path / name).write_bytes((env.here / name).read_bytes())
    (tmp_path / "retail_tools.py").write_bytes((tmp_path / "retail_tools.py").read_bytes() + b"\n# edited\n")
    monkeypatch.setattr(env, "here", tmp_path)
    assert env.fingerprint() != before
