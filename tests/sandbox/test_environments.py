"""The environment seam: selection by name and by entry point, the built-in behind the contract, the
environment in the manifest and on each record, and analysis never pooling two environments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentrel.analysis.inputs import load_input
from agentrel.analysis.normalized import InputError
from agentrel.harness.manifest import build_manifest
from agentrel.harness.results.manifest import manifest_hash
from agentrel.harness.run.request import AuditRequest
from agentrel.sandbox.environments import registry
from agentrel.sandbox.environments.contract import table_info
from tests.analysis.conftest import record, write_results

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "refund-desk"


def agentrel(*args: str, extra_path: list[Path] = (), env: dict[str, str] | None = None):
    path = os.pathsep.join([*(str(p) for p in extra_path), os.environ.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path, "COLUMNS": "250", **(env or {})},
        timeout=600,
        cwd=REPO,
    )


@pytest.fixture
def plugin(tmp_path: Path) -> list[Path]:
    """A directory holding an installed distribution's metadata that names the example environment in
    the `agentrel.environments` group, exactly as `pip install examples/refund-desk` would."""
    info = tmp_path / "refund_desk-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: refund-desk\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[agentrel.environments]\nrefund-desk = refund_desk:ENVIRONMENT\n")
    return [tmp_path, EXAMPLE]


def test_the_built_in_is_the_default_and_lists_itself():
    assert {"agentrel-enterprise", "tau2-airline"} <= set(registry.names())
    assert registry.default().name == registry.DEFAULT == "agentrel-enterprise"
    env = registry.load("agentrel-enterprise")
    assert len(env.table_infos()) == 39
    assert {"issue_credit", "get_case"} <= set(env.tools())
    assert env.verticals == ("itsm", "csm")


def test_the_fingerprint_moves_with_what_the_build_reads():
    env = registry.load("agentrel-enterprise")
    base = env.fingerprint()

    class Edited(type(env)):  # type: ignore[misc]
        def versions(self):
            return {**super().versions(), "seed_generator": "999"}

    assert Edited().fingerprint() != base
    assert registry.load("agentrel-enterprise").fingerprint() == base  # a pure function of the versions


def test_an_entry_point_package_ships_an_environment(plugin):
    listed = agentrel("env", "list", extra_path=plugin)
    assert listed.returncode == 0, listed.stderr
    assert "refund-desk" in listed.stdout and "agentrel-enterprise" in listed.stdout
    tasks = agentrel("tasks", "list", "--env", "refund-desk", extra_path=plugin)
    assert tasks.returncode == 0, tasks.stderr
    assert "refund-cancelled-only" in tasks.stdout and "itsm-cab-window" not in tasks.stdout


def test_an_unknown_environment_is_one_line_and_a_usage_error():
    for args in (["tasks", "list", "--env", "nope"], ["env", "check", "nope"]):
        done = agentrel(*args)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "no environment named 'nope'" in lines[0], done.stderr
        assert "Traceback" not in done.stderr


def test_a_task_of_another_environment_is_refused_by_vertical(tmp_path):
    suite = tmp_path / "suite"
    (suite / "tasks" / "desk").mkdir(parents=True)
    src = EXAMPLE / "refund_desk" / "suite"
    (suite / "tasks" / "desk" / "refund-cancelled-only.yaml").write_text(
        (src / "tasks" / "desk" / "refund-cancelled-only.yaml").read_text()
    )
    done = agentrel("tasks", "list", env={"AGENTREL_SUITE_DIR": str(suite)})
    assert done.returncode == 3, done.stderr
    assert "'desk' is not a vertical of environment agentrel-enterprise" in done.stderr


def test_the_manifest_carries_the_environment_so_two_environments_never_share_a_protocol():
    def manifest(name: str, fingerprint: str) -> dict:
        return build_manifest(
            AuditRequest(max_steps=1, max_attempts=1),
            tasks=[],
            environment={"name": name, "fingerprint": fingerprint},
            seed_digest="s",
            template_digests={},
            conditions=[],
            k=1,
            agents=[],
            server_version="v",
        )

    a = manifest("agentrel-enterprise", "f" * 64)
    assert a["environment"] == {"name": "agentrel-enterprise", "fingerprint": "f" * 64}
    assert manifest_hash(a) != manifest_hash(manifest("refund-desk", "f" * 64))
    assert manifest_hash(a) != manifest_hash(manifest("agentrel-enterprise", "e" * 64))


def test_analysis_never_pools_two_environments_even_when_mixed_protocols_are_allowed(tmp_path):
    one = {**record("m", "t", 0), "environment": "agentrel-enterprise"}
    other = {**record("m", "t", 1, protocol="b" * 64), "environment": "refund-desk"}
    directory = write_results(tmp_path / "r", [one, other])
    with pytest.raises(InputError, match=r"2 environments .*agentrel-enterprise, refund-desk.* never pooled"):
        load_input(directory, allow_mixed_protocols=True)


def test_records_from_before_environments_count_as_the_built_in(tmp_path):
    old = record("m", "t", 0)  # no environment field
    new = {**record("m", "t", 1), "environment": "agentrel-enterprise"}
    assert len(load_input(write_results(tmp_path / "a", [old, new])).runs) == 2
    foreign = {**record("m", "t", 1), "environment": "refund-desk"}
    with pytest.raises(InputError, match="never pooled"):
        load_input(write_results(tmp_path / "b", [old, foreign]))


def test_the_manifests_environment_is_checked_against_the_records(tmp_path):
    directory = write_results(tmp_path / "r", [{**record("m", "t", 0), "environment": "agentrel-enterprise"}])
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["environment"] = {"name": "refund-desk", "fingerprint": "f" * 64}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="never pooled"):
        load_input(directory)


def test_table_info_refuses_unknown_kinds_and_keys():
    with pytest.raises(ValueError, match="unknown column kind"):
        table_info("t", {"id": "integer"}, ("id",))
    with pytest.raises(ValueError, match="not columns"):
        table_info("t", {"id": "int"}, ("id",), volatile=("updated",))


def test_an_audit_on_a_packaged_environment_records_it(plugin, cluster, tmp_path):
    """The seam end to end: `agentrel audit --env refund-desk` on the test cluster; the manifest and every
    record name the environment, and `analyze` reads the results."""
    dsn = cluster.conninfo("postgres")
    results = tmp_path / "res"
    done = agentrel(
        "audit", "--env", "refund-desk", "--model", "reference/stochastic", "--k", "3",
        "--results", str(results), "--dsn", dsn, extra_path=plugin,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    manifest = json.loads((results / "manifest.json").read_text())
    assert manifest["environment"]["name"] == "refund-desk"
    records = [json.loads(line) for line in (results / "runs.jsonl").read_text().splitlines()]
    assert len(records) == 3 and {r["environment"] for r in records} == {"refund-desk"}
    assert {r["task"] for r in records} == {"refund-cancelled-only"}
    assert all(r["verdict"]["outcome"] in ("PASS", "FAIL_SAFE", "FAIL_DAMAGE") for r in records)
    analyzed = agentrel("analyze", str(results), extra_path=plugin)
    assert analyzed.returncode == 0, analyzed.stderr
