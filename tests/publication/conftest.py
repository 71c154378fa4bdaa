"""Every publication test signs with a key of its own session, never the user's: the key is made on first
use in a temporary AGENTREL_SIGNING_KEY; a test without a registry of its own gets a fresh one."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrel.harness.protocol.signing import KEY_ENV, PUBLIC_KEY_ENV


@pytest.fixture(scope="session", autouse=True)
def signing_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("keys") / "signing.key"
    old = {name: os.environ.pop(name, None) for name in (KEY_ENV, PUBLIC_KEY_ENV)}
    os.environ[KEY_ENV] = str(path)
    # Made here, before any test: otherwise whichever test signs first in a worker also sees the
    # "made a signing key" line, and a test counting its output's lines depends on the order (a flake).
    from agentrel.harness.protocol.signing import load_signer

    load_signer()
    yield path
    for name, value in old.items():
        os.environ.pop(name, None)
        if value is not None:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def default_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "default-registry" / "registry.jsonl"
    monkeypatch.setenv("AGENTREL_REGISTRY", str(path))
    return path


@pytest.fixture(scope="session", autouse=True)
def synthetic_evidence() -> Iterator[None]:
    """The factory's records name tasks that are not in the suite and dumps that are placeholders, so
    there is nothing to label again: those tests check the validator's other rules (session-wide, so
    module-scoped fixtures that publish see it too). Re-derivation is checked on real audits, in tests
    marked `real_evidence` (test_rederive.py, test_publish_audit.py), which get the real step back."""
    import agentrel.harness.publication.validate as validate_module

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            validate_module, "rederive_outcomes", lambda results, manifest, workers=None: ([], None)
        )
        yield


@pytest.fixture(autouse=True)
def real_evidence(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("real_evidence") is not None:
        import agentrel.harness.publication.validate as validate_module
        from agentrel.harness.publication.rederive import rederive_outcomes

        monkeypatch.setattr(validate_module, "rederive_outcomes", rederive_outcomes)
