from __future__ import annotations

import json

import pytest

from agentrel.analysis.inputs import load_input
from agentrel.analysis.pipeline import analyze
from agentrel.analysis.pools import pool_specs
from agentrel.analysis.render import to_html, to_markdown
from agentrel.analysis.report_doc import build_document
from agentrel.analysis.summary import build_summary
from tests.analysis.conftest import event, record, write_results


@pytest.fixture
def two_conditions(tmp_path):
    recs = []
    for cond in ("clean", "adversarial"):
        for t in ("t1", "t2", "t3"):
            for i in range(6):
                hit = cond == "adversarial" and t != "t3" and i % 2 == 0
                recs.append(
                    record(
                        "m1",
                        t,
                        i,
                        "FAIL_DAMAGE" if hit else "PASS",
                        condition=cond,
                        events=[event("3.00", "critical")] if hit else None,
                    )
                )
                recs.append(record("m2", t, i, "PASS", condition=cond))
                recs.append(record("scripted/oracle", t, i, "PASS", condition=cond, kind="scripted"))
    return load_input(write_results(tmp_path / "r", recs))


def test_pools_per_condition_and_kind(two_conditions):
    result = analyze(two_conditions, n_boot=0, seed=1)
    specs = [(p.spec.model, p.spec.condition, p.spec.agents) for p in result.pools]
    assert specs[0] == ("all", "adversarial", ("m1", "m2"))
    assert ("all", "clean", ("m1", "m2")) in specs
    assert len(specs) == 8  # (all + 3 agents) x 2 conditions
    adv = result.pools[0]
    assert adv.damaged_runs == 6 and adv.damage_cells == 2 and adv.bootstrap == {}
    clean_all = next(p for p in result.pools if p.spec == pool_specs(result.cells)[4])
    assert clean_all.fit.degenerate and clean_all.required_k_beta is None


def test_summary_and_report_render_without_bootstrap(two_conditions):
    result = analyze(two_conditions, n_boot=0, seed=1)
    data = json.loads(build_summary(result).to_json())
    assert data["schema"] == "agentrel-analysis/3"
    assert {p["condition"] for p in data["pools"]} == {"clean", "adversarial"}
    clean = next(p for p in data["pools"] if p["model"] == "all" and p["condition"] == "clean")
    assert clean["miss_rate_pair"] is None and clean["icc_mle_ci"] == [0.0, 1.0]  # NaN -> null
    assert clean["beta_a"] is None  # infinite at rho = 0 -> null
    doc = build_document(result, {})
    md, html = to_markdown(doc), to_html(doc)
    assert "scripted/oracle (scripted agent)" in md
    assert "critical" in md and "$1.00" in md  # 6 x $3 over 18 runs of m1 under adversarial
    assert "<h2>Pools</h2>" in html and "&lt;" not in md


def test_only_reference_agents_still_pool(tmp_path):
    recs = [
        record(
            "reference/stochastic",
            "t",
            i,
            "FAIL_DAMAGE" if i < 2 else "PASS",
            kind="reference",
            events=[event("1.00")] if i < 2 else None,
        )
        for i in range(5)
    ]
    result = analyze(load_input(write_results(tmp_path / "r", recs)), n_boot=50)
    assert result.pools[0].spec.agent_kind == "mixed"
    assert "all agents (no models in the input)" in to_markdown(build_document(result, {}))


def test_no_dollars_input(tmp_path):
    path = tmp_path / "o.csv"
    path.write_text(
        "model,task,run,damaged\n" + "".join(f"m,t{i % 3},{i},{int(i % 4 == 0)}\n" for i in range(24))
    )
    result = analyze(load_input(path), n_boot=100)
    data = json.loads(build_summary(result).to_json())
    assert all(c["expected_dollars_per_run"] is None for c in data["cells"])
    assert data["pools"][0]["expected_dollars_per_run"] is None and data["dollars_by_class"] == []
    assert "carries no dollar figures" in to_markdown(build_document(result, {}))
