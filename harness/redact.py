"""One redaction step for every string that leaves a provider or a failure for a file or a terminal.

It removes the secrets in use (API keys, exactly) and anything shaped like one: a bearer token, a
`sk-…`-style key, the password (and user) of a URL. A provider that echoes the Authorization header back
in its error body must not put the key into runs.jsonl.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[redacted]"
_SHAPES = re.compile(
    r"(?i)(?<=bearer )[A-Za-z0-9._~+/=-]{8,}"  # Authorization: Bearer <token>
    r"|\b(?:sk|pk|rk|key)-[A-Za-z0-9_-]{12,}"  # OpenAI-, Anthropic- and similar key formats
    r"|(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"  # user:password@ in a URL
)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    # Longest first, so a key inside a longer secret is not left half-replaced.
    for secret in sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return _SHAPES.sub(REDACTED, text)
