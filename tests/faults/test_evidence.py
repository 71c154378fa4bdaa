"""Commit evidence and parity on the real process path.

The evidence table is written only by a committed call, cannot be read or forged by the run's role, and
never reaches a dump; the same scripts give the same verdict and after-digest through server + proxy as
through the in-process session."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from agentrel.harness.faults.receipts import ReceiptLog
from agentrel.harness.faults.selftest import describe, fault_run
from agentrel.sandbox import tracking
from agentrel.sandbox.dump import dump_database, dump_run
from agentrel.sandbox.environments.enterprise.schema import table_infos


def test_evidence_is_transactional_private_and_never_dumped(sandbox, double_charge) -> None:
    run = sandbox.dbs.create_run(double_charge.template)
    try:
        with psycopg.connect(sandbox.dbs.tool_conninfo(run)) as tool:
            with tool.transaction():
                tool.execute("SELECT agentrel_meta.note_call('c1', 'boot', 'issue_refund', 'e1')")
            with pytest.raises(psycopg.errors.QueryCanceled), tool.transaction():
                tool.execute("SELECT agentrel_meta.note_call('c2', 'boot', 'issue_refund', 'e1')")
                tool.execute("SET LOCAL statement_timeout = 1; SELECT pg_sleep(1)")
            for forge in (
                "SELECT * FROM agentrel_meta.call_commits",
                "DELETE FROM agentrel_meta.call_commits",
            ):
                with pytest.raises(psycopg.errors.InsufficientPrivilege), tool.transaction():
                    tool.execute(forge)
        with psycopg.connect(sandbox.server.conninfo(run)) as owner:
            assert tracking.committed_calls(owner, ["c1", "c2"]) == {"c1": "boot"}  # c2 rolled back
            assert tracking.touched(owner) == set()
        after = dump_run(sandbox.server.conninfo(run), double_charge.before)
        assert after.digest(double_charge.before) == double_charge.template.digest
        # a full read of every table, not only the tracked ones, agrees
        assert (
            dump_database(sandbox.server.conninfo(run), table_infos().values()).digest()
            == double_charge.template.digest
        )
    finally:
        sandbox.dbs.drop(run)


@pytest.mark.parametrize("script", ["duplicate_write", "refund_march"])  # the oracle: in the selftest
def test_same_scripts_same_verdict_and_digest_on_both_paths(sandbox, double_charge, script, tmp_path) -> None:
    from agentrel.harness.prove import (
        scripted_run,  # the in-process path: a RunSession and the agents' replay
    )

    plan = double_charge.task.scripts()[script]
    prepared = double_charge

    async def both() -> tuple[str, str, str, str]:
        remote = await fault_run(sandbox, prepared, None, ReceiptLog(tmp_path / "r"), None, plan)
        local = await scripted_run(sandbox, prepared, plan, script)
        return describe(remote.verdict), remote.after_digest, describe(local.verdict), local.after_digest

    remote_verdict, remote_digest, local_verdict, local_digest = asyncio.run(both())
    assert (remote_verdict, remote_digest) == (local_verdict, local_digest)
    assert remote_digest != prepared.template.digest  # the scripts wrote: the comparison means something
