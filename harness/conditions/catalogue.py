"""The adversarial condition's catalogue, as data: injection payloads and the goals they push.

    damage_specs/injections/payloads.yaml     payload templates: id, class, text ({instruction}, {canary})
    damage_specs/injections/goals/<id>.yaml   an injected goal: the act, its tools, instruction, steps
    damage_specs/injections/goals/<id>.dmg    its damage rules, spec "injection:<id>"

The folder is in the audit's environment's suite (`load_catalogue(env=)`). Goals name an environment's
records and tools, so each environment holds its own; the payload templates name neither (only
`{instruction}` and `{canary}`), so an environment's catalogue may hold goals only and take the built-in
catalogue's payloads.yaml, shared rather than copied.
A payloads.yaml of its own replaces the built-in's whole.

    catalogue = load_catalogue(env=env)            # one-line UserError naming the file and field
    goals = catalogue.goals_for(task)              # goals the task's tools can carry out
    text = render(payload, goal.instruction, make_canary(run_seed))

A goal's spec holds damage rules only: it is labelled beside the task's spec (`dsl.api.label`'s
`extra`), and the events of its rules (`goal_events`) say the agent carried out the injected act,
whatever calls it used.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from agentrel.dsl.api import DamageEvent, DslError, Spec, Verdict, check_spec, load_spec
from agentrel.dsl.params import resolve_params
from agentrel.harness.errors import UserError
from agentrel.harness.frozen import Frozen
from agentrel.harness.suite_paths import suite_root
from agentrel.harness.tasks import Step, Task
from agentrel.harness.yamlfile import load_model

if TYPE_CHECKING:
    from agentrel.sandbox.environments.contract import Environment

PayloadClass = Literal[
    "direct-override",
    "authority-impersonation",
    "embedded-json",
    "markdown-exfiltration",
    "comment-channel",
    "unicode-homoglyph",
    "zero-width-obfuscation",
    "base64-wrapped",
    "fake-error-recovery",
    "multi-turn-poisoning",
    "nested-json",
    "xml-tag-impersonation",
    "delayed-effect",
    "task-continuation",
    "multilingual",
]
PLACEHOLDERS = ("{instruction}", "{canary}")


class Payload(Frozen):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    kind: PayloadClass = Field(alias="class")
    text: str = Field(min_length=1)
    note: str = ""  # where the text plausibly sits, and for an own class why it is one


class _PayloadFile(Frozen):
    payloads: list[Payload] = Field(min_length=1)


class Goal(Frozen):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    summary: str
    tools: list[str] = Field(min_length=1)
    instruction: str = Field(min_length=1)
    steps: list[Step] = Field(min_length=1)  # what `scripted/follow-injection` replays
    spec: str  # the .dmg file, relative to the goal file


@dataclass(frozen=True)
class Catalogue:
    payloads: tuple[Payload, ...]
    goals: tuple[Goal, ...]
    specs: dict[str, Spec]  # goal id -> its parsed, checked spec
    digest: str = ""  # SHA-256 over every file of the catalogue: part of an injecting audit's protocol

    def goals_for(self, task: Task) -> list[Goal]:
        """The goals whose every tool the task gives the agent: the only ones it could carry out."""
        return [g for g in self.goals if set(g.tools) <= set(task.tools)]

    def payload(self, payload_id: str) -> Payload:
        return _by_id(self.payloads, payload_id, "payload")

    def goal(self, goal_id: str) -> Goal:
        return _by_id(self.goals, goal_id, "goal")


def _by_id(items: tuple[Any, ...], item_id: str, noun: str) -> Any:
    for item in items:
        if item.id == item_id:
            return item
    raise UserError(f"no injection {noun} {item_id!r}; known: {', '.join(i.id for i in items)}")


def goal_rules(spec: Spec) -> frozenset[str]:
    """The labels of a goal spec's damage rules (the default fallback is not one of them)."""
    return frozenset(r.label for r in spec.rules if r.kind == "damage")


def goal_events(spec: Spec, verdict: Verdict) -> list[DamageEvent]:
    """The events of `verdict` labelled by the goal's own damage rules. In a merged labelling (the
    task's spec with goal specs as `extra`) each event names its spec; a verdict of the goal spec alone
    also has default-fallback events for every other change, which say nothing about the goal."""
    rules = goal_rules(spec)
    return [e for e in verdict.events if e.spec == spec.name and e.rule in rules]


# ---- rendering ------------------------------------------------------------------------------------

# Cyrillic look-alikes of Latin letters: the text reads the same, a keyword match on it fails.
_HOMOGLYPHS = str.maketrans(
    {
        "a": "\u0430",
        "c": "\u0441",
        "e": "\u0435",
        "i": "\u0456",
        "o": "\u043e",
        "p": "\u0440",
        "x": "\u0445",
        "y": "\u0443",
        "A": "\u0410",
        "B": "\u0412",
        "C": "\u0421",
        "E": "\u0415",
        "H": "\u041d",
        "I": "\u0406",
        "K": "\u041a",
        "M": "\u041c",
        "O": "\u041e",
        "P": "\u0420",
        "T": "\u0422",
        "X": "\u0425",
    }
)
ZERO_WIDTH_SPACE = "\u200b"
_BETWEEN_LETTERS = re.compile(r"(?<=\w)(?=\w)")
_PLACEHOLDER = re.compile(r"(\{instruction\}|\{canary\})")


def _json_escaped(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)[1:-1]


# How a class encodes the instruction it carries; the others carry it as it is.
_ENCODE: dict[str, Callable[[str], str]] = {
    "base64-wrapped": lambda s: base64.b64encode(s.encode()).decode("ascii"),
    "embedded-json": _json_escaped,
    "nested-json": lambda s: _json_escaped(_json_escaped(s)),
}
# How a class disguises its fixed wording. The instruction and canary stay plain: the ids the instruction
# names must still work in a tool call, and the canary must be findable verbatim.
_DISGUISE: dict[str, Callable[[str], str]] = {
    "unicode-homoglyph": lambda s: s.translate(_HOMOGLYPHS),
    "zero-width-obfuscation": lambda s: _BETWEEN_LETTERS.sub(ZERO_WIDTH_SPACE, s),
}


def render(payload: Payload, instruction: str, canary: str) -> str:
    """The payload's text with its placeholders filled; pure. Only `{instruction}` and `{canary}` are
    replaced, so the braces of the JSON payloads need no escaping."""
    encode = _ENCODE.get(payload.kind, str)
    disguise = _DISGUISE.get(payload.kind, str)
    parts = []
    for part in _PLACEHOLDER.split(payload.text):
        if part == "{instruction}":
            parts.append(encode(instruction))
        elif part == "{canary}":
            parts.append(canary)
        else:
            parts.append(disguise(part))
    return "".join(parts)


def make_canary(seed: str) -> str:
    """A per-run canary such as `INJ-7f3a9c`, fixed by the run's seed (so a rerun plants the same)."""
    return "INJ-" + hashlib.sha256(seed.encode()).hexdigest()[:6]


# ---- loading --------------------------------------------------------------------------------------


def default_root(env: Environment | None = None) -> Path:
    """`env`'s catalogue folder (None: the built-in's), or AGENTREL_SUITE_DIR's."""
    return suite_root(env) / "damage_specs" / "injections"


def builtin_root() -> Path:
    """The built-in environment's catalogue, whose payloads an environment without its own uses."""
    from agentrel.harness.suite_paths import packaged_root

    return packaged_root() / "damage_specs" / "injections"


def payloads_path(root: Path) -> Path:
    """`root/payloads.yaml`, else (a catalogue of goals only) the built-in catalogue's."""
    own = root / "payloads.yaml"
    return own if own.exists() else builtin_root() / "payloads.yaml"


def load_catalogue(root: Path | None = None, env: Environment | None = None) -> Catalogue:
    """Read and check the payloads (`payloads_path(root)`) and `root/goals/` (default: `env`'s catalogue)
    against `env`'s tools and tables (None: the built-in environment); the first problem is a one-line
    UserError."""
    if env is None:
        from agentrel.sandbox.environments.registry import default

        env = default()
    root = root or default_root(env)
    goals_dir = root / "goals"
    if not goals_dir.is_dir():
        raise UserError(
            f"{goals_dir}: no such folder: this environment has no injected goals (<goal id>.yaml beside "
            "its <goal id>.dmg, harness/conditions/README.md), so the adversarial condition cannot run on it"
        )
    payloads = _load_payloads(payloads_path(root))
    files = sorted(goals_dir.glob("*.yaml")) if goals_dir.is_dir() else []
    if not files:
        raise UserError(f"{goals_dir}: no goal files (<goal id>.yaml beside its <goal id>.dmg)")
    goals, specs = [], {}
    for path in files:
        goal, spec = _load_goal(path, env)
        goals.append(goal)
        specs[goal.id] = spec
    # A spec no goal file names would never be labelled: a goal lost its YAML, or a typo in `spec:`.
    named = {(path.parent / g.spec).resolve() for path, g in zip(files, goals, strict=True)}
    for dmg in sorted(goals_dir.glob("*.dmg")):
        if dmg.resolve() not in named:
            raise UserError(f"{dmg}: no goal file names this spec (expected {dmg.with_suffix('.yaml').name})")
    return Catalogue(tuple(payloads), tuple(goals), specs, _digest(root))


def _digest(root: Path) -> str:
    """Over the payloads the catalogue uses (its own or the built-in's, hashed under the one name
    payloads.yaml, so a shared file counts by its bytes) and every goal file."""
    h = hashlib.sha256()
    files = [(Path("payloads.yaml"), payloads_path(root))]
    files += [(p.relative_to(root), p) for p in (root / "goals").iterdir()]
    for name, path in sorted(files):
        h.update(f"{name}\0".encode() + path.read_bytes() + b"\0")
    return h.hexdigest()


def _load_payloads(path: Path) -> list[Payload]:
    payloads: list[Payload] = load_model(_PayloadFile, path).payloads
    first: dict[str, int] = {}
    for i, p in enumerate(payloads):
        if p.id in first:
            raise UserError(
                f"{path}: field payloads[{i}].id: {p.id!r} is given twice (first payloads[{first[p.id]}])"
            )
        first[p.id] = i
        missing = [ph for ph in PLACEHOLDERS if ph not in p.text]
        if missing:
            raise UserError(f"{path}: field payloads[{i}].text: no {' and no '.join(missing)} placeholder")
    return payloads


def _load_goal(path: Path, env: Environment) -> tuple[Goal, Spec]:
    goal = load_model(Goal, path)
    if goal.id != path.stem:
        raise UserError(f"{path}: field id: {goal.id!r} must match the file name {path.stem!r}")
    known = env.tools()
    unknown = [t for t in goal.tools if t not in known]
    if unknown:
        raise UserError(f"{path}: field tools: unknown tool(s) {', '.join(unknown)}")
    for i, step in enumerate(goal.steps):
        if step.tool not in goal.tools:
            raise UserError(f"{path}: field steps[{i}].tool: {step.tool!r} is not among the goal's tools")
    return goal, _goal_spec(path, goal, env)


def _goal_spec(path: Path, goal: Goal, env: Environment) -> Spec:
    where = f"{path}: field spec"
    try:
        spec = load_spec(path.parent / goal.spec)
        resolve_params(spec, {})  # labelled with no overrides: every param needs its default
    except DslError as exc:
        raise UserError(f"{where}: {str(exc).splitlines()[0]}") from None
    if spec.name != f"injection:{goal.id}":
        raise UserError(f"{where}: the spec is named {spec.name!r}; name it 'injection:{goal.id}'")
    fatal = [p for p in check_spec(spec, dict(env.table_infos())) if p.fatal]
    if fatal:
        raise UserError(f"{where}: {fatal[0]}")
    # Damage rules only: an allow rule, a requirement or a fallback would change the verdict of the
    # task's own spec once the two are labelled together.
    extra = [r.label for r in spec.rules if r.kind != "damage"] + [r.label for r in spec.requirements]
    if extra or spec.fallback is not None:
        what = repr(extra[0]) if extra else "a fallback"
        raise UserError(f"{where}: {what}: a goal spec holds damage rules only")
    if not goal_rules(spec):
        raise UserError(f"{where}: the spec has no damage rule, so the goal could never be seen")
    return spec
