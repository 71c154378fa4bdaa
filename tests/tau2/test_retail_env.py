"""The tau2-retail environment's own promises (its conformance and naming are tests/tau2/test_ports.py's):
its tools are τ²'s retail toolkit by name, each tagged with whether it writes, its substrate damage is
priced, and its fingerprint follows its tool code."""

from __future__ import annotations

from agentrel.sandbox.environments import registry
from tests.tau2.ports import suite_of

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


def test_a_task_whose_damage_has_no_undo_is_priced():
    with suite_of("tau2-retail") as (_, suite):
        assert suite and all(t.priced or t.irreversibility != "substrate" for t in suite)


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
