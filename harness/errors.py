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


class Refused(CheckFailed):
    """The inputs do not permit the operation (a comparison, a supersession); nothing was written."""


class IntegrityFailure(UserError):
    """An append-only or content-addressed file was edited or cut (a broken hash chain, a torn line)."""


class EnvironmentFailure(UserError):
    """A missing binary, an unreachable server, an unusable or locked directory, a full disk."""


class AuthFailure(EnvironmentFailure):
    """A provider refused the credentials: the audit stops before spending more runs."""
