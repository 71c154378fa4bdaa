"""The public surface of the damage DSL; other packages import from here (or from ``dsl``).

spec = load_spec("damage_specs/csm-goodwill-cap.dmg")
problems = check_spec(spec, schema)                       # [] when the spec is sound
verdict = label(spec, {"cap": "250"}, before, after, RunFacts(final_message=text))
verdict.model_dump(mode="json")                           # what a run record stores

# An injection's goal specs labelled beside the task's: their damage rules are tried first, and every
# event names its spec (``injection:<goal>``); allow rules, fallback and requirements are the task's.
verdict = label(spec, params, before, after, facts, extra=[(goal_spec, goal_params)])
"""

from __future__ import annotations

from pathlib import Path

from agentrel.dsl.ast import Spec
from agentrel.dsl.check import SpecProblem, check_spec
from agentrel.dsl.diff import RowChange, diff
from agentrel.dsl.errors import DiffError, DslError, ParamError, SpecError
from agentrel.dsl.label import label
from agentrel.dsl.parser import parse_tree
from agentrel.dsl.printer import print_spec
from agentrel.dsl.state import State, TableInfo
from agentrel.dsl.transform import to_ast
from agentrel.dsl.verdict import DamageEvent, RequirementResult, RunFacts, Verdict


def parse_spec(text: str, path: str = "<spec>") -> Spec:
    """Parse spec text; raises SpecError (``path:line:col: what`` + the line + a caret)."""
    return to_ast(parse_tree(text, path), text, path)


def load_spec(path: str | Path) -> Spec:
    """Read and parse a ``.dmg`` file; a missing or unreadable file is a SpecError too."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{path}: no such spec file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(f"{path}: cannot read spec file ({err})") from None
    return parse_spec(text, str(path))


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
