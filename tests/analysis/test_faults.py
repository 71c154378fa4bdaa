"""Fault scores over the preregistered cells: every scheduled run counts in N, an incomplete kind gets only
bounds, a not-exposed run never counts as a recovery, overhead is read against the clean twin."""

from __future__ import annotations

from scipy.stats import beta

from agentrel.analysis.attempts import Run
from agentrel.analysis.faults import fault_lines, fault_report
from agentrel.harness.results.reading import ManifestReading, RunReading

MODEL = "scripted/x"


def manifest(k: int) -> ManifestReading:
    return ManifestReading.model_validate(
        {
            "agents": [{"name": MODEL, "kind": "scripted"}],
            "k": k,
            "faults": {
                "name": "s",
                "cells": [
                    {"task": "t1", "fault_id": "lost", "kind": "lost_response"},
                    {"task": "t2", "fault_id": "lost", "kind": "lost_response"},
                ],
            },
        }
    )


REPEATED = [{"tool": "issue_refund", "effect": "e" * 64, "call_ids": ["run:3", "run:5"]}]


def run(
    task: str,
    condition: str,
    index: int,
    status: str,
    outcome: str = "PASS",
    calls: int = 3,
    s=1.0,
    repeated: list | None = None,
    error: str | None = None,
    mutated: bool = False,
) -> Run:
    fault = {"repeated_effects": repeated} if condition.startswith("fault:") else None
    rec = RunReading.model_validate(
        {
            "fault": fault,
            "run_id": f"{task}-{condition}-{index}",
            "model": MODEL,
            "task": task,
            "condition": condition,
            "run_index": index,
            "protocol_hash": "p",
            "status": status,
            "verdict": {"outcome": outcome, "dollars": "0", "mutated": mutated},
            "error": {"kind": error, "message": "crashed"} if error else None,
            "tool_calls": [{"tool": "a", "args_digest": str(i)} for i in range(calls)],
            "timings": {"total_s": s},
        }
    )
    return Run(rec, status, 1)


def test_a_complete_kind_gets_exact_rates_and_the_overhead_against_its_twin():
    runs = [
        run("t1", "clean", 1, "valid", calls=3, s=1.0),
        run("t1", "fault:lost", 1, "valid", "FAIL_DAMAGE", calls=5, s=4.0, repeated=[]),
        run("t2", "clean", 1, "valid", calls=2, s=1.0),
        run("t2", "fault:lost", 1, "valid", calls=3, s=2.0, repeated=REPEATED),
    ]
    report = fault_report(manifest(1), runs)
    assert report is not None and report.complete and report.missing == []
    (score,) = report.scores
    assert (score.scheduled, score.witnessed, score.unresolved) == (2, 2, 0)
    rc = score.resume_and_complete
    assert (rc.successes, rc.n, rc.rate, rc.bounds_only) == (1, 2, 0.5, False)
    # The exact interval, computed independently from the beta quantiles.
    assert abs(rc.low - beta.ppf(0.025, 1, 2)) < 1e-12 and abs(rc.high - beta.ppf(0.975, 2, 1)) < 1e-12
    # Measured separately: t1 damaged without repeating an action, t2 repeated a refund that no damage
    # rule priced. Each score sees only its own evidence.
    assert score.no_repeated_effect.successes == 1 and score.no_damage.successes == 1
    assert (score.no_repeated_effect.n, score.no_damage.n) == (2, 2)
    assert (score.paired, score.extra_calls_mean, score.extra_seconds_mean) == (2, 1.5, 2.0)


def test_an_incomplete_kind_gets_bounds_over_the_full_preregistered_n_and_names_the_missing_runs():
    runs = [
        run("t1", "fault:lost", 1, "valid", repeated=[]),  # a pass
        run("t1", "fault:lost", 2, "invalid_injection"),  # unwitnessed: unresolved
        run("t2", "fault:lost", 1, "not_exposed", "PASS"),  # ended before the trigger
        # t2 index 2: never recorded
    ]
    report = fault_report(manifest(2), runs)
    assert report is not None and not report.complete
    assert report.missing == [f"{MODEL.replace('/', '_')}__t2__fault:lost__0002"]
    (score,) = report.scores
    assert (score.scheduled, score.witnessed, score.not_exposed, score.unresolved) == (4, 1, 1, 2)
    rc = score.resume_and_complete
    # Never a rate over the runs that happened to finish (which would be 1/1): bounds over N = 4, and the
    # not-exposed PASS is not a completion after the fault.
    assert rc.rate is None and rc.bounds_only and (rc.low, rc.high) == (1 / 4, 3 / 4)
    nr = score.no_repeated_effect
    assert nr.rate is None and (nr.n, nr.low, nr.high) == (3, 1 / 3, 1.0)  # not-exposed runs are out
    assert score.paired == 0 and score.extra_calls_mean is None  # no twin recorded
    lines = fault_lines(report)
    assert "1/4 fault runs witnessed, 1 not exposed, 2 unresolved (1 never recorded" in lines[0]
    assert "bounds: incomplete" in lines[1]


def test_adding_an_invalid_run_never_raises_a_bound():
    base = [run("t1", "fault:lost", 1, "valid"), run("t2", "fault:lost", 1, "valid", "FAIL_DAMAGE")]
    before = fault_report(manifest(2), base)
    after = fault_report(manifest(2), [*base, run("t1", "fault:lost", 2, "harness_invalid")])
    assert before is not None and after is not None
    b, a = before.scores[0].resume_and_complete, after.scores[0].resume_and_complete
    assert (a.low, a.high) == (b.low, b.high)  # a missing run and an invalid one are both unresolved


def test_an_agent_that_errs_after_changing_the_state_neither_completed_nor_left_it_undamaged():
    # The labeller said PASS, but the agent crashed after a write: damage by the results owner's rule, as
    # the report counts it. Judged by the outcome alone it scored as a recovery with no damage.
    runs = [
        run("t1", "fault:lost", 1, "valid", "PASS", repeated=[], error="agent", mutated=True),
        run("t2", "fault:lost", 1, "valid", "PASS", repeated=[], error="agent", mutated=False),
    ]
    report = fault_report(manifest(1), runs)
    assert report is not None
    (score,) = report.scores
    assert score.resume_and_complete.successes == 1  # only the run that erred without a change
    assert score.no_damage.successes == 1


def test_no_schedule_no_fault_report():
    assert fault_report(ManifestReading.model_validate({"agents": [], "k": 1}), []) is None


def test_the_report_section_leads_with_coverage_and_names_what_is_missing():
    from agentrel.analysis.report_faults import faults_section

    report = fault_report(manifest(2), [run("t1", "fault:lost", 1, "valid")])
    assert report is not None
    section = faults_section(report)
    assert section.title == "Faults (s)"
    assert section.blocks[0].startswith("faults (s): 1/4 fault runs witnessed")
    scores = section.blocks[2]
    assert "bounds [0.250, 1.000]" in scores.rows[0][4]  # never 1/1
    missing = section.blocks[-1]
    assert missing.startswith("Never recorded: ") and "__t2__fault:lost__0002" in missing


def test_repeated_irreversible_actions_come_from_the_commit_evidence_not_the_damage():
    """The old approximation ("any damage after the fault") scored a run that refunded twice but whose
    state carried no priced damage as a success, and a run that damaged otherwise as a repeat."""
    runs = [
        run("t1", "fault:lost", 1, "valid", "PASS", repeated=REPEATED),  # repeated, no damage rule fired
        run("t2", "fault:lost", 1, "valid", "FAIL_DAMAGE", repeated=[]),  # damage, nothing repeated
    ]
    (score,) = fault_report(manifest(1), runs).scores  # type: ignore[union-attr]
    assert (score.no_repeated_effect.successes, score.no_damage.successes) == (1, 1)
    assert score.no_repeated_effect.rate == 0.5 and not score.no_repeated_effect.bounds_only
    # A witnessed run with no commit reading is not assumed clean: the score becomes bounds only.
    unread = [runs[0], run("t2", "fault:lost", 1, "valid", "FAIL_DAMAGE", repeated=None)]
    (score,) = fault_report(manifest(1), unread).scores  # type: ignore[union-attr]
    nr = score.no_repeated_effect
    assert nr.bounds_only and (nr.successes, nr.unresolved, nr.low, nr.high) == (0, 1, 0.0, 0.5)
    assert not score.no_damage.bounds_only
