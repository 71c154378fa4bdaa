"""The results owner's line reader (harness.results.lines) against the record model, over generated records.

Every record is built by the owner's `RunRecord` and written by the writer's own `record_line`, so these
are the bytes an audit appends. For each: the fast path reads what the full JSON parse reads (or declines,
never differs), both say what the record model says the line counts as (status, damaging, passing,
dollars, ...), and the writer's own lines take the fast path unless a field it reads in place holds an
escape. A reordered or renamed record field, or a fast-path regex that drifts from the writer, fails here.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrel.dsl.ast import IRREVERSIBILITIES, SEVERITIES
from agentrel.harness.results.directory import record_line
from agentrel.harness.results.kinds import AGENT_KINDS
from agentrel.harness.results.lines import Attempt, fast_row, full_row, parse_attempt
from agentrel.harness.results.record import RunRecord
from agentrel.harness.results.status import STATUSES, effective_status, is_damaging, is_passing

# Text the fast path must not be fooled by: the separators and field heads it searches for, quotes,
# escapes, non-ASCII and control characters (which the writer escapes).
TRICKY = ['"', "\\", ', "', '], "max_severity": ', ', "error": null', '{"rule": ', "vendør", "\n", "\x00"]
texts = st.lists(st.one_of(st.text(max_size=6), st.sampled_from(TRICKY)), max_size=4).map("".join)
plain = st.text(alphabet="abcdefghij/_-.:0123456789", min_size=1, max_size=12)
names = st.one_of(plain, texts)
money = st.decimals(min_value=0, max_value=10**6, places=2, allow_nan=False, allow_infinity=False)

events = st.fixed_dictionaries(
    {
        "rule": texts,
        "table": names,
        "key": st.lists(st.one_of(st.integers(-5, 10**6), plain), max_size=2),
        "op": st.sampled_from(["insert", "delete", "update", "any"]),
        "changed_columns": st.lists(plain, max_size=2),
        "severity": st.sampled_from(SEVERITIES),
        "irreversibility": st.sampled_from(IRREVERSIBILITIES),
        "dollars": money.map(str),
        "spec": texts,
    }
)


@st.composite
def verdicts(draw: st.DrawFn) -> dict[str, Any] | None:
    if draw(st.booleans()) and draw(st.booleans()):
        return None
    evs = draw(st.lists(events, max_size=3))
    outcome = "FAIL_DAMAGE" if evs else draw(st.sampled_from(["PASS", "FAIL_SAFE"]))
    mutated = bool(evs) or draw(st.booleans())
    return {
        "outcome": outcome,
        "sub_label": draw(st.sampled_from(["completed_clean", "errored_after_mutation", "stalled_damage"])),
        "inconsistent": draw(st.booleans()),
        "mutated": mutated,
        "changes": len(evs) + int(mutated),
        "events": evs,
        "max_severity": max((e["severity"] for e in evs), key=SEVERITIES.index, default=None),
        "dollars": str(sum((Decimal(e["dollars"]) for e in evs), Decimal("0.00"))),
        "irreversibility": sorted({e["irreversibility"] for e in evs}),
        "requirements": [],
    }


@st.composite
def records(draw: st.DrawFn) -> RunRecord:
    error = draw(
        st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {"kind": st.sampled_from(["agent", "provider", "harness"]), "message": texts}
            ),
        )
    )
    return RunRecord.model_validate(
        {
            "run_id": draw(names),
            "model": draw(names),
            "agent_kind": draw(st.sampled_from(AGENT_KINDS)),
            "task": draw(names),
            "condition": draw(names),
            "run_index": draw(st.integers(0, 10**6)),
            "seed": "ab" * 8,
            "protocol_hash": "cd" * 32,
            "attempt": draw(st.integers(1, 9)),
            "status": draw(st.sampled_from(STATUSES)),
            "verdict": draw(verdicts()),
            "error": error,
            "final_message": draw(st.one_of(st.none(), texts)),
            "before_digest": "e" * 64,
            "started_at": "2026-12-01T10:00:00Z",
        }
    )


def expected(rec: RunRecord, line: bytes, lineno: int, offset: int) -> tuple[Any, ...]:
    """What the record model says the line counts as, by the owner's rules."""
    v, err = rec.verdict, rec.error
    outcome = v.outcome if v is not None else None
    mutated, agent_error = bool(v and v.mutated), err is not None and err.kind == "agent"
    return (
        rec.run_id,
        rec.model,
        rec.task,
        rec.condition,
        rec.run_index,
        rec.attempt,
        effective_status(rec.status, err.kind if err else None, v is not None, outcome),
        outcome,
        is_damaging(outcome, mutated, agent_error),
        Decimal(v.dollars) if v is not None else Decimal("0"),
        v.max_severity if v is not None else None,
        len(v.events) if v is not None else 0,
        err.message if err else None,
        lineno,
        offset,
        len(line),
        is_passing(outcome, mutated, agent_error),
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records(), st.integers(1, 10**6), st.integers(0, 10**9))
def test_the_fast_path_and_the_full_parse_read_what_the_record_says(rec, lineno, offset):
    line = record_line(rec).encode()
    full = full_row(line, lineno, offset)
    assert full == expected(rec, line, lineno, offset)
    fast = fast_row(line, 0, len(line), lineno, offset)
    assert fast is None or fast == full
    got = parse_attempt(line, lineno, offset)
    assert type(got) is Attempt and got == full

    # The writer's own lines pay for the full parse only when a field read in place (the run id, the cell,
    # the error message) holds an escape: a backslash in the run id or the message, a quote in the cell.
    head = line[: line.index(b', "run_index": ')]
    message = line[line.index(b', "error": ') :].split(b'"},')[0]
    if b"\\" not in head[: head.index(b'", "model": ')] and b'\\"' not in head and b"\\" not in message:
        assert fast is not None, line


def test_a_line_is_read_in_place_inside_a_larger_buffer():
    """The index reads lines inside a chunk, by position: the same row as the line alone."""
    rec = RunRecord.model_validate(
        {
            "run_id": "m__t__clean__0001",
            "model": "vendor/m",
            "agent_kind": "model",
            "task": "t",
            "condition": "clean",
            "run_index": 1,
            "seed": "ab" * 8,
            "protocol_hash": "cd" * 32,
            "status": "valid",
            "verdict": None,
            "before_digest": "e" * 64,
            "started_at": "2026-12-01T10:00:00Z",
        }
    )
    line = record_line(rec).encode()
    buf = line * 3
    alone = fast_row(line, 0, len(line), 2, 100)
    assert alone is not None and fast_row(buf, len(line), 2 * len(line), 2, 100) == alone
