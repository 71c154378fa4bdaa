"""The preregistered fault-coverage floor: the share of a stratum's scheduled fault runs that must be
witnessed for the stratum to be published (issue 34, seed 003). Pure.

The manifest's `fault_coverage_floor` is a share in (0, 1] for every fault kind, or a mapping from fault
kind to share (a kind it does not name keeps the default). Absent, the floor is 1: every scheduled fault
run witnessed, the rule before floors existed. Shares are read through their shortest decimal and
compared in exact rationals, so 0.9 of 10 runs means 9 witnessed, not 8.999....
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

__all__ = ["DEFAULT_FLOOR", "below_floor", "floor_for", "read_floor"]

DEFAULT_FLOOR = 1.0


def _share(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{value!r} is not a number")
    if not 0.0 < float(value) <= 1.0:
        raise ValueError(f"{value!r} is not a share in (0, 1]")
    return float(value)


def read_floor(raw: Any) -> dict[str, float] | float:
    """The manifest's entry as a share or {fault kind: share}; ValueError naming what is wrong."""
    if raw is None:
        return DEFAULT_FLOOR
    if isinstance(raw, Mapping):
        return {str(kind): _share(v) for kind, v in raw.items()}
    return _share(raw)


def floor_for(floor: dict[str, float] | float, kind: str) -> float:
    return floor.get(kind, DEFAULT_FLOOR) if isinstance(floor, dict) else floor


def below_floor(witnessed: int, scheduled: int, floor: float) -> bool:
    """witnessed / scheduled < floor, exactly (a stratum with nothing scheduled is not below)."""
    if scheduled <= 0:
        return False
    return Fraction(witnessed, scheduled) < Fraction(repr(floor))
