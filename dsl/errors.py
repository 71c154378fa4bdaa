"""The DSL's error types. Every message a user sees starts with ``file:line:col:``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """Where a node starts in its spec file (1-based line and column)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class DslError(Exception):
    """Base of every error the DSL raises on purpose; the CLI turns it into one clear message."""


class SpecError(DslError):
    """A spec that cannot be parsed or evaluated. The message is ``file:line:col: what`` plus context."""

    @classmethod
    def at(cls, span: Span, message: str, text: str | None = None) -> SpecError:
        context = caret_context(text, span.line, span.col) if text is not None else ""
        return cls(f"{span}: {message}" + (f"\n{context}" if context else ""))


class ParamError(DslError):
    """A param override that names no declared param or cannot be coerced to its declared type."""


class DiffError(DslError):
    """Two dumps that cannot be compared (different tables or columns), or a bad volatile override."""


def caret_context(text: str, line: int, col: int, span: int = 60) -> str:
    """The source line around ``col`` with a caret under it (the shape lark's ``get_context`` prints)."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    src = lines[line - 1].expandtabs(1)
    start = max(0, col - 1 - span)
    return f"  {src[start : col - 1 + span]}\n  {' ' * (col - 1 - start)}^"
