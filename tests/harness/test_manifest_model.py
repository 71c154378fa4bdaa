"""The manifest has a typed shape (harness.results.manifest.Manifest) and is still written as the same
plain JSON object: optional parts absent, never null, so a matrix without them keeps its hash."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentrel.harness.results.manifest import Manifest, TaskEntry

BASE = dict(
    package_version="0.1.0",
    server_version="PostgreSQL 15.18",
    environment={"name": "agentrel-enterprise", "fingerprint": "f" * 64},
    seed_digest="5" * 64,
    conditions=[{"name": "clean"}],
    k=2,
    max_steps=30,
    max_attempts=3,
    sampling={"temperature": 0.6},
    agents=[{"name": "scripted/oracle", "kind": "scripted"}],
    tasks=[
        TaskEntry(
            id="t",
            spec_digest="1" * 64,
            fixture_digest="2" * 64,
            template_digest="3" * 64,
            params={},
            optimal_steps=None,
        )
    ],
)


def test_absent_optional_parts_are_left_out_not_written_as_null():
    doc = Manifest(**BASE).document()
    assert "stopping" not in doc and "faults" not in doc and "excluded_cells" not in doc
    assert doc["format"] == "agentrel-manifest/1" and doc["tasks"][0]["optimal_steps"] is None
    with_rule = Manifest(**BASE, stopping={"until": "detect"}).document()
    assert with_rule["stopping"] == {"until": "detect"} and {**with_rule, "stopping": None} != doc


def test_a_misspelt_or_missing_field_is_refused():
    with pytest.raises(ValidationError, match="stoping"):
        Manifest(**BASE, stoping={"until": "detect"})  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="seed_digest"):
        Manifest(**{k: v for k, v in BASE.items() if k != "seed_digest"})  # type: ignore[arg-type]
