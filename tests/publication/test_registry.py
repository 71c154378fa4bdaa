"""The supersession registry: append-only, hash-chained, locked; edits and torn lines are caught."""

from __future__ import annotations

import json
import multiprocessing
import sys
from pathlib import Path

import pytest

from agentrel.harness.errors import IntegrityFailure, Refused, UsageError
from agentrel.harness.protocol.registry import (
    GENESIS,
    read_registry,
    register,
    repair,
    status_of,
    supersede,
    withdraw,
)

A, B, C = "a" * 64, "b" * 64, "c" * 64
PROTOCOL, SUBJECT, SUBJECT2 = "1" * 64, "2" * 64, "3" * 64


@pytest.fixture
def reg(tmp_path: Path) -> Path:
    path = tmp_path / "home" / "registry.jsonl"
    register(path, A, PROTOCOL, SUBJECT, by="tester")
    register(path, B, PROTOCOL, SUBJECT2, by="tester")
    return path


def test_statuses_follow_the_appended_judgements(reg):
    assert status_of(reg, A) == "active"
    supersede(reg, A, "the matrix missed a hard task", replacement="4" * 64, by="tester")
    assert status_of(reg, A) == "superseded"
    withdraw(reg, A, "evaluator bug found", by="tester")
    assert status_of(reg, A) == "withdrawn" and status_of(reg, B) == "active"
    state = read_registry(reg)
    assert [e.action for e in state.entries] == ["register", "register", "supersede", "withdraw"]
    assert state.entries[0].prev == GENESIS and state.records[A].judgement.reason == "evaluator bug found"


def test_a_rerun_publish_registers_once_and_a_derived_scorecard_links_back(reg):
    first = read_registry(reg).entries[0]
    assert register(reg, A, PROTOCOL, SUBJECT) == first
    assert len(read_registry(reg).entries) == 2
    register(reg, C, "5" * 64, SUBJECT, derived_from=A)
    assert read_registry(reg).records[C].registration.derived_from == A


@pytest.mark.parametrize(
    ("act", "fragment"),
    [
        (lambda p: supersede(p, C, "no such scorecard"), "not in the registry"),
        (lambda p: withdraw(p, C, "no such scorecard"), "not in the registry"),
        (lambda p: register(p, A, PROTOCOL, SUBJECT2), "registered already, with other hashes"),
        (lambda p: register(p, C, PROTOCOL, SUBJECT, derived_from="9" * 64), "not a registered scorecard"),
    ],
)
def test_refused_appends_leave_the_file_untouched(reg, act, fragment):
    before = reg.read_bytes()
    with pytest.raises(Refused, match=fragment):
        act(reg)
    assert reg.read_bytes() == before


def test_a_judgement_is_never_repeated_or_reversed(reg):
    supersede(reg, A, "amended")
    with pytest.raises(Refused, match="superseded already"):
        supersede(reg, A, "again")
    withdraw(reg, B, "bad run")
    with pytest.raises(Refused, match="withdrawn already"):
        supersede(reg, B, "too late")
    with pytest.raises(UsageError, match="--reason"):
        withdraw(reg, A, "  ")
    with pytest.raises(UsageError, match="64 lowercase hex"):
        supersede(reg, "ABC", "x")


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def _rewrite(path: Path, lines: list[dict]) -> None:
    import rfc8785

    path.write_bytes(b"".join(rfc8785.dumps(line) + b"\n" for line in lines))


def test_editing_an_earlier_line_is_caught_on_read(reg):
    supersede(reg, A, "amended")
    lines = _lines(reg)
    lines[0]["subject_config_hash"] = SUBJECT2  # still a valid, canonical entry: only the chain notices
    _rewrite(reg, lines)
    with pytest.raises(IntegrityFailure, match=r"registry.jsonl:2: the hash chain is broken"):
        read_registry(reg)
    with pytest.raises(IntegrityFailure):
        status_of(reg, B)
    with pytest.raises(IntegrityFailure):
        register(reg, C, PROTOCOL, SUBJECT)


def test_removing_or_reordering_lines_is_caught(reg):
    supersede(reg, A, "amended")
    lines = _lines(reg)
    _rewrite(reg, [lines[0], lines[2]])
    with pytest.raises(IntegrityFailure, match=":2: its seq is broken"):
        read_registry(reg)
    _rewrite(reg, [lines[1], lines[0], lines[2]])
    with pytest.raises(IntegrityFailure, match=":1: its seq is broken"):
        read_registry(reg)


def test_a_torn_last_line_is_reported_refused_and_set_aside_never_dropped(reg):
    whole = reg.read_bytes()
    torn = b'{"action":"withdraw","digest":"' + A.encode()
    reg.write_bytes(whole + torn)
    state = read_registry(reg)
    assert state.torn is not None and (state.torn.offset, state.torn.size) == (len(whole), len(torn))
    assert len(state.entries) == 2
    with pytest.raises(IntegrityFailure, match="torn"):
        status_of(reg, A)
    with pytest.raises(IntegrityFailure, match="torn"):
        supersede(reg, A, "amended")
    assert reg.read_bytes() == whole + torn
    side = repair(reg)
    assert side is not None and side.read_bytes() == torn and reg.read_bytes() == whole
    assert repair(reg) is None and status_of(reg, A) == "active"


def _register_many(path: str, worker: int) -> None:
    for i in range(5):
        register(Path(path), f"{worker:02x}{i:02x}".ljust(64, "e"), PROTOCOL, SUBJECT)


def test_concurrent_writers_append_in_turn(tmp_path):
    path = tmp_path / "registry.jsonl"
    ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    procs = [ctx.Process(target=_register_many, args=(str(path), w)) for w in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0] * 6
    state = read_registry(path)
    assert len(state.entries) == 30 and len(state.records) == 30 and state.torn is None


def run_cli(args: list[str], monkeypatch, capsys) -> tuple[int, str, str]:
    from agentrel.harness.cli.main import main

    monkeypatch.setattr(sys, "argv", ["agentrel", *args])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main()
    got = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 1), got.out, got.err


def test_the_cli_appends_lists_and_refuses_in_one_line(reg, monkeypatch, capsys):
    flag = ["--registry", str(reg)]
    code, out, _ = run_cli(["registry", "supersede", A, "--reason", "amended", *flag], monkeypatch, capsys)
    assert code == 0 and "superseded" in out
    code, _, err = run_cli(["registry", "withdraw", C, "--reason", "x", *flag], monkeypatch, capsys)
    assert code == 5 and err.count("\n") == 1 and err.startswith("agentrel: error: ") and C[:12] in err
    code, out, _ = run_cli(["registry", "list", *flag], monkeypatch, capsys)
    assert code == 0 and "superseded" in out and "active" in out and read_registry(reg).head in out
    monkeypatch.setenv("AGENTREL_REGISTRY", str(reg))
    reg.write_bytes(reg.read_bytes() + b'{"torn')
    code, out, err = run_cli(["registry", "list"], monkeypatch, capsys)
    assert code == 1 and "torn" in err and "superseded" in out
    code, out, _ = run_cli(["registry", "repair"], monkeypatch, capsys)
    assert code == 0 and "torn line moved" in out


def test_a_rewritten_last_line_is_caught_even_when_canonical_by_its_signature(reg):
    lines = _lines(reg)
    reg.write_bytes(reg.read_bytes().rsplit(b"\n", 2)[0] + b"\n" + json.dumps(lines[-1]).encode() + b"\n")
    with pytest.raises(IntegrityFailure, match=":2: not the canonical form"):
        read_registry(reg)
    lines[-1]["by"] = "someone else"
    _rewrite(reg, lines)
    # Nothing after it vouches for it; before signatures the chain read it as valid (only a head kept
    # elsewhere told). Now its own signature does.
    with pytest.raises(IntegrityFailure, match=":2: its signature does not verify"):
        read_registry(reg)


def test_an_append_interrupted_before_its_head_is_refused_until_repair_re_signs_it(reg, monkeypatch, capsys):
    from agentrel.harness.protocol.registry_head import head_path

    old_head = head_path(reg).read_bytes()
    supersede(reg, A, "amended")
    head_path(reg).write_bytes(old_head)  # the line landed, its head did not
    with pytest.raises(IntegrityFailure, match=r"registry.jsonl:3: not covered by the signed head"):
        read_registry(reg)
    code, out, _ = run_cli(["registry", "repair", "--registry", str(reg)], monkeypatch, capsys)
    assert code == 0 and "re-signed" in out
    assert [e.action for e in read_registry(reg).entries] == ["register", "register", "supersede"]


def test_a_cut_registry_is_never_re_signed_by_repair(reg, monkeypatch, capsys):
    withdraw(reg, B, "bad run")
    reg.write_bytes(reg.read_bytes().rsplit(b"\n", 2)[0] + b"\n")  # the withdrawal deleted
    code, _, err = run_cli(["registry", "repair", "--registry", str(reg)], monkeypatch, capsys)
    assert code == 3 and "registry.jsonl:3: missing" in err and "was cut" in err
    with pytest.raises(IntegrityFailure, match="was cut"):
        status_of(reg, B)
