"""The built documentation site's CLI reference shows every command: `mkdocs build` into a temporary
directory, then the page read with the standard library's HTML parser (run by `make docs`, which installs
the docs tools). The Markdown can be valid while the page is not: a raw `<script>` placeholder in a help
text swallowed every command after `agentrel audit --model`, and `mkdocs build --strict` still passed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.test_docs_reference import REPO, assert_cli_page_shows_everything


def test_the_built_cli_page_holds_every_command_outside_any_script(tmp_path: Path) -> None:
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--site-dir", str(site), "--config-file", "mkdocs.yml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert_cli_page_shows_everything((site / "reference" / "cli" / "index.html").read_text(encoding="utf-8"))
