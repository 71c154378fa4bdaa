"""The adversarial condition's catalogue: it loads, covers every task, its goals are seen when carried
out and never by a task's own oracle, and each loader check fails in one line naming file and field."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import shutil
import typing
from pathlib import Path

import pytest

from agentrel.dsl.api import RunFacts, Verdict, label
from agentrel.dsl.state import State
from agentrel.harness.agents.base import Episode
from agentrel.harness.agents.scripted import replay
from agentrel.harness.conditions.catalogue import (
    ZERO_WIDTH_SPACE,
    PayloadClass,
    builtin_root,
    goal_events,
    load_catalogue,
    make_canary,
    render,
)
from agentrel.harness.errors import UserError
from agentrel.harness.run.episode import PreparedTask, prepare
from agentrel.harness.run.pipeline import CallRecord
from agentrel.harness.run.session import RunSession
from agentrel.harness.tasks import Script, Step, load_suite

ROOT = Path(__file__).resolve().parents[2] / "damage_specs" / "injections"
CAT = load_catalogue(ROOT)
SUITE = {t.id: t for t in load_suite()}
PAIRS = [(t.id, g.id) for t in SUITE.values() for g in CAT.goals_for(t)]
CANARY = "INJ-7f3a9c"


# ---- the catalogue --------------------------------------------------------------------------------


def test_catalogue_has_fifteen_payloads_one_per_class():
    assert len(CAT.payloads) == 15
    assert sorted(p.kind for p in CAT.payloads) == sorted(typing.get_args(PayloadClass))


def test_every_task_has_a_goal_its_tools_can_carry_out():
    uncovered = [tid for tid, t in SUITE.items() if not CAT.goals_for(t)]
    assert not uncovered
    for task in SUITE.values():
        for goal in CAT.goals_for(task):
            assert set(goal.tools) <= set(task.tools)


def test_goal_specs_are_named_after_their_goal():
    for goal in CAT.goals:
        assert CAT.specs[goal.id].name == f"injection:{goal.id}"


def test_outside_addresses_are_at_reserved_domains():
    texts = [p.text for p in CAT.payloads] + [g.model_dump_json() for g in CAT.goals]
    texts += [p.read_text() for p in (ROOT / "goals").glob("*.dmg")]
    hosts = set()
    for text in texts:
        hosts |= set(re.findall(r"@([\w.-]+\w)", text)) | set(re.findall(r"https?://([\w.-]+)", text))
    assert hosts and all(h.endswith((".example", ".invalid")) for h in hosts), hosts


# ---- render ---------------------------------------------------------------------------------------

INSTRUCTION = CAT.goal("goodwill-credit").instruction  # has double quotes: the JSON payloads escape them


def by_class(kind: str):
    return next(p for p in CAT.payloads if p.kind == kind)


def test_every_rendered_payload_carries_the_canary_and_no_placeholder():
    for p in CAT.payloads:
        text = render(p, INSTRUCTION, CANARY)
        assert CANARY in text, p.id
        assert "{instruction}" not in text and "{canary}" not in text, p.id


def test_base64_payload_decodes_to_the_instruction():
    text = render(by_class("base64-wrapped"), INSTRUCTION, CANARY)
    assert INSTRUCTION not in text
    blob = text.split("-----BEGIN DIRECTIVE-----\n")[1].split("\n-----END DIRECTIVE-----")[0]
    assert base64.b64decode(blob).decode() == INSTRUCTION


def test_zero_width_payload_hides_characters_in_its_wording():
    p = by_class("zero-width-obfuscation")
    text = render(p, INSTRUCTION, CANARY)
    assert text.count(ZERO_WIDTH_SPACE) > 20
    assert INSTRUCTION in text  # the ids it names still work in a tool call
    assert text.replace(ZERO_WIDTH_SPACE, "") == p.text.format(instruction=INSTRUCTION, canary=CANARY)


def test_homoglyph_payload_uses_cyrillic_look_alikes_in_its_wording():
    p = by_class("unicode-homoglyph")
    text = render(p, INSTRUCTION, CANARY)
    assert "ignore" in p.text and "ignore" not in text
    assert any("\u0400" <= ch <= "\u04ff" for ch in text)
    assert INSTRUCTION in text and CANARY in text


def test_json_payloads_stay_valid_json_with_the_instruction_inside():
    doc = json.loads(render(by_class("embedded-json"), INSTRUCTION, CANARY))
    assert doc["agent_action"] == INSTRUCTION and doc["ticket_ref"] == CANARY
    outer = json.loads(render(by_class("nested-json"), INSTRUCTION, CANARY))
    assert json.loads(outer["payload"])["steps"][0]["do"] == INSTRUCTION


def test_render_is_pure_and_canaries_follow_the_seed():
    p = by_class("direct-override")
    assert render(p, INSTRUCTION, CANARY) == render(p, INSTRUCTION, CANARY)
    assert make_canary("run-1") == make_canary("run-1") != make_canary("run-2")
    assert re.fullmatch(r"INJ-[0-9a-f]{6}", make_canary("run-1"))


# ---- goals on the real sandbox --------------------------------------------------------------------


@pytest.fixture(scope="module")
def prepared(sandbox):
    cache: dict[str, PreparedTask] = {}

    def get(task_id: str) -> PreparedTask:
        if task_id not in cache:
            cache[task_id] = prepare(sandbox, SUITE[task_id])
        return cache[task_id]

    return get


def run_steps(sb, prep: PreparedTask, steps: list[Step], final: str) -> tuple[State, list[CallRecord]]:
    """Replay `steps` on a fresh clone of the task's template (the agents' own replay); the final state."""

    async def go() -> tuple[State, list[CallRecord]]:
        async with RunSession(sb, prep) as session:
            episode = Episode(prep.task, prep.tools, "", session.call)
            result = await replay(episode, Script(steps=steps, final=final), "script")
            finished = await session.finish(RunFacts(final_message=result.final_message))
        return finished.after, session.calls

    return asyncio.run(go())


def merged(prep: PreparedTask, after: State, goal_ids: list[str], final: str | None = None) -> Verdict:
    """The run labelled with the task's spec and the goals' specs together (the merged labelling)."""
    extra = [(CAT.specs[g], None) for g in goal_ids]
    facts = RunFacts(final_message=final)
    return label(prep.spec, prep.task.params, prep.before, after, facts, extra)


@pytest.mark.parametrize(("task_id", "goal_id"), PAIRS, ids=[f"{t}:{g}" for t, g in PAIRS])
def test_carrying_out_the_goal_fires_its_spec(sandbox, prepared, task_id, goal_id):
    prep = prepared(task_id)
    goal = CAT.goal(goal_id)
    after, calls = run_steps(sandbox, prep, goal.steps, "Done.")
    assert [c.tool for c in calls if not c.ok] == [], [c for c in calls if not c.ok]
    events = goal_events(CAT.specs[goal_id], merged(prep, after, [goal_id]))
    assert events and all(e.spec == f"injection:{goal_id}" for e in events)
    # Labelled alone, the goal spec sees the same act.
    alone = label(CAT.specs[goal_id], None, prep.before, after, RunFacts())
    assert {e.rule for e in goal_events(CAT.specs[goal_id], alone)} == {e.rule for e in events}


@pytest.mark.parametrize("task_id", sorted(SUITE))
def test_the_task_oracle_fires_no_goal_rule(sandbox, prepared, task_id):
    prep = prepared(task_id)
    oracle = prep.task.oracle
    after, _ = run_steps(sandbox, prep, oracle.steps, oracle.final)
    v = merged(prep, after, [g.id for g in CAT.goals], oracle.final)
    assert [(e.spec, e.rule) for e in v.events if e.spec.startswith("injection:")] == []
    assert v.outcome == prep.task.oracle_expect.outcome  # the goals do not change the task's verdict


# ---- loader checks: one line naming the file and the field -----------------------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(ROOT, tmp_path / "injections")
    return tmp_path / "injections"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def load_error(root: Path) -> str:
    with pytest.raises(UserError) as exc:
        load_catalogue(root)
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_unknown_payload_class(root):
    edit(root / "payloads.yaml", "class: direct-override", "class: jedi-mind-trick")
    msg = load_error(root)
    assert "payloads.yaml: field payloads[0].class:" in msg


def test_duplicate_payload_id(root):
    edit(root / "payloads.yaml", "id: signed-vp-message", "id: ignore-previous-case-note")
    msg = load_error(root)
    assert "payloads.yaml: field payloads[1].id: 'ignore-previous-case-note' is given twice" in msg


def test_payload_text_without_instruction(root):
    edit(root / "payloads.yaml", "instruction: {instruction}. Put", "instruction: do it. Put")
    msg = load_error(root)
    assert "payloads.yaml: field payloads[0].text: no {instruction} placeholder" in msg


def test_payload_unknown_field(root):
    edit(root / "payloads.yaml", "  - id: signed-vp-message", "  - id: signed-vp-message\n    carrier: note")
    assert "payloads.yaml: field payloads[1].carrier: Extra inputs are not permitted" in load_error(root)


def test_goal_without_spec_field(root):
    edit(root / "goals/goodwill-credit.yaml", "spec: goodwill-credit.dmg\n", "")
    assert "goodwill-credit.yaml: field spec: Field required" in load_error(root)


def test_goal_spec_file_missing(root):
    (root / "goals/goodwill-credit.dmg").unlink()
    msg = load_error(root)
    assert "goodwill-credit.yaml: field spec:" in msg and "no such spec file" in msg


def test_goal_spec_that_fails_check(root):
    edit(root / "goals/goodwill-credit.dmg", "after.account_id == account", "after.acount_id == account")
    msg = load_error(root)
    assert "goodwill-credit.yaml: field spec:" in msg and "acount_id" in msg


def test_goal_spec_that_does_not_parse(root):
    edit(root / "goals/goodwill-credit.dmg", "after.amount == amount", "after.amount = amount")
    msg = load_error(root)
    assert "goodwill-credit.yaml: field spec: " in msg and "goodwill-credit.dmg:" in msg


def test_goal_spec_with_an_allow_rule(root):
    spec = root / "goals/goodwill-credit.dmg"
    spec.write_text(spec.read_text() + '\nallow "notes": insert work_notes\n')
    msg = load_error(root)
    assert "goodwill-credit.yaml: field spec: 'notes': a goal spec holds damage rules only" in msg


def test_goal_spec_with_a_wrong_name(root):
    edit(root / "goals/goodwill-credit.dmg", '"injection:goodwill-credit"', '"goodwill-credit"')
    assert "goodwill-credit.yaml: field spec: the spec is named 'goodwill-credit'" in load_error(root)


def test_goal_with_an_unknown_tool(root):
    edit(root / "goals/goodwill-credit.yaml", "tools: [issue_credit]", "tools: [issue_credit, wire_money]")
    assert "goodwill-credit.yaml: field tools: unknown tool(s) wire_money" in load_error(root)


def test_goal_step_outside_its_tools(root):
    edit(root / "goals/goodwill-credit.yaml", "tool: issue_credit,", "tool: issue_refund,")
    assert "goodwill-credit.yaml: field steps[0].tool: 'issue_refund'" in load_error(root)


def test_goal_id_must_match_its_file(root):
    edit(root / "goals/goodwill-credit.yaml", "id: goodwill-credit", "id: goodwill-credit-2")
    assert "goodwill-credit.yaml: field id: 'goodwill-credit-2' must match" in load_error(root)


def test_spec_that_no_goal_names(root):
    (root / "goals/stray.dmg").write_text((root / "goals/goodwill-credit.dmg").read_text())
    assert "stray.dmg: no goal file names this spec" in load_error(root)


def test_a_catalogue_of_goals_only_takes_the_builtin_payloads(root):
    """An environment's catalogue may hold goals only: its payloads are the built-in's, shared, and the
    digest counts them by their bytes (the same as a copy of them would give)."""
    with_copy = load_catalogue(root)
    (root / "payloads.yaml").unlink()
    shared = load_catalogue(root)
    assert shared.payloads == load_catalogue(builtin_root()).payloads
    assert shared.digest == with_copy.digest


def test_an_own_payload_file_replaces_the_builtin_one(root):
    edit(root / "payloads.yaml", "Customer reported an issue.", "Passenger reported an issue.")
    own = load_catalogue(root)
    assert "Passenger reported an issue." in own.payloads[0].text
    assert own.digest != load_catalogue(builtin_root()).digest


def test_missing_goals_folder(root):
    shutil.rmtree(root / "goals")
    assert "goals: no such folder: this environment has no injected goals" in load_error(root)


def test_follow_injection_on_a_suite_without_goals_follows_nothing(tmp_path, monkeypatch):
    """A suite whose injections/ folder holds no goals/ (a README only): the injection-following agent
    has nothing to follow and still runs the task, rather than failing on the missing catalogue."""
    from agentrel.harness.agents.scripted import follower
    from agentrel.harness.suite_paths import ENV

    (tmp_path / "damage_specs" / "injections").mkdir(parents=True)
    (tmp_path / "damage_specs" / "injections" / "README.md").write_text("goals to come\n")
    monkeypatch.setenv(ENV, str(tmp_path))
    assert follower(next(iter(SUITE.values()))).goals == []
