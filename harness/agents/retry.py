"""One retry policy for every provider: adapters classify errors, this function waits and retries."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class RetryDecision:
    retry: bool
    kind: Literal["rate_limit", "transient", "fatal"] = "transient"
    retry_after: float | None = None


class ProviderError(Exception):
    """A failed provider call, already classified."""

    def __init__(self, message: str, decision: RetryDecision) -> None:
        super().__init__(message)
        self.decision = decision


def parse_retry_after(value: str | None) -> float | None:
    """`Retry-After` is seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def classify_status(status: int, retry_after: str | None) -> RetryDecision:
    """Rate limits, server errors and redirects (a proxy sending the client to a login page) pass with
    time; other client errors (400, 404, 422) will not."""
    if status == 429:
        return RetryDecision(True, "rate_limit", parse_retry_after(retry_after))
    if status >= 500 or status == 408 or 300 <= status < 400:
        return RetryDecision(True, "transient", parse_retry_after(retry_after))
    return RetryDecision(False, "fatal")


async def with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    attempts: int = 6,
    base_delay: float = 1.0,
    max_delay: float = 60.0,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    rng: random.Random | None = None,
) -> T:
    """Exponential backoff with jitter; a server's Retry-After wins when it asks for longer."""
    rng = rng or random.Random()
    for attempt in range(1, attempts + 1):
        try:
            return await call()
        except ProviderError as exc:
            if not exc.decision.retry or attempt == attempts:
                raise
            delay = min(max_delay, base_delay * 2 ** (attempt - 1)) * (0.5 + rng.random() / 2)
            if exc.decision.retry_after is not None:
                delay = max(delay, min(exc.decision.retry_after, max_delay * 5))
            await sleep(delay)
    raise AssertionError("unreachable")
