"""The one base for the harness's data that crosses a boundary: immutable, and no field it does not
declare (a misspelt or forged key is refused, never silently dropped)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
