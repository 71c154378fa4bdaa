"""`make test-inspect`: Inspect AI installed (the inspect extra), one real Postgres (tests/conftest.py),
and mockllm's tokenizer available offline (tests/inspect/encoding.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.inspect.encoding import ensure_o200k

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def tiktoken_cache() -> Path:
    # Kept under the checkout's .agentrel/ (ignored by git), so it is rebuilt only on a fresh machine.
    return ensure_o200k(ROOT / ".agentrel" / "tiktoken")


@pytest.fixture
def inspect_env(sandbox, tiktoken_cache, monkeypatch) -> dict[str, str]:
    """The environment an `inspect eval` runs in: AGENTREL_HOME (the session's cluster) and the encoding."""
    import os

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tiktoken_cache))
    return dict(os.environ)
