"""Deterministic seed data: a realistic, internally consistent enterprise, the same bytes on any machine.

The generator draws from `random.Random(f"{seed}|{scale}|{version}")` (string seeding is SHA-512 based and
stable across platforms and Python versions) and emits values already in the dump's canonical forms, so
the seed digest can be computed from the generated rows alone and checked against the loaded database.
Money is generated in integer cents; no float ever reaches a value. The verticals are generated in a
fixed order (people, ITSM, CSM) from one random stream: reordering them changes every byte.
"""

from __future__ import annotations

from agentrel.dsl.state import State
from agentrel.sandbox.environments.enterprise.schema import table_infos
from agentrel.sandbox.environments.enterprise.seed.core import (
    DEFAULT_SEED,
    GENERATOR_VERSION,
    NOW,
    SERVICE_ACCOUNT,
    Generator,
)
from agentrel.sandbox.environments.enterprise.seed.csm import csm
from agentrel.sandbox.environments.enterprise.seed.itsm import itsm
from agentrel.sandbox.environments.enterprise.seed.people import people

__all__ = ["DEFAULT_SEED", "GENERATOR_VERSION", "NOW", "SERVICE_ACCOUNT", "generate"]


def generate(seed: str = DEFAULT_SEED, scale: int = 1) -> State:
    """The seeded enterprise as a dump-shaped State (canonical values, ready to load and to digest)."""
    if scale < 1:
        raise ValueError("scale must be a positive integer")
    gen = Generator(seed, scale)
    for vertical in (people, itsm, csm):
        vertical(gen)
    infos = table_infos()
    state = State.empty(infos.values())
    for name, rows in gen.rows.items():
        cols = infos[name].columns
        table = state.tables[name]
        for row in rows:
            table.add(tuple(row.get(c) for c in cols))
    return state
