"""Figures for a lay reader: money ticks with `$` and thousands separators, a linear repeats axis."""

from __future__ import annotations

from pathlib import Path

from agentrel.analysis import figures
from agentrel.analysis.figures import money_label
from agentrel.analysis.inputs import load_input
from agentrel.analysis.pipeline import analyze

from .conftest import event, record, write_results


def test_money_ticks():
    assert money_label(825600.0) == "$825,600" and money_label(0.0) == "$0"
    assert money_label(12.5) == "$12.50" and money_label(0.004) == "$0.004"


def test_the_figures_use_them_and_no_log_axis(tmp_path, monkeypatch):
    saved = {}
    monkeypatch.setattr(figures, "_save", lambda fig, path: saved.__setitem__(Path(path).stem, fig))
    dmg = [event("825600.00")]
    records = [
        record("m", "t1", i, "FAIL_DAMAGE" if i <= 2 else "PASS", events=dmg if i <= 2 else None)
        for i in range(1, 9)
    ] + [record("m", "t2", i) for i in range(1, 9)]
    a = analyze(load_input(write_results(tmp_path / "r", records)), n_boot=50, seed=0)
    figures.plot_detection(a.pools, a.cells, tmp_path / "detection.png")
    figures.plot_dollars(a.cells, tmp_path / "dollars.png")
    detection = saved["detection"].axes[0]
    assert detection.get_xscale() == "linear" and "repeats" in detection.get_xlabel()
    dollars = saved["dollars"].axes[0]
    formatter = dollars.xaxis.get_major_formatter()
    assert formatter(206400.0, 0) == "$206,400" and "US dollars" in dollars.get_xlabel()
