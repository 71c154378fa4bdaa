"""The generated reference pages equal what the code says today, and the column dictionary equals the
columns the writers emit: a new option, grammar rule or column cannot go undocumented."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_committed_reference_pages_are_current():
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_docs.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_the_check_catches_a_stale_page(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import gen_docs
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(gen_docs, "REFERENCE", tmp_path)
    assert gen_docs.main([]) == 0 and gen_docs.main(["--check"]) == 0
    page = tmp_path / "cli.md"
    page.write_text(page.read_text().replace("--max-steps", "--max-stepz"))
    assert gen_docs.main(["--check"]) == 1
    assert "`--dsn`" in (tmp_path / "cli.md").read_text()  # options come from the Typer app
    assert "start: header" in (tmp_path / "dsl.md").read_text()  # the grammar verbatim


def test_column_dictionaries_match_the_writers():
    from agentrel.analysis.axes_table import AXIS_COLUMNS
    from agentrel.analysis.columns import AXES, CELLS, DAMAGES, RUNS
    from agentrel.analysis.export import CELL_EXPORT_COLUMNS, DAMAGE_COLUMNS, RUN_EXPORT_COLUMNS

    pairs = (
        (DAMAGES, DAMAGE_COLUMNS),
        (RUNS, RUN_EXPORT_COLUMNS),
        (CELLS, CELL_EXPORT_COLUMNS),
        (AXES, AXIS_COLUMNS),
    )
    for spec, columns in pairs:
        assert tuple(c.name for c in spec.columns) == tuple(columns), spec.name
        assert all(c.meaning.strip() for c in spec.columns)
