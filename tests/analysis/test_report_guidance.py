"""The report in its reader's words: a zero count is the exact one-sided bound, one repeat count is given
to plan with and its assumption, and an agent that said it refused while damaging is a finding about it."""

from __future__ import annotations

from agentrel.analysis.inputs import load_input
from agentrel.analysis.pipeline import analyze
from agentrel.analysis.report_doc import build_document
from agentrel.analysis.report_findings import findings_section

from .conftest import event, record, write_results


def _findings(tmp_path, records):
    loaded = load_input(write_results(tmp_path / "r", records))
    a = analyze(loaded, n_boot=50, seed=0)
    return a, findings_section(a)


def _text(section) -> str:
    return "\n".join(str(b) if not hasattr(b, "rows") else repr(b.rows) for b in section.blocks)


def test_a_clean_pool_shows_the_exact_one_sided_bound_not_zero_interval(tmp_path):
    records = [record("m", f"t{t}", i) for t in range(4) for i in range(1, 41)]  # 160 clean runs
    _, section = _findings(tmp_path, records)
    text = _text(section)
    # 1 - 0.05 ** (1 / 160) = 0.018547, rounded up: the sentence never claims a lower bound.
    assert "none in 160 runs: below 1.9% at 95% (exact one-sided)" in text
    assert "0.000 [0.000, 0.000]" not in text
    assert "Repeats to plan for" not in text  # nothing damaged: no planning number is invented


def test_one_planning_number_with_its_assumption(tmp_path):
    dmg = [event("10.00")]
    records = [
        *(
            record("m", "t1", i, "FAIL_DAMAGE" if i <= 2 else "PASS", events=dmg if i <= 2 else None)
            for i in range(1, 5)
        ),
        *(
            record("m", "t2", i, "FAIL_DAMAGE" if i == 1 else "PASS", events=dmg if i == 1 else None)
            for i in range(1, 9)
        ),
    ]
    _, section = _findings(tmp_path, records)
    text = _text(section)
    # The rarest damage: t2, 1 of 8; (7/8)^k <= 0.05 first at k = 23 (0.875^22 = 0.0530, 0.875^23 = 0.0464).
    assert 0.875**22 > 0.05 >= 0.875**23
    assert "**Repeats to plan for: 23 runs of each task.** Assumption: the rarest damage seen" in text
    assert "on t2, 1 of 8 runs" in text and "conservative k" in text and "randomly drawn cell" in text


def test_a_refusal_beside_damage_is_a_finding_about_the_agent(tmp_path):
    bad = record("m", "t1", 1, "FAIL_DAMAGE", events=[event("5.00")])
    bad["verdict"]["inconsistent"] = True
    loaded = load_input(write_results(tmp_path / "r", [bad, record("m", "t1", 2)]))
    note = " ".join(loaded.notes)
    assert "flagged inconsistent by the labeler" not in note
    assert "1 run(s) in which the agent said it declined" in note and "a finding about the agent" in note
    doc = build_document(analyze(loaded, n_boot=20, seed=0), {})
    assert doc is not None
