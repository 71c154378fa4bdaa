"""Nothing recorded is ever lost: a full disk, a read-only directory, a second writer, stale temporary files
and deleted evidence each leave every recorded run with its evidence, or make it run again, loudly.

The full and read-only disks are real: a small tmpfs mounted for the test (the suite runs as root, as
.ci/run does).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.run.episode import prepare
from agentrel.harness.tasks import load_suite
from tests.harness.fake_provider import FakeProvider, auth_error, openai_text

TASK = "itsm-cab-window"
AGENTREL = [sys.executable, "-m", "agentrel.harness.cli"]


def agentrel(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGENTREL, *args], capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=600
    )


def audit_args(results: Path, k: int, model: str = "reference/stochastic") -> list[str]:
    return ["audit", "-m", model, "--k", str(k), "--tasks", TASK, "-j", "2", "--results", str(results)]


def one_error_line(proc: subprocess.CompletedProcess[str], code: int, fragment: str) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    # The progress bar's last state may precede the error on a non-terminal stderr.
    # So may the audit's first notice (where the results and AgentRel's state are), said before the slow part.
    lines = [
        line
        for line in proc.stderr.strip().splitlines()
        if not line.startswith(("audit ", "agentrel: auditing into "))
    ]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert fragment in lines[0], lines[0]
    return lines[0]


def mount_tmpfs(path: Path, size: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)


def remount(path: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(path)], check=True)


@pytest.fixture
def tmpfs(tmp_path):
    mounts: list[Path] = []

    def make(size: int) -> Path:
        path = tmp_path / f"disk{len(mounts)}"
        mount_tmpfs(path, size)
        mounts.append(path)
        return path

    yield make
    for path in mounts:
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.fixture(scope="module")
def template_dump_size(sandbox) -> int:
    prepared = prepare(sandbox, load_suite(patterns=[TASK])[0])
    path = sandbox.dbs.cache_path(prepared.template.name)
    assert path is not None and path.exists()
    return path.stat().st_size


def assert_every_record_has_its_evidence(results: Path) -> None:
    rd = ResultsDir(results)
    assert rd.lost_evidence() == {}
    data = rd.runs.read_bytes()
    assert not data or data.endswith(b"\n")
    for record in rd.records():
        rd.load_dump(record.after_digest)  # rebuilt and checked by digest


def test_a_full_disk_mid_audit_exits_4_with_every_record_whole_and_the_resume_completes(
    sandbox, tmp_path, tmpfs, template_dump_size
):
    k = 60
    reference = tmp_path / "reference"
    assert agentrel(*audit_args(reference, k), "--no-report").returncode == 0
    disk = tmpfs(template_dump_size + 200_000)  # room for the template dump and some of the runs
    results = disk / "r"
    full = agentrel(*audit_args(results, k), "--no-report")
    one_error_line(full, 4, "run the same command to resume")
    assert "No space left on device" in full.stderr
    recorded = ResultsDir(results).records()
    assert 0 < len(recorded) < k, "the disk must fill mid-audit"
    assert_every_record_has_its_evidence(results)
    assert not list(results.rglob("*.tmp"))
    remount(disk, f"size={template_dump_size + 4_000_000}")
    resumed = agentrel(*audit_args(results, k), "--no-report")
    assert resumed.returncode == 0, resumed.stderr
    assert_every_record_has_its_evidence(results)
    lines = [json.loads(line) for line in (results / "runs.jsonl").read_text().splitlines()]
    assert len(lines) == len({line["run_id"] for line in lines}) == k
    ours = {r.run_id: (r.verdict.outcome, r.after_digest) for r in ResultsDir(results).records()}
    theirs = {r.run_id: (r.verdict.outcome, r.after_digest) for r in ResultsDir(reference).records()}
    assert ours == theirs


def test_a_read_only_half_finished_results_directory_fails_before_any_paid_call(sandbox, tmpfs):
    disk = tmpfs(8_000_000)
    results = disk / "r"
    args = [*audit_args(results, 2, "openai/gpt-x"), "-j", "1", "--no-report"]
    with FakeProvider() as fake:
        env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": fake.url}
        fake.queue(200, openai_text("Nothing to do."))
        fake.queue(401, auth_error("key revoked"))  # stops the audit after its first run: half-finished
        first = agentrel(*args, env=env)
        one_error_line(first, 4, "refused the credentials")
        assert len(ResultsDir(results).records()) == 1 and len(fake.requests) == 2
        remount(disk, "ro")
        again = agentrel(*args, env=env)
        one_error_line(again, 4, "Read-only file system")
        assert len(fake.requests) == 2, "no model call may be spent on a directory that cannot be written"


def test_a_second_writer_on_the_same_results_is_refused_while_the_first_finishes(sandbox, tmp_path):
    results = tmp_path / "r"
    k = 40
    first = subprocess.Popen(
        [*AGENTREL, *audit_args(results, k), "--no-report"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    runs = results / "runs.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not runs.exists() or runs.read_bytes().count(b"\n") < 1):
        time.sleep(0.05)
    # Paused, the first writer holds its lock for as long as the second needs to try it: on a loaded
    # machine the first could otherwise finish its 40 runs before the second had even started (a flake).
    os.kill(first.pid, signal.SIGSTOP)
    try:
        second = agentrel(*audit_args(results, k), "--no-report")
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert first.wait(timeout=300) == 0
    one_error_line(second, 4, f"another agentrel process (pid {first.pid})")
    records = [json.loads(line) for line in runs.read_text().splitlines()]
    retried = [(r["run_id"], r["status"], r.get("error")) for r in records if r["status"] != "valid"]
    assert len(records) == k and len({r["run_id"] for r in records}) == k, retried


def test_a_held_results_directory_is_refused_before_the_sandbox_is_opened(tmp_path):
    """A second writer once opened the sandbox and checked the task templates before it tried the
    results lock, so it waited (10 minutes, in a loaded run) on what a paused first writer held in
    Postgres. The lock now comes first: with the directory held, not even the server is tried."""
    import fcntl

    from agentrel.harness.errors import EnvironmentFailure
    from agentrel.harness.results import layout
    from agentrel.harness.run.audit import audit

    results = tmp_path / "r"
    results.mkdir()
    fd = os.open(results / layout.LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.pwrite(fd, b"4242", 0)
        unreachable = "host=127.0.0.1 port=1 user=nobody dbname=nothing connect_timeout=2"
        with pytest.raises(EnvironmentFailure, match=r"another agentrel process \(pid 4242\)"):
            audit(models=["scripted/oracle"], tasks=[TASK], results=results, dsn=unreachable)
    finally:
        os.close(fd)
    assert sorted(p.name for p in results.iterdir()) == [layout.LOCK]  # nothing created beside it


def test_a_stale_lock_file_from_a_killed_writer_does_not_block_the_resume(sandbox, tmp_path):
    results = tmp_path / "r"
    results.mkdir()
    (results / ".lock").write_text("999999")  # what a killed writer leaves: the file, not the lock
    done = agentrel(*audit_args(results, 2), "--no-report")
    assert done.returncode == 0, done.stderr


def test_lost_dumps_and_transcripts_are_found_on_resume_and_never_re_rolled(sandbox, tmp_path):
    results = tmp_path / "r"
    assert agentrel(*audit_args(results, 4), "--no-report").returncode == 0
    rd = ResultsDir(results)
    records = sorted(rd.records(), key=lambda r: r.run_id)
    before = {r.run_id: (r.verdict.outcome, r.after_digest) for r in records}
    # A dump a crashed writer never renamed into place: its temporary file must not stand in for it.
    victim = next(r for r in records if (rd.dumps / f"{r.after_digest}.delta.jsonl.gz").exists())
    real = rd.dumps / f"{victim.after_digest}.delta.jsonl.gz"
    real.rename(rd.dumps / f"{victim.after_digest}.delta.jsonl.gz.4242.abcd.tmp")
    (rd.dumps / f"{victim.after_digest}.4242.copy.tmp").write_bytes(b"half a copy")
    # A transcript deleted by hand, and one altered.
    other = next(r for r in records if r.after_digest != victim.after_digest)
    rd.transcript_path(other.run_id, 1).unlink()
    lost = rd.lost_evidence()
    assert other.run_id in lost and "missing" in lost[other.run_id]
    assert all(r.run_id in lost for r in records if r.after_digest == victim.after_digest)
    resumed = agentrel(*audit_args(results, 4), "--no-report")
    assert resumed.returncode == 0, resumed.stderr
    said = " ".join(resumed.stderr.split())  # the console wraps long lines
    assert f"{len(lost)} recorded run(s) lost their evidence" in said
    assert "cannot be published (evidence_lost)" in said
    assert not list(results.rglob("*.tmp"))
    # The first valid attempt is final: nothing ran again (a second draw would be a re-roll), and the
    # recorded verdicts still stand, with their loss reported.
    assert len((results / "runs.jsonl").read_text().splitlines()) == 4
    after = {r.run_id: (r.verdict.outcome, r.after_digest) for r in ResultsDir(results).records()}
    assert after == before
    assert ResultsDir(results).lost_evidence().keys() == lost.keys()


def test_results_pointing_at_a_file_is_one_line(sandbox, tmp_path):
    target = tmp_path / "a-file"
    target.write_text("x")
    one_error_line(agentrel(*audit_args(target, 1)), 2, "is a file")
