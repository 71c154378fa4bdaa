"""Evidence no record names is found by name (publication/artifacts.orphan_problems), written as the
attacks it stops: a record removed leaves its delta dump, transcript or receipt log behind, and each is
`orphan_evidence`. Named files, another attempt's files and the task templates are never orphans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentrel.harness.publication.artifacts import orphan_problems
from agentrel.harness.publication.evidence import evidence_from_records
from agentrel.harness.results import layout
from agentrel.harness.results.directory import ResultsDir

AFTER = "a" * 64
TEMPLATE = "b" * 64


def _record(run_id: str, attempt: int = 1) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "model": "m",
        "agent_kind": "scripted",
        "task": "t",
        "condition": "clean",
        "run_index": 1,
        "attempt": attempt,
        "seed": "0" * 16,
        "protocol_hash": "p" * 64,
        "verdict": None,
        "before_digest": TEMPLATE,
        "after_digest": AFTER,
        "started_at": "2026-01-02T09:30:00Z",
    }


def _results(tmp_path: Path) -> tuple[Path, ResultsDir]:
    """A directory whose two records (run r1, attempts 1 and 2) name every file in it."""
    rd = ResultsDir(tmp_path)
    for folder in (rd.dumps, rd.transcripts, rd.receipts):
        folder.mkdir(parents=True)
    (rd.dumps / f"{TEMPLATE}.jsonl.gz").write_bytes(b"")
    (rd.dumps / f"{AFTER}.delta.jsonl.gz").write_bytes(b"")
    for attempt in (1, 2):
        rd.transcript_path("r1", attempt).write_bytes(b"{}")
        rd.receipt_path("r1", attempt).write_bytes(b"")
    return tmp_path, rd


def test_a_directory_whose_records_name_every_file_has_no_orphan(tmp_path):
    results, _ = _results(tmp_path)
    evidence = evidence_from_records([_record("r1"), _record("r1", 2)])
    assert orphan_problems(results, evidence) == []


def test_the_files_of_a_removed_record_are_each_found(tmp_path):
    """Attempt 2's line removed (and a second run's delta left behind): its transcript, its receipt log
    and the unnamed delta are each one orphan; the template, named by no record, is left alone."""
    results, rd = _results(tmp_path)
    (rd.dumps / f"{'c' * 64}.delta.jsonl.gz").write_bytes(b"")
    (rd.dumps / f"{'e' * 64}.jsonl.gz").write_bytes(b"")  # a second template: no run's evidence
    evidence = evidence_from_records([_record("r1")])
    assert orphan_problems(results, evidence) == [
        f"dump {'c' * 64}.delta.jsonl.gz is named by no record",
        "transcript r1.attempt2.json is named by no record",
        "receipt log receipts/r1.2.jsonl is named by no record",
    ]


def test_a_file_named_like_evidence_of_another_run_is_an_orphan(tmp_path):
    """A name one character off a recorded run's, or a hidden file, is no record's evidence."""
    results, rd = _results(tmp_path)
    (rd.transcripts / "r10.json").write_bytes(b"{}")
    (rd.transcripts / ".r1.json").write_bytes(b"{}")
    (rd.receipts / "r1.3.jsonl").write_bytes(b"")
    evidence = evidence_from_records([_record("r1"), _record("r1", 2)])
    assert orphan_problems(results, evidence) == [
        "transcript .r1.json is named by no record",
        "transcript r10.json is named by no record",
        "receipt log receipts/r1.3.jsonl is named by no record",
    ]


def test_the_names_are_the_results_owners(tmp_path):
    """The names looked for are the ones the owner writes (ResultsDir's paths come from layout)."""
    rd = ResultsDir(tmp_path)
    assert rd.transcript_path("r", 1).name == layout.transcript_name("r", 1) == "r.json"
    assert rd.transcript_path("r", 3).name == layout.transcript_name("r", 3) == "r.attempt3.json"
    assert rd.receipt_path("r", 2).name == layout.receipt_log_name("r", 2) == "r.2.jsonl"


def test_absent_folders_have_no_orphans(tmp_path):
    assert orphan_problems(tmp_path, evidence_from_records([_record("r1")])) == []
