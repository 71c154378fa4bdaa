"""Scale benchmark for publication: validate and publish a 100,000-run frozen matrix of synthetic records.

The matrix: 5 agents x 45 tasks x 2 conditions (clean, noisy) x k=200, plus a lost-response fault
scheduled on 10 tasks (10 x 5 x 200 fault runs, each with its actuator and witness receipts in the record
and its fsynced receipt log beside it): 100,000 runs. 1% of runs have a provider_invalid first attempt
retried into a valid second one. Records are in the runner's format (verdicts with damage events, tool
calls with argument digests, timings, frozen_by); transcripts are not written (their hashing is file I/O,
not the validator's), dumps are 64 shared digests.

Times, separately and on the same file (each the best of three, as timeit reports: the shared machine's
other load only ever adds):
  evidence_root  read runs.jsonl into the validator's facts and build the Merkle root over every record's
                 RFC 8785 form, its receipts and the dump digests (one process per CPU, up to 8);
  validate       the pure validator over those facts: the exact cell set, attempts, freeze binding,
                 witnesses, strata, and the proof;
  publish        the whole `publish` (both of the above, the registry's verification and the freeze anchor,
                 the artifact check, analysis's six axes and fault scores, the scorecard's rates, its
                 signature, its three files and the signed registry entry and head).
Side by side in the same run: the evidence read on one process (the parallel speedup), its CPU seconds
over all processes (what it costs whatever else the machine runs; wall seconds on a shared machine are
worse), the reference RFC 8785 encoder (`rfc8785.dumps`) against the fast canonical path on a sample
of the same lines, and the scorecard's signature check (what `compare` does per input) against making
its RFC 8785 bytes alone.

Last line: runs=<n> validate_seconds=<a> evidence_root_seconds=<b>
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import rfc8785  # noqa: E402

from agentrel.harness.faults.receipts import (  # noqa: E402
    ActuatorReceipt,
    LostResponseActuation,
    LostResponseWitness,
    WitnessReceipt,
)
from agentrel.harness.protocol.canonical import canonical_line, model_bytes  # noqa: E402
from agentrel.harness.protocol.freeze import freeze_digest, load_freeze, write_freeze  # noqa: E402
from agentrel.harness.protocol.identity import identity_of  # noqa: E402
from agentrel.harness.protocol.policy import load_policy  # noqa: E402
from agentrel.harness.protocol.registry import read_registry  # noqa: E402
from agentrel.harness.publication.anchor import anchored_at  # noqa: E402
from agentrel.harness.publication.cells import registered_cells  # noqa: E402
from agentrel.harness.publication.eligibility import proof_of  # noqa: E402
from agentrel.harness.publication.evidence import read_evidence  # noqa: E402
from agentrel.harness.publication.matrix_check import check_matrix  # noqa: E402
from agentrel.harness.publication.publish import evidence_held, publish  # noqa: E402
from agentrel.harness.results import layout  # noqa: E402
from agentrel.harness.results.record import run_id  # noqa: E402
from agentrel.harness.run.matrix import run_seed  # noqa: E402

MODELS, TASKS, FAULTED, K = 5, 45, 10, 200
DIGESTS = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(64)]  # shaped like real digests
RECEIPTS = ("actuator", "witness")
REPEATS = 3


def manifest() -> dict[str, object]:
    tasks = [f"task-{t:03d}" for t in range(TASKS)]
    return {
        "format": "agentrel-manifest/1",
        "package_version": "0.1.0",
        "server_version": "PostgreSQL 15.18",
        "seed_digest": "5" * 64,
        "conditions": [{"name": "clean"}, {"name": "noisy", "noisy": {"failure_rate": 0.3}}],
        "k": K,
        "max_steps": 30,
        "max_attempts": 3,
        "sampling": {"temperature": 0.6},
        "agents": [{"name": f"model-{m}", "kind": "model", "model": f"m{m}"} for m in range(MODELS)],
        "tasks": [
            {
                "id": t,
                "spec_digest": "1" * 64,
                "fixture_digest": "2" * 64,
                "template_digest": DIGESTS[i % 64],
                "params": {},
                "optimal_steps": 3,
            }
            for i, t in enumerate(tasks)
        ],
        "faults": {
            "name": "bench",
            "cells": [
                {
                    "task": t,
                    "fault_id": "lost",
                    "kind": "lost_response",
                    "trigger": {"when": "first_irreversible_call", "n": None},
                    "seconds": None,
                }
                for t in tasks[:FAULTED]
            ],
            "digest": "3" * 64,
        },
    }


def fault_outcome(fault_id: str) -> dict[str, object]:
    act = LostResponseActuation(call_id="c3", armed=True)
    wit = LostResponseWitness(
        call_id="c3",
        committed=True,
        proxy_upstream_bytes=96,
        proxy_forwarded_bytes=0,
        client_timed_out=True,
        client_answered=False,
    )
    return {
        "fault_id": fault_id,
        "kind": "lost_response",
        "trigger": "first irreversible call",
        "fired": True,
        "verdict": "witnessed",
        "reasons": [],
        "actuator": ActuatorReceipt(fault_id=fault_id, at=1.25, actuation=act).model_dump(mode="json"),
        "witness": WitnessReceipt(fault_id=fault_id, at=2.5, witness=wit, verdict="witnessed").model_dump(
            mode="json"
        ),
    }


def write_results(directory: Path, m: dict[str, object], seed: int = 3) -> int:
    """The frozen results directory; returns the number of runs."""
    (directory / layout.MANIFEST).write_text(json.dumps(m))
    # Anchored in the registry publish uses (a temporary key signs it); runs start at the anchor's second.
    registry = directory.parent / "registry.jsonl"
    freeze, _ = write_freeze(directory, "bench", registry=registry)
    at = anchored_at(read_registry(registry).freezes[freeze_digest(freeze)])
    protocol, frozen = identity_of(m).protocol_hash, freeze_digest(freeze)  # as the runner stamps them
    (directory / layout.DUMPS).mkdir()
    for d in DIGESTS:
        (directory / layout.DUMPS / f"{d}.jsonl.gz").write_bytes(b"")
    (directory / layout.RECEIPTS).mkdir()
    rng = np.random.default_rng(seed)
    cells = list(registered_cells(m).cells)
    damaged = rng.random(len(cells)) < 0.08
    passed = rng.random(len(cells)) < 0.7
    retried = rng.random(len(cells)) < 0.01
    calls = rng.integers(2, 7, len(cells))
    outcome = fault_outcome("lost")
    with (directory / layout.RUNS).open("w") as fh:
        for i, c in enumerate(cells):
            rid = run_id(c.model, c.task, c.condition, c.run_index)
            fields = {
                "run_id": rid,
                "model": c.model,
                "agent_kind": "model",
                "task": c.task,
                "condition": c.condition,
                "run_index": c.run_index,
                "seed": run_seed(c.task, "clean" if c.fault else c.condition, c.run_index),
                "protocol_hash": protocol,
            }
            rec = record(fields, bool(damaged[i]), bool(passed[i]), int(calls[i]), i, frozen, at)
            rec["fault"] = outcome if c.fault else None
            attempts = [rec]
            if retried[i]:
                failed = {**rec, "status": "provider_invalid", "verdict": None}
                failed["error"] = {"kind": "provider", "message": "503 after retries"}
                attempts = [failed, {**rec, "attempt": 2}]
            for each in attempts:
                fh.write(json.dumps(each) + "\n")
                if c.fault:
                    log = directory / layout.RECEIPTS / f"{rid}.{each['attempt']}.jsonl"
                    lines = [json.dumps({"receipt": k, "body": outcome[k]}) + "\n" for k in RECEIPTS]
                    log.write_text("".join(lines))
    return len(cells)


def record(
    fields: dict[str, object], damaged: bool, passed: bool, calls: int, i: int, frozen: str, at: str
) -> dict[str, object]:
    """One valid attempt in the runner's format."""
    events = []
    if damaged:
        events.append(
            {
                "rule": "refund issued twice",
                "table": "refunds",
                "key": [i],
                "op": "insert",
                "severity": "high",
                "irreversibility": "substrate",
                "dollars": "4120.00",
                "spec": fields["task"],
            }
        )
    noisy = fields["condition"] == "noisy"
    return {
        **fields,
        "attempt": 1,
        "status": "valid",
        "verdict": {
            "outcome": "FAIL_DAMAGE" if damaged else ("PASS" if passed else "FAIL_SAFE"),
            "sub_label": "",
            "inconsistent": False,
            "mutated": damaged,
            "changes": len(events),
            "events": events,
            "max_severity": "high" if damaged else None,
            "dollars": "4120.00" if damaged else "0",
            "irreversibility": ["substrate"] if damaged else [],
        },
        "error": None,
        "events": [{"kind": "fault", "ordinal": 2, "tool": "issue_refund", "detail": {}}] if noisy else [],
        "exposure": None,
        "fault": None,
        "frozen_by": frozen,
        "script": None,
        "final_message": "Done: refunded the duplicate payment.",
        "tool_calls": [
            {"ordinal": j, "tool": "list_payments", "ok": True, "args_digest": DIGESTS[j][:16]}
            for j in range(calls)
        ],
        "usage": {"input_tokens": 1800, "output_tokens": 240, "model_calls": 4},
        "cost_usd": 0.0042,
        "timings": {"clone_s": 0.011, "agent_s": 1.3, "dump_s": 0.02, "label_s": 0.003, "total_s": 1.35},
        "before_digest": DIGESTS[i % 64],
        "after_digest": DIGESTS[(i * 7) % 64],
        "transcript_digest": None,
        "started_at": at,
    }


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children: the cost whatever else the machine runs."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def canonical_ratio(runs: Path, sample: int = 2000) -> float:
    lines = runs.read_bytes().splitlines()[:sample]
    t0 = time.perf_counter()
    for line in lines:
        canonical_line(line)
    fast = time.perf_counter() - t0
    parsed = [json.loads(line) for line in lines]
    t0 = time.perf_counter()
    for value in parsed:
        rfc8785.dumps(value)
    return (time.perf_counter() - t0) / fast


def main() -> None:
    # These synthetic records name placeholder dumps, so there is nothing to label again: re-derivation
    # is measured on a real audit's dumps by bench/relabel_scale.py.
    import agentrel.harness.publication.validate as validate_module

    # Patched by name: if validation stops calling it, the bench must fail here, not label placeholder dumps.
    assert hasattr(validate_module, "rederive_outcomes"), "validation re-derives by another name now"
    validate_module.rederive_outcomes = lambda results, manifest, workers=None: ([], None)  # type: ignore[assignment]
    m = manifest()
    policy = load_policy()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AGENTREL_SIGNING_KEY"] = str(Path(tmp) / "bench.key")  # never the user's key
        results = Path(tmp) / "results"
        results.mkdir()
        t0 = time.perf_counter()
        n = write_results(results, m)
        size = (results / layout.RUNS).stat().st_size >> 20
        print(f"wrote {n} runs ({size} MiB) in {time.perf_counter() - t0:.1f} s")
        freeze = load_freeze(results)
        identity = identity_of(m, policy=policy)  # reads the evaluator's sources once

        evidence_root_s = validate_s = evidence_cpu_s = float("inf")
        for _ in range(REPEATS):
            t0, cpu0 = time.perf_counter(), _cpu_seconds()
            evidence = read_evidence(results / layout.RUNS)
            evidence_root_s = min(evidence_root_s, time.perf_counter() - t0)
            evidence_cpu_s = min(evidence_cpu_s, _cpu_seconds() - cpu0)
            with evidence_held():  # as publish holds it
                t0 = time.perf_counter()
                proof = proof_of(check_matrix(m, freeze, evidence, policy, identity), evidence)
                validate_s = min(validate_s, time.perf_counter() - t0)
            assert proof.eligible, proof.reasons
            del evidence, proof
        evidence = read_evidence(results / layout.RUNS)
        proof = proof_of(check_matrix(m, freeze, evidence, policy, identity), evidence)

        t0 = time.perf_counter()
        serial = read_evidence(results / layout.RUNS, workers=1)
        serial_s = time.perf_counter() - t0
        assert serial.root == evidence.root
        ratio = canonical_ratio(results / layout.RUNS)

        t0 = time.perf_counter()
        outcome = publish(results, Path(tmp) / "out", policy=policy, registry=Path(tmp) / "registry.jsonl")
        publish_s = time.perf_counter() - t0
        assert outcome.scorecard is not None and outcome.registered, (
            outcome.proof.reasons,
            outcome.report and outcome.report.artifact_problems[:3],
        )
        print(f"attempts={proof.attempts} leaves={evidence.leaves} root={evidence.root[:16]}")
        speedup = serial_s / evidence_root_s
        print(f"evidence_root on 1 process: {serial_s:.2f} s (parallel speedup {speedup:.2f}x)")
        load = os.getloadavg()[0]
        print(f"evidence_root cpu_seconds={evidence_cpu_s:.2f} over all processes (load average {load:.2f})")
        print(f"canonical form: fast path {ratio:.1f}x the reference rfc8785 encoder on the same lines")
        phases = " ".join(f"{k}={v:.2f}" for k, v in outcome.timings.items())
        print(f"publish_seconds={publish_s:.2f} (phases: {phases})")
        card = outcome.scorecard
        t0 = time.perf_counter()
        assert card.signature_problem() is None  # what compare checks: canonical bytes, then Ed25519
        verify_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        model_bytes(card)
        bytes_s = time.perf_counter() - t0
        print(
            f"scorecard signature check {verify_s:.2f} s, of which its RFC 8785 bytes {bytes_s:.2f} s "
            f"({verify_s / bytes_s:.2f}x the bytes alone; {len(card.runs)} runs)"
        )
    print(f"runs={n} validate_seconds={validate_s:.3f} evidence_root_seconds={evidence_root_s:.3f}")


if __name__ == "__main__":
    main()
