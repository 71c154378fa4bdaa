"""The report as plain data (sections of paragraphs, tables and images) and the formatting of its
numbers and labels; report_doc builds it, render turns it into Markdown and HTML.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from agentrel.analysis.pools import PoolResult

KIND_LABEL = {"model": "model", "reference": "reference agent", "scripted": "scripted agent"}


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]


@dataclass
class Image:
    path: str
    alt: str


Block = str | Table | Image


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Document:
    title: str
    sections: list[Section]


def fmt(value: object, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _off_the_edge(value: object, digits: int, up: bool) -> object:
    """An endpoint that is not 0 (upper) or not 1 (lower) never prints as one: a zero count's upper bound
    of 4e-5 prints 0.001, not 0.000, which would read as certainty. Other endpoints round as usual."""
    if not isinstance(value, float) or not math.isfinite(value):
        return value
    step = 10.0**-digits
    if up and 0.0 < value < step / 2:
        return step
    if not up and 1.0 - step / 2 < value < 1.0:
        return 1.0 - step
    return value


def fmt_ci(lo: object, hi: object, digits: int = 3) -> str:
    return (
        f"[{fmt(_off_the_edge(lo, digits, False), digits)}, {fmt(_off_the_edge(hi, digits, True), digits)}]"
    )


def fmt_money(value: object) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"${float(value):,.2f}"  # type: ignore[arg-type]


def fmt_k(value: object) -> str:
    """A repeat count; '–' when there is none, scientific notation past a million."""
    if value is None or pd.isna(value):
        return "–"
    k = int(value)  # type: ignore[call-overload]
    return str(k) if k < 10**6 else f"{k:.2e}"


def fmt_p(value: float) -> str:
    return "–" if not math.isfinite(value) else (f"{value:.2g}" if value < 0.001 else f"{value:.3f}")


def agent_label(name: str, kind: str) -> str:
    return name if kind == "model" else f"{name} ({KIND_LABEL.get(kind, kind)})"


def pool_label(p: PoolResult) -> str:
    if p.spec.model == "all":
        return "all models" if p.spec.agent_kind == "model" else "all agents (no models in the input)"
    return agent_label(p.spec.model, p.spec.agent_kind)
