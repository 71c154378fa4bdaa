"""Reading a YAML file the user wrote into a pydantic model, every problem one line naming file and field.

Task files, condition files and the injection catalogue all come through here. Mappings refuse a key
given twice (PyYAML would silently keep the last).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from agentrel.harness.errors import UserError

M = TypeVar("M", bound=BaseModel)


# libyaml's parser where PyYAML was built with it (about 8x faster on the suite's task files); the safe
# constructor is the same Python class either way, so the refusal below holds for both.
_SafeBase: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_SafeBase):  # type: ignore[misc]
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"field {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: Path) -> Any:
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)  # a SafeLoader
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read the file ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise UserError(f"{path}{where}: not valid YAML ({getattr(exc, 'problem', exc)})") from None


def load_model(model: type[M], path: Path, context: dict[str, Any] | None = None) -> M:
    """The file's mapping validated as `model` (with pydantic's validation `context`, if given); the first
    problem names its field."""
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise UserError(f"{path}: expected a mapping of fields")
    try:
        return model.model_validate(raw, context=context)
    except ValidationError as exc:
        raise UserError(f"{path}: {field_problem(exc)}") from None


def field_problem(exc: ValidationError, within: str = "") -> str:
    """`field a.b[0]: what is wrong`, for the first problem pydantic found (under `within`, if given)."""
    err = exc.errors()[0]
    field = within + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
    return f"field {field.lstrip('.') or '(top level)'}: {err['msg']}"
