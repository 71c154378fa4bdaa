"""Issue 31, attack 5, written as the attack: the signing key copied (0600 does not stop the same user)
and used to sign registry entries. The registry rotates to a new key and revokes the old one from a date;
what the old key signed from then on is void (`registry verify` and `publish` refuse it), what it signed
before stays valid, and verification follows the rotation chain."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agentrel.harness.errors import IntegrityFailure, Refused, UsageError
from agentrel.harness.protocol.registry import (
    RegistryEntry,
    anchor_freeze,
    read_registry,
    revoke_key,
    rotate_key,
    verify,
)
from agentrel.harness.protocol.signing import KEY_ENV, load_signer
from tests.publication.test_compare import run_cli

H = "ab" * 32


def _freeze(registry: Path, digest: str, signer) -> RegistryEntry:  # type: ignore[no-untyped-def]
    return anchor_freeze(registry, digest, H, H, 0, "tester", signer=signer)


@pytest.fixture
def keys(tmp_path):  # type: ignore[no-untyped-def]
    old = load_signer(tmp_path / "old.key")
    stolen_path = tmp_path / "stolen.key"
    shutil.copy(old.path, stolen_path)
    os.chmod(stolen_path, 0o600)
    return old, load_signer(stolen_path), load_signer(tmp_path / "new.key")


def test_rotation_keeps_old_entries_valid_and_verification_follows_the_chain(tmp_path, keys):
    old, _, new = keys
    registry = tmp_path / "registry.jsonl"
    _freeze(registry, "01" * 32, old)
    rotate_key(registry, new, signer=old)
    _freeze(registry, "02" * 32, new)
    for trusted in (old.public, new.public):  # a reader who kept either key follows the chain
        state = verify(registry, trusted)
        assert set(state.freezes) == {"01" * 32, "02" * 32}
        assert state.keys == (old.public, new.public) and state.key == new.public and not state.void
    # After the rotation the old key signs nothing more, not even through the library.
    with pytest.raises(Refused, match="kept by key"):
        _freeze(registry, "03" * 32, old)
    # A stranger's key is not in the chain.
    stranger = load_signer(tmp_path / "stranger.key")
    with pytest.raises(IntegrityFailure, match="not the trusted"):
        verify(registry, stranger.public)


def test_a_copied_key_used_after_its_revocation_is_void_and_refused(tmp_path, keys, monkeypatch, capsys):
    old, stolen, new = keys
    registry = tmp_path / "registry.jsonl"
    honest = _freeze(registry, "01" * 32, old)
    # The copy signs an anchor for a freeze the owner never made (a forged audit's).
    forged = _freeze(registry, "0f" * 32, stolen)
    # The owner finds out: rotates, then revokes the old key from the time the copy was used.
    rotate_key(registry, new, signer=old)
    revoke_key(registry, old.public, forged.at, "the key was copied", signer=new)
    state = verify(registry, new.public)
    assert [e.digest for e in state.void] == [forged.digest]
    assert honest.digest in state.freezes and forged.digest not in state.freezes

    # `registry verify` refuses it, naming the revoked key.
    code, _, err = run_cli(
        ["registry", "verify", "--registry", str(registry), "--public-key", new.public], monkeypatch, capsys
    )
    assert code != 0 and "revoked key" in err, err

    # The copy used again after the rotation: a line signed by the old key is refused outright.
    fake = forged.model_copy(
        update={"seq": len(state.entries), "prev": state.head, "digest": "0e" * 32, "sig": "0" * 128}
    )
    fake = fake.model_copy(update={"sig": stolen.sign("registry-entry", fake.body())})
    with open(registry, "ab") as fh:
        fh.write(fake.line() + b"\n")
    with pytest.raises(IntegrityFailure, match="the registry's key is"):
        read_registry(registry)


def test_revocation_is_refused_where_it_would_mean_nothing(tmp_path, keys):
    old, _, new = keys
    registry = tmp_path / "registry.jsonl"
    _freeze(registry, "01" * 32, old)
    with pytest.raises(UsageError, match="rotate-key"):
        revoke_key(registry, old.public, "2026-01-01", "lost", signer=old)
    rotate_key(registry, new, signer=old)
    with pytest.raises(UsageError, match="never signed"):
        revoke_key(registry, "cd" * 32, "2026-01-01", "lost", signer=new)
    with pytest.raises(UsageError, match="--from"):
        revoke_key(registry, old.public, "last tuesday", "lost", signer=new)


def test_the_rotate_and_revoke_commands(tmp_path, monkeypatch, capsys):
    registry = tmp_path / "registry.jsonl"
    key = tmp_path / "home" / "signing.key"
    monkeypatch.setenv(KEY_ENV, str(key))
    first = load_signer(key)
    _freeze(registry, "01" * 32, first)
    code, out, err = run_cli(["registry", "rotate-key", "--registry", str(registry)], monkeypatch, capsys)
    assert code == 0, err
    second = load_signer(key, create=False)
    assert second.public != first.public and first.public in out
    assert (key.parent / f"signing.key.retired-{first.public[:16]}").exists()
    assert verify(registry, first.public).key == second.public
    revoke = ["registry", "revoke-key", first.public, "--from", "2099-01-01", "--reason", "retired"]
    code, _, err = run_cli([*revoke, "--registry", str(registry)], monkeypatch, capsys)
    assert code == 0, err
    code, _, err = run_cli(["registry", "verify", "--registry", str(registry)], monkeypatch, capsys)
    assert code == 0, err  # nothing was signed after 2099: nothing is void


def test_scorecards_signed_before_a_rotation_still_compare(tmp_path, monkeypatch, capsys):
    """Rotation keeps old entries valid: two scorecards published under the old key compare after the
    registry moved to a new key, for a reader trusting either key."""
    from tests.publication.test_compare import outcome_a, outcome_b, published

    registry = tmp_path / "registry.jsonl"
    a = published(tmp_path, "a", "scripted/oracle", outcome_a, registry)
    b = published(tmp_path, "b", "scripted/overreach", outcome_b, registry)
    old = load_signer()
    rotate_key(registry, load_signer(tmp_path / "new.key"), signer=old)
    for trusted in (old.public, load_signer(tmp_path / "new.key").public):
        out = tmp_path / f"cmp-{trusted[:8]}"
        args = ["compare", str(a), str(b), "--registry", str(registry), "--public-key", trusted]
        code, _, err = run_cli([*args, "--out", str(out)], monkeypatch, capsys)
        assert code == 0, err


def test_publish_refuses_a_freeze_the_copied_key_anchored_after_its_revocation(tmp_path, keys):
    """The copy anchors the freeze of a forged audit; once the key is revoked from then, the anchor is
    void and `publish` (under the new key) refuses the results: freeze_unanchored."""
    from agentrel.harness.protocol.freeze import write_freeze
    from agentrel.harness.publication.publish import publish
    from tests.publication import factory

    old, stolen, new = keys
    registry = tmp_path / "registry.jsonl"
    _freeze(registry, "01" * 32, old)  # the owner's own, earlier entry
    m = factory.manifest(models=("scripted/oracle",), tasks=("itsm-cab-window",), k=1)
    results = factory.results_dir(tmp_path / "forged", m)
    write_freeze(results, "forger", now=factory.FROZEN_AT, registry=registry, signer=stolen)
    forged_at = read_registry(registry).entries[-1].at
    rotate_key(registry, new, signer=old)
    revoke_key(registry, old.public, forged_at, "the key was copied", signer=new)
    proof = publish(results, tmp_path / "pub", registry=registry, signer=new).proof
    assert "freeze_unanchored" in proof.reasons and not proof.eligible
