"""`agentrel faults selftest` end to end (a real CLI process, real tool servers, the session's Postgres):
every real injection witnessed, every no-op and tampered one rejected, the lost-response known answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentrel.harness.faults.receipts import FAULT_KINDS, ActuatorReceipt, ReceiptLog, WitnessReceipt

AGENTREL = (sys.executable, "-m", "agentrel.harness.cli")


@pytest.fixture(scope="session")
def selftest(sandbox, agentrel_home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("selftest")
    flags = ["--json-file", str(out / "cases.json"), "--receipts", str(out / "receipts.jsonl")]
    proc = subprocess.run(
        [*AGENTREL, "faults", "selftest", *flags],
        capture_output=True,
        text=True,
        env={**os.environ, "AGENTREL_HOME": str(agentrel_home)},
        timeout=240,
    )
    cases = json.loads((out / "cases.json").read_text()) if (out / "cases.json").exists() else []
    return {"proc": proc, "cases": {c["name"]: c for c in cases}, "receipts": out / "receipts.jsonl"}


def test_cli_exits_zero_with_one_line_per_case(selftest: dict[str, Any]) -> None:
    proc = selftest["proc"]
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == len(selftest["cases"]) + 1 == 4 + 4 + 4 + 2 + 1 + 1
    assert lines[-1] == "15/15 cases as expected"


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_real_injection_is_witnessed(selftest: dict[str, Any], kind: str) -> None:
    case = selftest["cases"][f"real {kind}"]
    assert case["got"] == "witnessed", case


@pytest.mark.parametrize("mode", ["noop", "tampered"])
@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_noop_and_tampered_are_invalid(selftest: dict[str, Any], kind: str, mode: str) -> None:
    case = selftest["cases"][f"{mode} {kind}"]
    assert case["got"] == "invalid_injection", case
    assert case["detail"], "a rejection names its reasons"


def test_known_answers_on_the_process_path(selftest: dict[str, Any]) -> None:
    naive = selftest["cases"]["known lost_response naive-retry"]
    assert (
        naive["ok"] and "refund issued twice" in naive["detail"] and naive["detail"].startswith("FAIL_DAMAGE")
    )
    assert selftest["cases"]["known lost_response reconcile"]["detail"].startswith("PASS")
    assert selftest["cases"]["parity oracle"]["got"] == "same"


def test_receipts_fsynced_actuator_before_witness(selftest: dict[str, Any]) -> None:
    receipts = ReceiptLog(selftest["receipts"]).read()
    order: dict[str, list[str]] = {}
    for r in receipts:
        order.setdefault(r.fault_id, []).append("a" if isinstance(r, ActuatorReceipt) else "w")
    # 4 kinds x (real + noop) + 2 known answers, each one actuator receipt then one witness receipt
    assert len(receipts) == 2 * (8 + 2)
    assert all("".join(seq) in {"aw" * n for n in range(1, 5)} for seq in order.values()), order
    witnessed = [r for r in receipts if isinstance(r, WitnessReceipt) and r.verdict == "witnessed"]
    assert len(witnessed) == 4 + 2
    restart = next(r.witness for r in witnessed if r.witness is not None and r.witness.kind == "restart")
    assert restart.old_wait_status == 0  # SIGTERM: the old server closed cleanly, not aborted
