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


def tool_calls(n: int, duplicates: int = 0, tool: str = "issue_refund") -> list[dict[str, Any]]:
    """n tool calls in the record shape; the last ``duplicates`` repeat the first call's arguments."""
    calls = []
    for i in range(n):
        args = {"order": 0 if i >= n - duplicates else i}
        digest = hashlib.sha256(json.dumps(args, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        calls.append({"ordinal": i, "tool": tool, "ok": True, "args_digest": digest})
    return calls


FAULT = {
    "kind": "fault",
    "ordinal": 1,
    "tool": "issue_refund",
    "detail": {"fault": "lost_response", "executed": True},
}
CANARY = {
    "kind": "canary_echo",
    "ordinal": 2,
    "tool": None,
    "detail": {"where": "final_message", "payload": "p1"},
}
INJECTION = {
    "kind": "injection",
    "ordinal": 0,
    "tool": "get_order",
    "detail": {"payload": "p1", "goal": "exfil", "delivery": "appended"},
}


def op_record(
    model: str,
    task: str,
    run_index: int,
    outcome: str | None = "PASS",
    *,
    condition: str = "clean",
    calls: int | None = 0,
    duplicates: int = 0,
    spec: str | None = None,
    exposure: str | None = None,
    run_events: list[dict[str, Any]] | None = None,
    status: str = "valid",
    error: dict[str, str] | None = None,
    cost: float | None = 0.02,
    kind: str = "model",
) -> dict[str, Any]:
    """A record in the current harness shape: status, exposure, events, tool calls with digests, and
    (with ``spec``) one damage event produced by that spec. calls=None drops the tool_calls field."""
    damage = [{**event("25.00"), "spec": spec}] if spec is not None else None
    rec = record(
        model, task, run_index, outcome, condition=condition, events=damage, error=error, cost=cost, kind=kind
    )
    rec.update(status=status, attempt=1, exposure=exposure, events=run_events or [])
    if calls is None:
        del rec["tool_calls"]
    else:
        rec["tool_calls"] = tool_calls(calls, duplicates)
    return rec


def write_ops_results(
    directory: Path,
    records: list[dict[str, Any]],
    optimal_steps: dict[str, int] | None = None,
    conditions: list[Any] | None = None,
) -> Path:
    """write_results, with the manifest's tasks (optimal_steps) and condition declarations."""
    write_results(directory, records)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["tasks"] = [{"id": t, "optimal_steps": k} for t, k in (optimal_steps or {}).items()]
    if conditions is not None:
        manifest["conditions"] = conditions
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return directory


HARNESS_ERROR = {"kind": "harness", "message": "dump failed"}
PROVIDER_ERROR = {"kind": "provider", "message": "503"}
AGENT_ERROR = {"kind": "agent", "message": "tool loop"}


def ops_records() -> list[dict[str, Any]]:
    """The known-answer input of tests/analysis/test_axes*.py (expected values worked out there).

    Invalid runs carry the most tempting values (PASS, huge cost, many calls, exposed with injected
    damage), so an estimate they leaked into would move.
    """
    r = op_record
    bad = {"cost": 1.0, "calls": 40}
    return [
        # clean, m: t1 (optimal 2) and t2 (optimal 4).
        r("m", "t1", 0, calls=2, cost=0.01),
        r("m", "t1", 1, calls=4, duplicates=1, cost=0.02),
        r("m", "t1", 2, "FAIL_SAFE", calls=3, error=AGENT_ERROR, cost=0.03),
        r("m", "t1", 3, calls=0, cost=0.04),
        r("m", "t1", 4, status="harness_invalid", error=HARNESS_ERROR, **bad),
        r("m", "t2", 0, calls=8, cost=0.05),
        r("m", "t2", 1, "FAIL_DAMAGE", calls=5, spec="t2", cost=0.06),
        r("m", "t2", 2, calls=2, duplicates=1, cost=0.07),
        r("m", "t2", 3, "FAIL_SAFE", calls=4, cost=0.08),
        # clean, a scripted agent with 2 runs: the condition's smallest cell, so pass^k uses k = 2.
        r("s", "t1", 0, calls=2, kind="scripted"),
        r("s", "t1", 1, calls=2, kind="scripted"),
        # noisy (faults), m, paired with clean by (task, run).
        r("m", "t1", 0, condition="noisy", calls=3, run_events=[FAULT]),
        r("m", "t1", 1, "FAIL_DAMAGE", condition="noisy", calls=6, spec="t1", run_events=[FAULT]),
        r("m", "t1", 2, condition="noisy", calls=3),
        r("m", "t1", 3, condition="noisy", status="provider_invalid", error=PROVIDER_ERROR, **bad),
        r("m", "t1", 4, condition="noisy", calls=1),
        r("m", "t2", 0, condition="noisy", calls=8),
        r("m", "t2", 1, "FAIL_DAMAGE", condition="noisy", calls=5, spec="t2"),
        r("m", "t2", 2, "FAIL_SAFE", condition="noisy", calls=4, run_events=[FAULT]),
        r("m", "t2", 5, condition="noisy", calls=4),
        # adversarial (prompt injection), m.
        r("m", "t1", 0, condition="adversarial", exposure="exposed", run_events=[INJECTION]),
        r(
            "m",
            "t1",
            1,
            "FAIL_DAMAGE",
            condition="adversarial",
            exposure="exposed",
            spec="injection:exfil",
            run_events=[INJECTION, CANARY],
        ),
        r("m", "t1", 2, "FAIL_DAMAGE", condition="adversarial", exposure="exposed", spec="t1"),
        r("m", "t1", 3, condition="adversarial", exposure="not_exposed"),
        r("m", "t1", 4, condition="adversarial", exposure="not_exposed"),
        r(
            "m",
            "t1",
            5,
            "FAIL_DAMAGE",
            condition="adversarial",
            exposure="exposed",
            spec="injection:exfil",
            status="harness_invalid",
            error=HARNESS_ERROR,
            cost=1.0,
        ),
        r("m", "t2", 0, condition="adversarial", exposure="exposed", run_events=[INJECTION, CANARY]),
    ]


@pytest.fixture
def ops_results(tmp_path: Path) -> Path:
    return write_ops_results(
        tmp_path / "results" / "ops",
        ops_records(),
        optimal_steps={"t1": 2, "t2": 4},
        conditions=[
            {"name": "clean"},
            {"name": "noisy", "faults": ["lost_response"]},
            {"name": "adversarial"},
        ],
    )
