"""Named exit codes and the one exception type the CLI turns into a single clear line."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1  # the command ran and found a problem (a spec error, a proof mismatch)
    USAGE = 2  # bad flags or arguments
    BAD_INPUT = 3  # a file the user gave cannot be used
    ENVIRONMENT = 4  # a missing binary, an unreachable server, an unusable directory
    INTERRUPTED = 130


class UserError(Exception):
    """An error the user can fix. The message is one line: what is wrong, where, and what to do."""

    def __init__(self, message: str, code: ExitCode = ExitCode.BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code
