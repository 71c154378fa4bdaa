"""Signed, verifiable publication, tested as the attacks it stops: a hand-appended `register` line for an
edited scorecard; the last line (a withdrawal) deleted; a withdrawal removed mid-file and the rest
re-chained; a withdrawn scorecard's results re-published into a fresh registry; a scorecard or registry
signed by another key. Each is refused in one line, exit non-zero, nothing written."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from agentrel.harness.protocol.canonical import canonical_bytes, sha256_hex
from agentrel.harness.protocol.registry import anchor_freeze, read_registry, withdraw
from agentrel.harness.protocol.registry_head import head_path
from agentrel.harness.protocol.signing import KEY_ENV, load_signer
from agentrel.harness.publication.compare import load_scorecard
from tests.publication import factory
from tests.publication.test_compare import outcome_a, outcome_b, published, run_cli


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> tuple[Path, Path, Path]:
    """Two scorecards published (and their freezes anchored) in one registry, under the session's key."""
    root = tmp_path_factory.mktemp("signed")
    registry = root / "registry.jsonl"
    a = published(root, "a", "scripted/oracle", outcome_a, registry)
    b = published(root, "b", "scripted/overreach", outcome_b, registry)
    return a, b, registry


@pytest.fixture
def reg(base, tmp_path) -> Path:
    copy = tmp_path / "registry.jsonl"
    shutil.copy(base[2], copy)
    shutil.copy(head_path(base[2]), head_path(copy))
    return copy


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def _write(path: Path, lines: list[dict]) -> None:
    path.write_bytes(b"".join(canonical_bytes(line) + b"\n" for line in lines))


def _rechain(lines: list[dict]) -> list[dict]:
    """What anyone can do without the key: renumber and re-link every line (signatures kept)."""
    prev = "0" * 64
    out = []
    for seq, line in enumerate(lines):
        line = dict(line, seq=seq, prev=prev)
        out.append(line)
        prev = sha256_hex(canonical_bytes(line))
    return out


def refused(args: list, fragment: str, tmp_path: Path, monkeypatch, capsys, code: int = 5) -> str:
    monkeypatch.chdir(tmp_path)
    got, out, err = run_cli([str(a) for a in args], monkeypatch, capsys)
    assert got == code, (got, out, err)
    assert err.count("\n") == 1 and err.startswith("agentrel: error: ") and "Traceback" not in err, err
    assert fragment in err, err
    assert not (tmp_path / "comparisons").exists() and not (tmp_path / "cmp").exists()
    return err


def compare_refused(base, reg, fragment, tmp_path, monkeypatch, capsys, *inputs) -> None:
    a, b, _ = base
    args = ["compare", *(inputs or (a, b)), "--registry", reg, "--out", tmp_path / "cmp"]
    refused(args, fragment, tmp_path, monkeypatch, capsys)


def verify_refused(reg, fragment, tmp_path, monkeypatch, capsys) -> None:
    for command in ("verify", "list"):
        refused(["registry", command, "--registry", reg], fragment, tmp_path, monkeypatch, capsys, code=1)


def test_an_honest_registry_verifies_lists_and_compares(base, reg, tmp_path, monkeypatch, capsys):
    code, out, err = run_cli(["registry", "verify", "--registry", str(reg)], monkeypatch, capsys)
    state = read_registry(reg)
    assert code == 0 and f"{len(state.entries)} entries" in out and state.head in out, err
    assert [e.action for e in state.entries] == ["freeze", "register", "freeze", "register"]
    assert state.key == load_signer().public == load_scorecard(base[0]).signed_by
    code, _, err = run_cli(["compare", str(base[0]), str(base[1]), "--registry", str(reg), "--out",
                            str(tmp_path / "cmp")], monkeypatch, capsys)  # fmt: skip
    assert code == 0, err


@pytest.mark.parametrize("forger", ["copied-signature", "own-key"])
def test_a_hand_appended_register_line_for_an_edited_scorecard_is_refused(
    base, reg, tmp_path, monkeypatch, capsys, forger
):
    edited = tmp_path / "edited"
    shutil.copytree(base[1], edited)
    card = json.loads((edited / "scorecard.json").read_bytes())
    damaged = [r for r in card["runs"] if r["damaged"]]
    for r in damaged:  # every damaging run made a pass, and the rates made to agree
        r.update(outcome="PASS", damaged=False, passed=True)
    for c in card["cells"]:
        c["completion"]["x"] += c["damage"]["x"]
        c["damage"]["x"] = 0
    data = canonical_bytes(card)
    (edited / "scorecard.json").write_bytes(data)
    lines = _lines(reg)
    last = lines[-1]
    entry = dict(last, seq=len(lines), prev=sha256_hex(canonical_bytes(last)), digest=sha256_hex(data))
    if forger == "own-key":  # signed, but by a key that does not keep this registry
        other = load_signer(tmp_path / "mallory.key")
        entry["key"] = other.public
        entry.pop("sig")
        entry["sig"] = other.sign("registry-entry", canonical_bytes(entry))
    _write(reg, [*lines, entry])  # correctly chained, canonical
    n = len(lines) + 1
    why = "its signature does not verify" if forger == "copied-signature" else "signed by key"
    verify_refused(reg, f"registry.jsonl:{n}: {why}", tmp_path, monkeypatch, capsys)
    compare_refused(base, reg, f"registry.jsonl:{n}: {why}", tmp_path, monkeypatch, capsys, base[0], edited)


def test_deleting_the_last_line_a_withdrawal_then_comparing_is_refused(
    base, reg, tmp_path, monkeypatch, capsys
):
    withdraw(reg, load_scorecard(base[1]).digest, "the overreach agent's runs were mislabelled")
    kept_head = read_registry(reg).head
    n = len(_lines(reg))
    _write(reg, _lines(reg)[:-1])
    verify_refused(reg, f"registry.jsonl:{n}: missing", tmp_path, monkeypatch, capsys)
    compare_refused(base, reg, "the registry was cut", tmp_path, monkeypatch, capsys)
    # Cut together with the head from before the withdrawal: every line and that head verify. A head
    # kept elsewhere (the one after the withdrawal) still catches the rollback.
    shutil.copy(head_path(base[2]), head_path(reg))
    code, _, err = run_cli(["registry", "verify", "--registry", str(reg)], monkeypatch, capsys)
    assert code == 0, err
    refused(["registry", "verify", "--registry", reg, "--head", kept_head], "not in this registry's chain",
            tmp_path, monkeypatch, capsys, code=1)  # fmt: skip


def test_removing_a_withdrawal_mid_file_and_rechaining_is_refused(base, reg, tmp_path, monkeypatch, capsys):
    withdraw(reg, load_scorecard(base[1]).digest, "the overreach agent's runs were mislabelled")
    anchor_freeze(reg, "9" * 64, "8" * 64, "7" * 64, 0, "tester")  # a later, honest entry
    lines = _lines(reg)
    assert [line["action"] for line in lines[-2:]] == ["withdraw", "freeze"]
    _write(reg, _rechain(lines[:-2] + lines[-1:]))
    n = len(lines) - 1  # where the re-chained freeze now sits
    verify_refused(reg, f"registry.jsonl:{n}: its signature does not verify", tmp_path, monkeypatch, capsys)
    compare_refused(
        base, reg, f"registry.jsonl:{n}: its signature does not verify", tmp_path, monkeypatch, capsys
    )


def test_republishing_a_withdrawn_scorecards_results_into_a_fresh_registry_is_refused(
    base, reg, tmp_path, monkeypatch, capsys
):
    """Same key, fresh registry: the freeze is not anchored there, and anchoring it now comes after the
    runs. (Rewriting every run's start past a new anchor is a key holder's fabrication: trust.md.)"""
    b_results = base[1].with_name("b")
    withdraw(reg, load_scorecard(base[1]).digest, "the overreach agent's runs were mislabelled")
    fresh, out = tmp_path / "fresh" / "registry.jsonl", tmp_path / "out"
    args = ["publish", b_results, "--out", out, "--registry", fresh]
    refused(args, "not publishable (freeze_unanchored)", tmp_path, monkeypatch, capsys, code=1)
    assert not list(out.glob("scorecard.*")) and not factory.registered(fresh)
    refreeze = ["protocol", "freeze", str(b_results), "--by", "mallory", "--registry", str(fresh)]
    code, _, err = run_cli(refreeze, monkeypatch, capsys)
    assert code == 0, err
    refused(args, "not publishable (freeze_after_runs)", tmp_path, monkeypatch, capsys, code=1)
    assert not list(out.glob("scorecard.*")) and not factory.registered(fresh)


def test_a_scorecard_or_registry_signed_by_another_key_is_refused(base, reg, tmp_path, monkeypatch, capsys):
    other = load_signer(tmp_path / "other.key")
    theirs = tmp_path / "theirs.jsonl"
    c = published(tmp_path, "c", "scripted/other", outcome_b, theirs, signer=other)
    assert load_scorecard(c).signed_by == other.public != load_signer().public
    compare_refused(
        base, reg, f"signed by key {other.public[:16]}", tmp_path, monkeypatch, capsys, base[0], c
    )
    # Their registry does not verify under the reader's own key; it does under theirs, pinned.
    compare_refused(base, theirs, "not the trusted", tmp_path, monkeypatch, capsys, base[0], c)
    code, out, err = run_cli(["registry", "verify", "--registry", str(theirs), "--public-key", other.public],
                             monkeypatch, capsys)  # fmt: skip
    assert code == 0 and other.public in out, err


def test_the_key_is_made_once_under_agentrel_home_private_and_printed(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.delenv(KEY_ENV)
    monkeypatch.setenv("AGENTREL_HOME", str(home))
    publics = []
    for name in ("r1", "r2"):
        results = factory.results_dir(tmp_path / name, factory.manifest())
        code, out, err = run_cli(["protocol", "freeze", str(results), "--by", "alice"], monkeypatch, capsys)
        assert code == 0, err
        publics.append(out.rsplit("signed by key ", 1)[1].split()[0])
        assert ("made a signing key" in err) == (name == "r1") and (publics[0] in err) == (name == "r1")
    key = home / "signing.key"
    assert publics[0] == publics[1] == load_signer(key).public
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    os.chmod(key, 0o644)
    again = ["protocol", "freeze", tmp_path / "r1", "--by", "alice"]
    refused(again, "chmod 600", tmp_path, monkeypatch, capsys, code=3)
