"""Shared fixtures for the analysis tests: the vendored data files and a results-directory builder.

The known-answer vectors and the published runs are verbatim copies of the project's shared/ files in
tests/data/ (see its README); the digests pin them, so an edited copy fails instead of moving the answers.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
DIGESTS = {
    "kat_stats.json": "384b2d3f07826a6ab31273c93607ec56bf61b2495f4b52079ab09f7dae7b813b",
    "arb_outcomes.csv": "4f1e3c6b3d6e0575f5eee0d8e86fd04d519337498efa59d1003a0c3615c1015e",
}


def data_file(name: str) -> Path:
    path = DATA / name
    assert hashlib.sha256(path.read_bytes()).hexdigest() == DIGESTS[name], f"{path} is not the shared copy"
    return path


@pytest.fixture(scope="session")
def kat() -> dict[str, Any]:
    return json.loads(data_file("kat_stats.json").read_text())


@pytest.fixture(scope="session")
def arb_csv() -> Path:
    return data_file("arb_outcomes.csv")


PROTOCOL = "a" * 64


def record(
    model: str,
    task: str,
    run_index: int,
    outcome: str | None = "PASS",
    *,
    condition: str = "clean",
    kind: str = "model",
    events: list[dict[str, Any]] | None = None,
    error: dict[str, str] | None = None,
    mutated: bool | None = None,
    protocol: str = PROTOCOL,
    cost: float | None = 0.02,
) -> dict[str, Any]:
    """One run record in the harness's runs.jsonl shape (with fields analysis ignores)."""
    events = events or []
    dollars = sum((float(e["dollars"]) for e in events), 0.0)
    verdict = None
    if outcome is not None:
        verdict = {
            "outcome": outcome,
            "sub_label": "",
            "inconsistent": False,
            "mutated": bool(events) if mutated is None else mutated,
            "changes": len(events),
            "events": events,
            "max_severity": events[0]["severity"] if events else None,
            "dollars": f"{dollars:.2f}",
            "irreversibility": sorted({e["irreversibility"] for e in events}),
            "requirements": [],
        }
    return {
        "run_id": f"{model}:{task}:{condition}:{run_index}",
        "model": model,
        "agent_kind": kind,
        "task": task,
        "condition": condition,
        "run_index": run_index,
        "seed": "ab" * 8,
        "protocol_hash": protocol,
        "verdict": verdict,
        "error": error,
        "usage": {"input_tokens": 10, "output_tokens": 5},
        "cost_usd": cost,
        "tool_calls": [],
        "timings": {"total_s": 1.0},
    }


def event(
    dollars: str = "0.00",
    severity: str = "high",
    irreversibility: str = "substrate",
    rule: str = "wrong_row",
    key: list[Any] | None = None,
) -> dict[str, Any]:
    return {
        "rule": rule,
        "table": "incident",
        "key": key or [7],
        "op": "update",
        "changed_columns": ["state"],
        "severity": severity,
        "irreversibility": irreversibility,
        "dollars": dollars,
    }


def write_results(
    directory: Path,
    records: list[dict[str, Any]],
    agents: list[tuple[str, str]] | None = None,
    protocol: str = PROTOCOL,
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    names = agents or sorted({(r["model"], r["agent_kind"]) for r in records})
    manifest = {"protocol_hash": protocol, "agents": [{"name": n, "kind": k} for n, k in names], "k": 4}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    (directory / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return directory


@pytest.fixture
def small_results(tmp_path: Path) -> Path:
    """Two agents (a model and a reference agent) x 3 tasks x 4 runs, with events, errors, failures."""
    recs = []
    for i in range(4):
        # model-a / t1: damaging half the time, priced; t2: always passes; t3: one agent error.
        if i % 2 == 0:
            recs.append(
                record(
                    "model-a",
                    "t1",
                    i,
                    "FAIL_DAMAGE",
                    events=[event("100.50"), event("0.25", "low", "reversible", rule="touch")],
                )
            )
        else:
            recs.append(record("model-a", "t1", i, "FAIL_SAFE"))
        recs.append(record("model-a", "t2", i, "PASS"))
        err = {"kind": "agent", "message": "timeout"} if i == 0 else None
        recs.append(record("model-a", "t3", i, "FAIL_SAFE", error=err))
        recs.append(
            record(
                "reference/stochastic",
                "t1",
                i,
                "FAIL_DAMAGE" if i < 3 else "PASS",
                kind="reference",
                events=[event("10.00", "medium", "governance")] if i < 3 else None,
            )
        )
        recs.append(record("reference/stochastic", "t2", i, "PASS", kind="reference"))
        recs.append(record("reference/stochastic", "t3", i, "PASS", kind="reference"))
    recs.append(record("model-a", "t2", 4, None, error={"kind": "harness", "message": "db clone failed"}))
    recs.append(record("model-a", "t3", 4, "PASS", error={"kind": "harness", "message": "dump failed"}))
    return write_results(tmp_path / "results" / "small", recs)
