"""Two environments side by side: `agentrel view` shows a tau2-airline audit from its own suite (the one its
manifest names, whatever environment the process selects: no --env needed), and `agentrel sandbox
status` shows each environment's seed template digest when both have one."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from pathlib import Path

import httpx
import pytest

from agentrel.harness.run.audit import audit
from agentrel.sandbox.environments import registry
from tests.browser.support import served

TASK = "tau2-airline-cancel-two"
DAMAGING = f"scripted_overreach__{TASK}__clean__0001"


@pytest.fixture(scope="module")
def airline_audit(cluster, agentrel_home: Path, tmp_path_factory) -> Path:
    """scripted/overreach on tau2-airline-cancel-two (refunds both reservations: one is damage), in a
    process whose own variables name no environment, as a later `agentrel view` process would have it."""
    from agentrel.sandbox.sandbox import Sandbox

    results = tmp_path_factory.mktemp("airline-view") / "results"
    audit(
        models=["scripted/overreach"],
        k=1,
        tasks=[TASK],
        concurrency=1,
        results=results,
        sandbox=Sandbox(cluster, home=agentrel_home, env=registry.load("tau2-airline")),
        show_progress=False,
    )
    return results


def test_view_labels_airline_rows_from_the_audits_own_suite(airline_audit):
    assert "AGENTREL_ENV" not in os.environ  # no variable points the view at the airline suite
    with served(airline_audit) as url:
        r = httpx.get(f"{url}/runs/{DAMAGING}")
    assert r.status_code == 200
    changes = re.findall(r'<div class="change k-(\w+)" data-table="(\w+)" data-key="([^"]*)">', r.text)
    tables = {table for _, table, _ in changes}
    assert {"reservations", "reservation_payments"} <= tables, changes
    assert ("damage", "reservation_payments") in {(kind, table) for kind, table, _ in changes}
    page = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", r.text))
    assert "refund of a reservation that may not be cancelled" in page
    assert "Aarav Ahmed" in page  # the task's prompt, from the airline suite
    assert "not in this suite" not in page


def test_view_names_an_environment_that_is_not_installed(airline_audit, tmp_path):
    results = Path(shutil.copytree(airline_audit, tmp_path / "results"))
    manifest = json.loads((results / "manifest.json").read_text())
    manifest["environment"]["name"] = "no-such-env"
    (results / "manifest.json").write_text(json.dumps(manifest))
    with served(results) as url:
        r = httpx.get(f"{url}/runs/{DAMAGING}")
    assert r.status_code == 200  # the run page still shows what it has, with the reason in one line
    page = html.unescape(r.text)  # whichever spelling the escaper uses
    assert "the audit ran on environment 'no-such-env', which does not load here" in page


def test_status_shows_each_environments_seed_digest(cluster, agentrel_home: Path):
    from agentrel.sandbox.sandbox import Sandbox

    enterprise = Sandbox(cluster, home=agentrel_home, env=registry.load(registry.DEFAULT))
    airline = Sandbox(cluster, home=agentrel_home, env=registry.load("tau2-airline"))
    want = {registry.DEFAULT: enterprise.seed_template().digest}
    want["tau2-airline"] = airline.seed_template().digest
    assert want[registry.DEFAULT] != want["tau2-airline"]
    for sb in (enterprise, airline):
        st = sb.status()
        assert {k: v for k, v in st.seed_digests.items() if k in want} == want
        assert st.seed_digest == want[sb.env.name]  # the selected environment's, not "-"


def test_status_cli_lists_both_digests(cluster, agentrel_home: Path):
    from typer.testing import CliRunner

    from agentrel.harness.cli.main import app
    from agentrel.sandbox.sandbox import Sandbox

    airline = Sandbox(cluster, home=agentrel_home, env=registry.load("tau2-airline")).seed_template().digest
    got = CliRunner().invoke(app, ["sandbox", "status", "--env", "tau2-airline", "--json"])
    table = CliRunner().invoke(
        app, ["sandbox", "status"], env={"COLUMNS": "200", "AGENTREL_ENV": registry.DEFAULT}
    )
    assert got.exit_code == 0, got.output
    status = json.loads(got.output)
    assert status["seed_digest"] == airline == status["seed_digests"]["tau2-airline"]
    assert registry.DEFAULT in status["seed_digests"]
    assert table.exit_code == 0, table.output
    assert re.search(rf"^\s+tau2-airline\s+{airline}\s*$", table.output, re.M), table.output
    seed = re.search(r"^seed digest\s+(\S+)", table.output, re.M)
    assert seed and seed.group(1) == status["seed_digests"][registry.DEFAULT]  # the selected one's


def test_a_folder_with_audits_of_both_environments_shows_each_from_its_own_suite(
    sandbox, airline_audit, tmp_path
):
    from tests.browser.support import DAMAGING as ENTERPRISE_DAMAGING
    from tests.browser.support import small_audit
    from tests.harness.test_view_folder import served_folder

    folder = tmp_path / "results"
    small_audit(sandbox, folder / "enterprise")
    shutil.copytree(airline_audit, folder / "airline")
    with served_folder(folder) as url:
        enterprise = httpx.get(f"{url}/a/enterprise/runs/{ENTERPRISE_DAMAGING}")
        airline = httpx.get(f"{url}/a/airline/runs/{DAMAGING}")
    assert enterprise.status_code == airline.status_code == 200
    assert 'data-table="credits"' in enterprise.text and "goodwill credit above the cap" in enterprise.text
    assert 'data-table="reservation_payments"' in airline.text
    assert "refund of a reservation that may not be cancelled" in airline.text
    assert "not in this suite" not in enterprise.text + airline.text
