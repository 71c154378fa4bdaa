"""The tutorials run as written: every ```bash block of each page, in order, against the test session's
own Postgres, in a fresh folder. A ```text block right after a ```bash block is output the page shows:
it must appear in what that block printed, so a tutorial cannot drift from what the commands say.

Kept out of `make test` (pyproject's addopts ignore tests/docs; it audits a few hundred runs): `make docs`
runs it before building the site, and `.ci/run` runs `make docs`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.M | re.S)


def blocks(page: Path) -> list[tuple[str, str | None]]:
    """(bash source, the text block shown right after it or None), in page order."""
    found = [(m.group(1), m.group(2), m.start(), m.end()) for m in FENCE.finditer(page.read_text())]
    out: list[tuple[str, str | None]] = []
    for i, (lang, body, _, end) in enumerate(found):
        if lang != "bash":
            continue
        shown = None
        if i + 1 < len(found):
            nxt_lang, nxt_body, nxt_start, _ = found[i + 1]
            between = page.read_text()[end:nxt_start]
            if nxt_lang == "text" and not between.strip():
                shown = nxt_body
        out.append((body, shown))
    return out


def run_page(page: Path, workdir: Path, home: Path) -> list[str]:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "AGENTREL_HOME": str(home),
        "AGENTREL_REGISTRY": str(workdir / "registry.jsonl"),
        "COLUMNS": "200",
    }
    outputs = []
    for source, shown in blocks(page):
        proc = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", source],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, f"{page.name}: block failed:\n{source}\n{proc.stdout}\n{proc.stderr}"
        if shown is not None:
            assert shown.strip() in proc.stdout, f"{page.name}: shown output differs:\n{proc.stdout}"
        outputs.append(proc.stdout)
    return outputs


def test_every_tutorial_has_commands_and_every_shown_output_follows_one():
    for page in sorted((DOCS / "tutorials").glob("*.md")):
        assert blocks(page), f"{page.name} has no ```bash block to run"


@pytest.mark.parametrize("name", ["researcher", "procurement", "insurer"])
def test_tutorial_runs_as_written(name, sandbox, agentrel_home, tmp_path):
    page = DOCS / "tutorials" / f"{name}.md"
    outputs = run_page(page, tmp_path, agentrel_home)
    if name == "researcher":
        comparison = (tmp_path / "results" / "comparisons" / "ref-vs-oracle" / "comparison.md").read_text()
        assert "| all | damage |" in comparison and comparison in outputs[-1]
    if name == "procurement":
        assert (tmp_path / "results" / "vendor" / "scorecard.json").is_file()
        assert not (tmp_path / "results" / "vendor" / "evidence_report.json").exists()
    if name == "insurer":
        rows = (tmp_path / "damages.csv").read_text().splitlines()
        assert len(rows) > 1 and rows[0].startswith("run_id,")
        counted = next(o for o in outputs if "priced" in o and o.split()[0].isdigit())
        counts = [int(line.split()[0]) for line in counted.splitlines()]
        assert sum(counts) == len(rows) - 1  # events counted, not the header line
