"""The damage DSL: parse ``.dmg`` specs, diff two full-state dumps, label a run with a verdict.

The public names live in ``dsl.api`` and are re-exported here lazily, so importing ``dsl.state``
(as the sandbox does) does not load the parser or pydantic.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DamageEvent",
    "DiffError",
    "DslError",
    "ParamError",
    "RequirementResult",
    "RowChange",
    "RunFacts",
    "Spec",
    "SpecError",
    "SpecProblem",
    "State",
    "TableInfo",
    "Verdict",
    "check_spec",
    "diff",
    "label",
    "load_spec",
    "parse_spec",
    "print_spec",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from agentrel.dsl import api

        return getattr(api, name)
    raise AttributeError(f"module 'dsl' has no attribute {name!r}")
