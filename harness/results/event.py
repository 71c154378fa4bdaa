"""An event of a run: something a tool-pipeline layer (or the session) noticed about one call.

Owned here because it is recorded (`RunRecord.events`); the run's pipeline (`harness.run.pipeline`)
creates them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Event(BaseModel):
    """Something a layer (or the session) noticed about one call, kept in the run record."""

    kind: str
    ordinal: int | None = None
    tool: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)
