"""Domain errors a user can fix. Each is one line: what is wrong, where, and what to do.

The class says what kind of problem it is; only `harness/cli/` turns a kind into an exit code.
"""

from __future__ import annotations


class UserError(Exception):
    """A file or value the user gave cannot be used."""


class UsageError(UserError):
    """Bad flags or arguments."""


class CheckFailed(UserError):
    """The command ran and found a problem (a spec error, a proof mismatch)."""


class EnvironmentFailure(UserError):
    """A missing binary, an unreachable server, an unusable or locked directory, a full disk."""


class AuthFailure(EnvironmentFailure):
    """A provider refused the credentials: the audit stops before spending more runs."""
