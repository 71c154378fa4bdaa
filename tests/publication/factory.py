"""Synthetic results for the publication tests: a manifest, its freeze, and one record per cell.

Records are built as the runner writes them (plus the fault, frozen_by and receipts fields the runner is
growing), so the validator meets the real shapes without a sandbox. Freezing anchors the freeze in the
registry (the test's own, tests/publication/conftest.py) at the real time, so the runs of a frozen
directory start after it (`after_freeze`)."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentrel.harness.faults.receipts import (
    ActuatorReceipt,
    LostResponseActuation,
    LostResponseWitness,
    WitnessReceipt,
    verdict,
)
from agentrel.harness.protocol.freeze import Freeze, freeze_digest, write_freeze
from agentrel.harness.protocol.identity import identity_of
from agentrel.harness.publication.cells import Cell, cell_id, registered_cells
from agentrel.harness.results.record import STAMP
from agentrel.harness.run.matrix import run_seed

FROZEN_AT = datetime(2026, 1, 2, 9, 0, 0, tzinfo=UTC)
STARTED = "2026-01-02T09:30:00Z"
DIGEST = "d" * 64


def manifest(
    *,
    models: tuple[str, ...] = ("scripted/oracle", "scripted/overreach"),
    tasks: tuple[str, ...] = ("itsm-easy", "itsm-hard"),
    conditions: tuple[str, ...] = ("clean", "noisy"),
    k: int = 3,
    max_attempts: int = 3,
    faults: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "format": "agentrel-manifest/1",
        "package_version": "0.1.0",
        "server_version": "PostgreSQL 15.18",
        "seed_digest": "5" * 64,
        "conditions": [{"name": c} for c in conditions],
        "k": k,
        "max_steps": 30,
        "max_attempts": max_attempts,
        "sampling": {"temperature": 0.6},
        "agents": [{"name": m, "kind": "scripted"} for m in models],
        "tasks": [
            {
                "id": t,
                "spec_digest": "1" * 64,
                "fixture_digest": "2" * 64,
                "template_digest": f"{i:064x}",
                "params": {},
                "optimal_steps": 3,
            }
            for i, t in enumerate(tasks)
        ],
    }
    if faults is not None:
        out["faults"] = {"cells": faults}
    return out


def fault_outcome(fault_id: str, *, landed: bool = True, fired: bool = True) -> dict[str, Any]:
    """A lost-response fault's outcome as the runner records it (harness.results.record.FaultOutcome);
    `landed=False` is the no-op injector's: the same claim, and a witness that saw the answer arrive."""
    act = LostResponseActuation(call_id="call-3", armed=True)
    wit = LostResponseWitness(
        call_id="call-3",
        committed=True,
        proxy_upstream_bytes=120,
        proxy_forwarded_bytes=0 if landed else 120,
        client_timed_out=landed,
        client_answered=not landed,
    )
    outcome, reasons = verdict(act, wit)
    base = {
        "fault_id": fault_id,
        "kind": "lost_response",
        "trigger": "first irreversible call",
        "fired": fired,
    }
    if not fired:
        return {**base, "verdict": None, "reasons": [], "actuator": None, "witness": None}
    return {
        **base,
        "verdict": outcome,
        "reasons": reasons,
        "actuator": ActuatorReceipt(fault_id=fault_id, at=1.5, actuation=act).model_dump(mode="json"),
        "witness": WitnessReceipt(
            fault_id=fault_id, at=2.25, witness=wit, verdict=outcome, reasons=reasons
        ).model_dump(mode="json"),
    }


def receipt_log(path: Path, rec: dict[str, Any]) -> None:
    """The fsynced receipt log the runner writes beside the record, for a fault that fired."""
    fault = rec["fault"]
    if not fault or not fault["fired"]:
        return
    (path / "receipts").mkdir(exist_ok=True)
    lines = [json.dumps({"receipt": kind, "body": fault[kind]}) + "\n" for kind in ("actuator", "witness")]
    (path / "receipts" / f"{rec['run_id']}.{rec['attempt']}.jsonl").write_text("".join(lines))


def record(
    cell: Cell,
    protocol_hash: str,
    frozen_by: str | None,
    *,
    attempt: int = 1,
    status: str = "valid",
    outcome: str = "PASS",
    started_at: str = STARTED,
    landed: bool = True,
) -> dict[str, Any]:
    damaged = outcome == "FAIL_DAMAGE"
    events = (
        [{"rule": "r", "table": "incidents", "key": [1], "op": "update", "severity": "high",
          "irreversibility": "governance", "dollars": "12.50", "spec": cell.task}]
        if damaged
        else []
    )  # fmt: skip
    verdict_ = None if status in ("harness_invalid", "provider_invalid") else {
        "outcome": outcome, "sub_label": "", "inconsistent": False, "mutated": outcome != "FAIL_SAFE",
        "changes": 1, "events": events, "max_severity": "high" if damaged else None,
        "dollars": "12.50" if damaged else "0", "irreversibility": ["governance"] if damaged else [],
    }  # fmt: skip
    return {
        "run_id": cell_id(cell),
        "model": cell.model,
        "agent_kind": "scripted",
        "task": cell.task,
        "condition": cell.condition,
        "run_index": cell.run_index,
        "seed": run_seed(cell.task, "clean" if cell.fault else cell.condition, cell.run_index),
        "protocol_hash": protocol_hash,
        "attempt": attempt,
        "status": status,
        "verdict": verdict_,
        "error": {"kind": "provider", "message": "429"} if status == "provider_invalid" else None,
        "events": [],
        "exposure": None,
        "tool_calls": [{"ordinal": 1, "tool": "list_incidents", "ok": True, "args_digest": "0" * 16}],
        "usage": {"input_tokens": 0, "output_tokens": 0, "model_calls": 0},
        "cost_usd": 0.0,
        "timings": {"clone_s": 0.01, "agent_s": 0.2, "dump_s": 0.05, "label_s": 0.001, "total_s": 0.3},
        "before_digest": DIGEST,
        "after_digest": DIGEST,
        "transcript_digest": None,
        "started_at": started_at,
        "fault": fault_outcome(cell.fault, landed=landed, fired=status != "not_exposed")
        if cell.fault
        else None,
        "frozen_by": frozen_by,
    }


def outcome_of(cell: Cell) -> str:
    """A fixed, varied outcome per cell: the overreaching script damages the hard task."""
    if cell.model.endswith("overreach") and cell.task.endswith("hard"):
        return "FAIL_DAMAGE" if cell.run_index % 2 else "PASS"
    return "PASS" if cell.run_index != 2 else "FAIL_SAFE"


def after_freeze() -> str:
    """A run start after a freeze just anchored: the registry's clock, now (records are to the second)."""
    return datetime.now(UTC).strftime(STAMP)


def complete_records(
    m: dict[str, Any], protocol_hash: str, frozen_by: str | None, started_at: str = STARTED
) -> list[dict[str, Any]]:
    cells = registered_cells(m).cells
    return [record(c, protocol_hash, frozen_by, outcome=outcome_of(c), started_at=started_at) for c in cells]


def results_dir(path: Path, m: dict[str, Any], records: list[dict[str, Any]] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "manifest.json").write_text(json.dumps(m))
    if records is not None:
        write_records(path, records)
    return path


def write_records(path: Path, records: list[dict[str, Any]]) -> None:
    with (path / "runs.jsonl").open("w") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
            receipt_log(path, r)


def frozen_results(path: Path, m: dict[str, Any], registry: Path | None = None) -> tuple[Path, Freeze, str]:
    """A results directory with its manifest frozen (and anchored in `registry`, default: the test's) and
    every cell run under the freeze: eligible."""
    results_dir(path, m)
    freeze, _ = write_freeze(path, "tester", now=FROZEN_AT, registry=registry)
    records = complete_records(m, identity_of(m).protocol_hash, freeze_digest(freeze), after_freeze())
    write_records(path, records)
    store_dump(path)
    return path, freeze, freeze_digest(freeze)


def registered(registry: Path) -> dict[str, Any]:
    """The scorecards a registry registers (a registry may also hold freeze anchors, or not exist)."""
    from agentrel.harness.protocol.registry import read_registry

    return dict(read_registry(registry).records)


def store_dump(path: Path, digest: str = DIGEST) -> None:
    """The dump file every synthetic record names (only its presence is checked)."""
    (path / "dumps").mkdir(exist_ok=True)
    with gzip.open(path / "dumps" / f"{digest}.jsonl.gz", "wb") as fh:
        fh.write(b'{"digest": "' + digest.encode() + b'"}\n')


def frozen_plan(
    sandbox: Any, tmp_path: Path, models: list[str], task: str, concurrency: int = 1, **more: Any
) -> tuple[dict[str, Any], Path]:
    """A real audit of `task` (K=2) planned and frozen under `tmp_path/registry.jsonl`: its fields, for
    `audit(**kw)` to run it, and the registry."""
    from agentrel.harness.run.audit import audit

    results, registry = tmp_path / "r", tmp_path / "registry.jsonl"
    kw: dict[str, Any] = dict(
        models=models,
        k=2,
        tasks=[task],
        concurrency=concurrency,
        results=results,
        sandbox=sandbox,
        show_progress=False,
        **more,
    )
    audit(**kw, plan=True)
    write_freeze(results, "tester", registry=registry)
    return kw, registry
