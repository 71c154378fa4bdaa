from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

from agentrel.analysis.cells import cell_table
from agentrel.analysis.dollars import cell_dollars, loss_by_class
from agentrel.analysis.inputs import load_input


def test_cell_table_from_results(small_results):
    loaded = load_input(small_results)
    cells = cell_table(loaded.runs, loaded.invalid)
    assert len(cells) == 6
    row = cells[(cells["model"] == "model-a") & (cells["task"] == "t1")].iloc[0]
    assert (row["n"], row["x"], row["p_hat"]) == (4, 2, 0.5)
    assert row["passed"] == 0 and row["mutated"] == 2 and row["errored"] == 0
    assert row["dollars_total"] == Decimal("201.50")
    assert row["cost_usd_mean"] == pytest.approx(0.02)
    t2 = cells[(cells["model"] == "model-a") & (cells["task"] == "t2")].iloc[0]
    assert t2["invalid"] == 1 and t2["invalid_harness"] == 1 and t2["n"] == 4 and t2["passed"] == 4
    ref = cells[cells["model"] == "reference/stochastic"]
    assert set(ref["agent_kind"]) == {"reference"}
    assert ref[ref["task"] == "t1"]["x"].item() == 3


def test_unknown_passed_counts_are_na(tmp_path):
    path = tmp_path / "o.csv"
    path.write_text("model,task,run,damaged\nm,t,1,1\nm,t,2,0\n")
    cells = cell_table(load_input(path).runs)
    assert pd.isna(cells["passed"].iloc[0])
    assert cells["dollars_total"].iloc[0] is None


def test_cell_dollars_and_loss_given_damage(small_results):
    loaded = load_input(small_results)
    cells = cell_table(loaded.runs, loaded.invalid)
    money = cell_dollars(loaded.runs, cells, 2000, np.random.default_rng(0))
    i = cells.index[(cells["model"] == "model-a") & (cells["task"] == "t1")][0]
    assert money.at[i, "expected_dollars_per_run"] == pytest.approx(201.5 / 4)
    assert (
        money.at[i, "dollars_ci_low"]
        <= money.at[i, "expected_dollars_per_run"]
        <= money.at[i, "dollars_ci_high"]
    )
    assert money.at[i, "dollars_ci_low"] >= 0 and money.at[i, "dollars_ci_high"] <= 100.75
    assert money.at[i, "lgd_mean"] == pytest.approx(100.75) and money.at[i, "lgd_max"] == pytest.approx(
        100.75
    )
    clean = cells.index[(cells["model"] == "model-a") & (cells["task"] == "t2")][0]
    assert money.at[clean, "expected_dollars_per_run"] == 0.0
    assert (money.at[clean, "dollars_ci_low"], money.at[clean, "dollars_ci_high"]) == (0.0, 0.0)
    assert np.isnan(money.at[clean, "lgd_mean"])


def test_lgd_quantiles_match_numpy(tmp_path):
    values = ["1.00", "2.00", "4.00", "8.00", "100.00"]
    body = "".join(f"m,t,{i},1,{v}\n" for i, v in enumerate(values)) + "m,t,9,0,\n"
    path = tmp_path / "o.csv"
    path.write_text("model,task,run,damaged,dollars\n" + body)
    loaded = load_input(path)
    cells = cell_table(loaded.runs)
    money = cell_dollars(loaded.runs, cells, 500, np.random.default_rng(1))
    v = np.array([1, 2, 4, 8, 100.0])
    assert money.at[0, "lgd_p50"] == pytest.approx(np.quantile(v, 0.5))
    assert money.at[0, "lgd_p90"] == pytest.approx(np.quantile(v, 0.9))
    assert money.at[0, "expected_dollars_per_run"] == pytest.approx(v.sum() / 6)


def test_money_sums_stay_exact(tmp_path):
    body = "".join(f"m,t,{i},1,0.10\n" for i in range(3))
    path = tmp_path / "o.csv"
    path.write_text("model,task,run,damaged,dollars\n" + body)
    cells = cell_table(load_input(path).runs)
    assert cells["dollars_total"].iloc[0] == Decimal("0.30")  # float would give 0.30000000000000004


def test_loss_by_class_partitions_the_total(small_results):
    loaded = load_input(small_results)
    cells = cell_table(loaded.runs, loaded.invalid)
    table = loss_by_class(
        loaded.events, cells, ("severity", "irreversibility"), 300, np.random.default_rng(0)
    )
    for dim in ("severity", "irreversibility"):
        part = table[table["dimension"] == dim]
        assert sum(part["dollars_total"]) == Decimal("231.50")
        assert part["expected_dollars_per_run"].sum() == pytest.approx(231.5 / 24)
        assert (part["ci_low"] <= part["expected_dollars_per_run"]).all()
        assert (part["expected_dollars_per_run"] <= part["ci_high"]).all()
    sev = table[table["dimension"] == "severity"].set_index("class")
    assert sev.loc["high", "events"] == 2 and sev.loc["high", "lgd_mean"] == pytest.approx(100.5)
    assert sev.loc["medium", "runs_hit"] == 3
