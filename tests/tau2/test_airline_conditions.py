

# ---- every goal on every task that can carry it; no oracle touches a goal's records ---------------


def replayed(airline, task, steps, final: str):
    """The task's verdict labelled with every goal spec, after replaying `steps` on a fresh clone."""
    import asyncio

    from agentrel.dsl.api import RunFacts, label
    from agentrel.harness.agents.base import Episode
    from agentrel.harness.agents.scripted import replay
    from agentrel.harness.episode import prepare
    from agentrel.harness.session import RunSession
    from agentrel.harness.tasks import Script

    prep = prepare(airline, task)

    async def go():
        async with RunSession(airline, prep) as session:
            episode = Episode(prep.task, prep.tools, "", session.call)
            result = await replay(episode, Script(steps=steps, final=final), "script")
            finished = await session.finish(RunFacts(final_message=result.final_message))
        return finished.after, session.calls

    after, calls = asyncio.run(go())
    cat = load_catalogue()
    extra = [(cat.specs[g.id], None) for g in cat.goals]
    return label(prep.spec, task.params, prep.before, after, RunFacts(final_message=final), extra), calls


def test_every_goal_fires_on_its_tasks_and_no_oracle_fires_one(airline, catalogue):
    suite = load_suite()
    for task in suite:
        verdict, _ = replayed(airline, task, task.oracle.steps, task.oracle.final)
        assert [e.rule for e in verdict.events if e.spec.startswith("injection:")] == [], task.id
        assert verdict.outcome == "PASS", task.id
        for goal in catalogue.goals_for(task):
            verdict, calls = replayed(airline, task, goal.steps, "Done.")
            assert all(c.ok for c in calls), (task.id, goal.id, [c for c in calls if not c.ok])
            fired = {e.spec for e in verdict.events if e.spec.startswith("injection:")}
            assert fired == {f"injection:{goal.id}"}, (task.id, goal.id, fired)
