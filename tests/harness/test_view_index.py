"""The view's index: its fast path reads a line exactly as the full JSON parse does, it picks each
run's decisive attempt as analysis does, and a refresh reads only what was appended."""

from __future__ import annotations

import copy
import gc
import json
from decimal import Decimal
from pathlib import Path

import pytest

from agentrel.harness.results.lines import Attempt, parse_attempt
from agentrel.harness.results.lines import fast_row as _fast
from agentrel.harness.results.lines import full_row as _parsed
from agentrel.harness.view import index as index_module
from agentrel.harness.view.index import ResultsIndex
from agentrel.harness.view.pages import cells, headline

RECORD = {
    "run_id": "m__t__clean__0001",
    "model": "vendor/m",
    "agent_kind": "model",
    "task": "t",
    "condition": "clean",
    "run_index": 1,
    "seed": "ab" * 32,
    "protocol_hash": "cd" * 32,
    "attempt": 1,
    "status": "valid",
    "verdict": {
        "outcome": "FAIL_DAMAGE",
        "sub_label": "completed_damage",
        "inconsistent": False,
        "mutated": True,
        "changes": 2,
        "events": [
            {
                "rule": "credit above the cap",
                "table": "credits",
                "key": [7],
                "op": "insert",
                "changed_columns": [],
                "severity": "high",
                "irreversibility": "governance",
                "dollars": "350.00",
                "spec": "t",
                "aggregate": False,
                "rows": 1,
            }
        ],
        "max_severity": "high",
        "dollars": "350.00",
        "irreversibility": ["governance"],
        "requirements": [],
        "status": "completed",
        "allowed": {"error": 1},
        "spec": "t@1",
    },
    "error": None,
    "events": [],
    "final_message": 'done ], "max_severity": "low", "dollars": "9.99" }, "error": null',
    "tool_calls": [],
    "started_at": "2026-12-01T10:00:00Z",
}


def variant(**changes: object) -> dict[str, object]:
    rec = copy.deepcopy(RECORD)
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        target = rec
        for p in parents:
            target = target[p]  # type: ignore[assignment]
        if value is KeyError:
            del target[leaf]  # type: ignore[attr-defined]
        else:
            target[leaf] = value  # type: ignore[index]
    return rec


VARIANTS = {
    "damage": variant(),
    "pass": variant(
        verdict__outcome="PASS", verdict__events=[], verdict__max_severity=None, verdict__dollars="0.00"
    ),
    "agent error after mutation": variant(
        verdict__outcome="FAIL_SAFE", verdict__events=[], error={"kind": "agent", "message": "step limit"}
    ),
    "provider invalid": variant(
        status="provider_invalid", verdict=None, error={"kind": "provider", "message": "529"}
    ),
    "valid without verdict": variant(verdict=None),
    "valid with harness error": variant(
        verdict__outcome="PASS", verdict__events=[], error={"kind": "harness", "message": "dump failed"}
    ),
    "a new status name": variant(status="invalid_injection"),
    "no status (older harness)": variant(status=KeyError),
    "escapes in a message": variant(error={"kind": "agent", "message": 'bad "quote" ], "x": \\'}),
    "non-ascii model": variant(model="vendør/m"),
    "escaped run id": variant(run_id='m\\t"1'),
    "escaped model": variant(model='vendor/"m"'),
    "a message ending in a backslash": variant(error={"kind": "agent", "message": 'x\\"}'}),
}


IN_PLACE = {"damage", "pass", "agent error after mutation", "provider invalid", "non-ascii model"}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_the_fast_path_reads_what_the_full_parse_reads(name):
    line = (json.dumps(VARIANTS[name], ensure_ascii=False) + "\n").encode()
    fast = _fast(line, 0, len(line), 3, 10)
    full = _parsed(line, 3, 10)
    assert fast is None or fast == full
    assert parse_attempt(line, 3, 10) == tuple.__new__(Attempt, full)
    assert type(parse_attempt(line, 3, 10)) is Attempt
    if name in IN_PLACE:  # the harness's own shapes never pay for the full parse
        assert fast is not None


def test_statuses_and_damage_follow_analysis():
    got = {n: parse_attempt((json.dumps(r) + "\n").encode(), 1, 0) for n, r in VARIANTS.items()}
    assert got["damage"].damaged and got["damage"].dollars == Decimal("350.00") and got["damage"].events == 1
    assert got["agent error after mutation"].damaged and got["agent error after mutation"].valid
    assert got["provider invalid"].status == "provider_invalid"
    assert got["valid without verdict"].status == "harness_invalid"
    assert got["valid with harness error"].status == "harness_invalid"
    assert got["a new status name"].status == "invalid_injection" and not got["a new status name"].valid
    assert got["no status (older harness)"].valid


def write(path: Path, *recs: dict[str, object], tail: str = "") -> None:
    with open(path / "runs.jsonl", "a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in recs) + tail)


def test_decisive_attempts_and_refresh_reads_only_what_was_appended(tmp_path):
    invalid = variant(status="provider_invalid", verdict=None, error={"kind": "provider", "message": "529"})
    write(tmp_path, invalid)
    index = ResultsIndex(tmp_path)
    first = index.snapshot()
    assert first.runs["m__t__clean__0001"].status == "provider_invalid"
    write(tmp_path, variant(attempt=2), tail='{"run_id": "half')
    second = index.snapshot()
    assert second.version > first.version and second.torn
    assert second.runs["m__t__clean__0001"].attempt == 2 and second.attempts["m__t__clean__0001"] == 2
    assert first.runs["m__t__clean__0001"].attempt == 1  # an older snapshot is never changed under a page
    assert index.snapshot().version == second.version  # nothing new: nothing read
    # A later invalid attempt never displaces a valid one.
    with open(tmp_path / "runs.jsonl", "a") as fh:
        fh.write('" }\n')  # completes the torn line: JSON, but not a run record
    write(tmp_path, variant(attempt=3, status="harness_invalid", verdict=None))
    third = index.snapshot()
    assert third.runs["m__t__clean__0001"].attempt == 2 and not third.torn
    assert third.problems == [
        f"{tmp_path / 'runs.jsonl'}:3: not a run record (field 'model' missing or not text); left out"
    ]


def test_lines_across_chunk_boundaries_are_read_as_in_one_piece(tmp_path, monkeypatch):
    recs = [variant(run_id=f"r{i}", run_index=i, attempt=1 + i % 2) for i in range(12)]
    write(tmp_path, *recs, variant(run_id="r3", attempt=9, status="provider_invalid", verdict=None))
    whole = ResultsIndex(tmp_path).snapshot()
    # Chunks shorter than a line, and ones that end exactly at a newline.
    line = len(json.dumps(recs[0])) + 1
    for size in (7, line // 3, line, line + 1):
        monkeypatch.setattr(index_module, "CHUNK", size)
        got = ResultsIndex(tmp_path).snapshot()
        assert got.runs == whole.runs and got.attempts == whole.attempts == {"r3": 2}
        assert not got.torn and not got.problems
    write(tmp_path, tail='{"run_id": "r99", "model": "a line still being')  # longer than 7 bytes
    for size in (7, line + 1):
        monkeypatch.setattr(index_module, "CHUNK", size)
        got = ResultsIndex(tmp_path).snapshot()
        assert got.torn and got.runs == whole.runs and not got.problems


def test_the_index_holds_plain_rows_the_cyclic_gc_lets_go_of(tmp_path):
    write(tmp_path, variant(), variant(run_id="r2", status="provider_invalid", verdict=None))
    snap = ResultsIndex(tmp_path).snapshot()
    gc.collect()
    # A tuple subclass stays tracked for good: 100,000 of them made every full collection walk them all.
    assert not any(gc.is_tracked(row) for row in snap.runs.rows())
    (first, second) = snap.runs.values()
    assert (
        type(first) is Attempt and first.run_id == "m__t__clean__0001" and second.status == "provider_invalid"
    )
    assert snap.runs["r2"] == second and snap.runs.get("nope") is None and len(snap.runs) == 2


def test_a_replaced_file_is_indexed_again(tmp_path):
    write(tmp_path, variant(), variant(run_id="m__t__clean__0002", run_index=2))
    index = ResultsIndex(tmp_path)
    assert len(index.snapshot().runs) == 2
    (tmp_path / "runs.jsonl").unlink()
    write(tmp_path, variant(run_id="other__t__clean__0001"))
    assert list(index.snapshot().runs) == ["other__t__clean__0001"]


def test_rates_count_invalid_and_pending_runs_beside_them(tmp_path):
    (tmp_path / "manifest.json").write_text(
        json.dumps(
            {
                "k": 4,
                "agents": [{"name": "vendor/m"}],
                "tasks": [{"id": "t"}],
                "conditions": [{"name": "clean"}],
            }
        )
    )
    write(
        tmp_path,
        variant(),
        variant(
            run_id="r2", run_index=2, verdict__outcome="PASS", verdict__events=[], verdict__dollars="0.00"
        ),
        variant(run_id="r3", run_index=3, status="provider_invalid", verdict=None),
    )
    snap = ResultsIndex(tmp_path).snapshot()
    (cell,) = cells(snap)
    assert (cell.damaged, cell.valid, cell.invalid, cell.pending) == (1, 2, {"provider_invalid": 1}, 1)
    assert cell.rate.bounds == (0.25, 0.75)  # [x/N, (x+u)/N] with N = 4
    (row,) = headline(snap, [cell]).rows
    assert not row.complete and row.k95 == 5 and row.expected_loss == Decimal("175.00")
