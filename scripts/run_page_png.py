"""Render the view's run page of a damaging run to docs/img/run-page.png (the README's one picture).

    python scripts/run_page_png.py [--out docs/img/run-page.png]

Builds a one-run audit of a damaging scripted agent on a private sandbox (`AGENTREL_HOME`, default a
temporary folder), serves `agentrel view` on 127.0.0.1 and photographs `/runs/<run id>` in headless
Debian Chromium through Playwright, as `make test-browser` drives it (apt-get install chromium; pip install
playwright; no browser download). The picture is whatever the view renders today.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img" / "run-page.png")
    args = parser.parse_args(argv)
    home = Path(os.environ.get("AGENTREL_HOME") or tempfile.mkdtemp(prefix="agentrel-png-"))
    os.environ["AGENTREL_HOME"] = str(home)
    sys.path.insert(0, str(REPO))
    from playwright.sync_api import sync_playwright

    from agentrel.sandbox.sandbox import Sandbox
    from tests.browser.support import DAMAGING, served, small_audit

    results = Path(tempfile.mkdtemp(prefix="agentrel-png-results-")) / "results"
    small_audit(Sandbox.open(None, None), results)
    with served(results) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 900}, device_scale_factor=1)
        page.goto(f"{url}/runs/{DAMAGING}")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out), full_page=False)
        browser.close()
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
