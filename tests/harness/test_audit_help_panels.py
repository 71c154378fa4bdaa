"""`agentrel audit --help` groups its 40-odd options in panels a reader can scan (Subjects, Agent
programs, Matrix, Runs, Sequential audit, Model subjects, Executor, Sandbox, Output and gates), never one
long list: an option added without a panel fails here."""

import inspect
import typing

from agentrel.harness.cli.audit import audit

PANELS = {
    "Subjects",
    "Agent programs",
    "Matrix",
    "Runs",
    "Sequential audit",
    "Model subjects",
    "Executor",
    "Sandbox",
    "Output and gates",
}


def test_every_audit_option_sits_in_a_named_panel():
    hints = typing.get_type_hints(audit, include_extras=True)
    seen = set()
    for name in inspect.signature(audit).parameters:
        if name == "ctx":
            continue
        option = next(m for m in typing.get_args(hints[name]) if hasattr(m, "rich_help_panel"))
        assert option.rich_help_panel in PANELS, f"audit option {name} is in no panel"
        seen.add(option.rich_help_panel)
    assert seen == PANELS
