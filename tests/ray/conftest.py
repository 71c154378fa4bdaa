"""One local Ray instance (2 CPUs, loopback only) for the session; each slot's cluster lives under the
session's AGENTREL_HOME and is destroyed at the end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

WORKERS = 2


@pytest.fixture(scope="session")
def ray_address(agentrel_home: Path) -> Iterator[str]:
    import ray
    from ray import cloudpickle

    import tests.ray.agents
    from agentrel.harness.executors.ray import start_local_ray

    start_local_ray(WORKERS)
    # Actors unpickle the setup hook by value: the tests package need not be importable in a worker.
    cloudpickle.register_pickle_by_value(tests.ray.agents)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()
    from agentrel.sandbox.servers.local import LocalCluster

    for home in sorted((agentrel_home / "ray").glob("slot-*")):
        LocalCluster(home).destroy()


@pytest.fixture(scope="session")
def slot_homes(agentrel_home: Path) -> Path:
    return agentrel_home / "ray"
