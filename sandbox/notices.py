"""One-line notices of slow first-use work: a cluster created or started, a template built, a pinned
wheel fetched. Sent through the standard `agentrel.notices` logger, so the layer that does the work never
prints: the CLI shows them on stderr as `agentrel: ...`; a library user sees them by configuring logging.
"""

from __future__ import annotations

import logging

LOGGER = "agentrel.notices"
_log = logging.getLogger(LOGGER)


def notice(message: str) -> None:
    _log.info(message)
