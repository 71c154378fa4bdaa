"""Named exit codes, and the one place a domain error becomes one.

Domain errors (`harness.errors`, and each package's own) say what kind of problem happened; this module
alone decides which exit code each kind gets.
"""

from __future__ import annotations

from enum import IntEnum

from agentrel.harness.errors import (
    AuthFailure,
    CheckFailed,
    EnvironmentFailure,
    Refused,
    UsageError,
    UserError,
)

__all__ = ["ExitCode", "UserError", "exit_code"]


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1  # the command ran and found a problem (a spec error, a proof mismatch)
    USAGE = 2  # bad flags or arguments
    BAD_INPUT = 3  # a file the user gave cannot be used
    ENVIRONMENT = 4  # a missing binary, an unreachable server, refused credentials, an unusable directory
    REFUSED = 5  # the inputs do not permit the operation (a comparison, a supersession); nothing written
    GATE = (
        6  # `audit --fail-on`: a condition the caller asked to fail on holds (damage, uncertified, invalid)
    )
    INTERRUPTED = 130


def exit_code(exc: UserError) -> ExitCode:
    if isinstance(exc, AuthFailure | EnvironmentFailure):
        return ExitCode.ENVIRONMENT
    if isinstance(exc, UsageError):
        return ExitCode.USAGE
    if isinstance(exc, Refused):
        return ExitCode.REFUSED
    if isinstance(exc, CheckFailed):
        return ExitCode.FAILED
    return ExitCode.BAD_INPUT
