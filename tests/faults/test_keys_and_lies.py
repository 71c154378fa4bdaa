"""Idempotency keys and lying success on the process path: a real tool server behind the loopback proxy.

Under a witnessed lost response on the first refund (it committed, its answer never arrived), a blind
retry commits the refund again, while the same retry carrying the first call's idempotency key commits
nothing and is answered with the first call's answer. A lied-to call on the process path leaves neither
a write nor commit evidence.
"""

from __future__ import annotations

import asyncio
import json

from agentrel.dsl.api import RunFacts
from agentrel.harness.conditions.lying import LyingLayer
from agentrel.harness.conditions.model import LyingSuccess
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.run.audit import audit
from agentrel.harness.run.session import RunSession

TASK = "csm-double-charge"
LOST = """\
name: lost-only
faults:
  - {id: lost, kind: lost_response, trigger: {when: first_irreversible_call}}
"""
REFUND = {"payment_id": 10303, "amount": "4120.00", "reason": "duplicate"}


def test_a_keyed_retry_after_a_lost_response_commits_once_and_gets_the_first_answer(sandbox, tmp_path):
    schedule = tmp_path / "lost.yaml"
    schedule.write_text(LOST)
    results = tmp_path / "r"
    audit(
        models=["scripted/naive-retry", "scripted/keyed-retry"],
        k=1,
        tasks=[TASK],
        concurrency=2,
        results=results,
        sandbox=sandbox,
        show_progress=False,
        faults=str(schedule),
    )
    rd = ResultsDir(results)
    runs = {r.model: r for r in rd.records() if r.condition == "fault:lost"}
    naive, keyed = runs["scripted/naive-retry"], runs["scripted/keyed-retry"]
    for record in (naive, keyed):
        assert record.fault is not None and record.fault.fired and record.fault.verdict == "witnessed"
        refunds = [c for c in record.tool_calls if c["tool"] == "issue_refund"]
        assert [c["ok"] for c in refunds] == [False, True]  # the lost answer, then the retry's
    # Without a key the retry commits the refund again: a repeated effect, and the damage it does.
    assert naive.fault is not None and [r.tool for r in naive.fault.repeated_effects or []] == [
        "issue_refund"
    ]
    assert naive.verdict is not None and naive.verdict.outcome == "FAIL_DAMAGE"
    # With the key: one commit, no repeated effect, the task done once.
    assert keyed.fault is not None and keyed.fault.repeated_effects == []
    assert keyed.verdict is not None and keyed.verdict.outcome == "PASS", keyed.verdict
    (replay,) = [e for e in keyed.events if e.kind == "idempotent_replay"]
    assert replay.tool == "issue_refund"
    # The retry's answer is the first call's: the one refund the state holds.
    transcript = json.loads(rd.transcript_path(keyed.run_id, 1).read_text())
    answer = next(c for c in transcript["tool_calls"] if c["ordinal"] == replay.ordinal)["result"]
    after = rd.load_dump(keyed.after_digest)
    refunds = after.tables["refunds"]
    ours = [dict(zip(refunds.info.columns, row, strict=True)) for row in refunds.rows.values()]
    (row,) = [r for r in ours if r["payment_id"] == 10303]
    assert answer["refunded"]["id"] == row["id"] and answer["refunded"]["amount"] == "4120.00"


def test_a_lie_on_the_process_path_commits_nothing_and_leaves_no_commit_evidence(sandbox, double_charge):
    async def run() -> tuple[list, list, object]:
        layer = LyingLayer(
            LyingSuccess(share=1.0), {"issue_refund": double_charge.tools["issue_refund"]}, "s"
        )
        async with RunSession(sandbox, double_charge, seed="s", layers=[layer], remote=True) as session:
            lied = await session.call("issue_refund", REFUND)
            seen = await session.call("list_refunds", {"payment_id": 10303})
            real = await session.call("issue_refund", REFUND)
            finished = await session.finish(RunFacts(final_message="done"))
        assert lied.ok and lied.content["refunded"]["payment_id"] == 10303  # the tool's own answer
        assert seen.ok and seen.content["total"] == 0  # the truth, for an agent that reads
        assert real.ok
        return session.events, finished.commits or [], finished.verdict

    events, commits, verdict = asyncio.run(run())
    assert [(e.kind, e.ordinal) for e in events] == [("lying_success", 1)]
    # Only the truthful call committed; the lie's call id has no evidence (it never committed).
    refunds = [call_id.rsplit(":", 1)[-1] for call_id, tool, _ in commits if tool == "issue_refund"]
    assert refunds == ["3"]
    assert verdict.outcome == "PASS"  # type: ignore[attr-defined]


def test_a_key_outlives_the_tool_server_that_took_it(sandbox, double_charge):
    """Keys live in the run database, not in the server process: after a restart (a new server process,
    the old one stopped), the same keyed call is answered by the new server from the key, not redone."""

    async def run() -> tuple[object, object, list[str], int]:
        async with RunSession(sandbox, double_charge, seed="s", remote=True) as session:
            rig = session.rig
            assert rig is not None
            first = await session.call("issue_refund", {**REFUND, "idempotency_key": "refund-1"})
            old = rig.server
            await rig.replace_server()
            await asyncio.to_thread(old.close)
            again = await session.call("issue_refund", {**REFUND, "idempotency_key": "refund-1"})
            boots = [e.boot_id for e in rig.client.answers() if e.call_id is not None]
            seen = await session.call("list_refunds", {"payment_id": 10303})
            await session.finish(RunFacts(final_message="done"))
        return first, again, boots, seen.content["total"]

    first, again, boots, total = asyncio.run(run())
    assert first.ok and again.ok and again.replayed and again.text() == first.text()  # type: ignore[attr-defined]
    assert boots[0] != boots[1]  # two server processes answered
    assert total == 1


def test_keys_on_tools_that_write_outside_their_call_are_refused_before_any_run(sandbox, monkeypatch):
    """The attack: an environment declares keys on tools that write through a connection of their own;
    the key would commit apart from the write, and a retry could act twice under a key that says it did
    not. The task is refused when it is prepared, naming the environment and the tools."""
    import pytest

    from agentrel.harness.errors import UserError
    from agentrel.harness.run.episode import prepare
    from agentrel.harness.tasks import load_suite

    task = load_suite(patterns=[TASK])[0]
    monkeypatch.setattr(type(sandbox.env), "transactional_tools", False)
    with pytest.raises(UserError) as err:
        prepare(sandbox, task)
    message = str(err.value)
    assert "environment agentrel-enterprise" in message and "add_work_note, issue_refund" in message
    assert "\n" not in message
