"""The fault path's tests: real tool server processes, real sockets on 127.0.0.1, the session's Postgres."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def double_charge(sandbox):
    from agentrel.harness.run.episode import prepare
    from agentrel.harness.tasks import load_suite

    return prepare(sandbox, load_suite(patterns=["csm-double-charge"])[0])
