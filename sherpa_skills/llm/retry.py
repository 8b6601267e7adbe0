"""When and how long to wait before asking a model again: rate limits, server errors and timeouts are worth a retry;
refusals (400, 401, 403, 404, 422) are not. Our own loop, not litellm's `num_retries` (tenacity, blind to Retry-After)
nor the provider client's (its resends go uncounted): every attempt is counted by the caller."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["DEFAULT", "Retry", "exception_retry_after", "retry_after_seconds", "transient"]

# Statuses a later request may well get an answer to: timeout, conflict, rate limit, and the 5xx of a busy server.
_TRANSIENT_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
# Exceptions that carry no status but are worth another try (names, so litellm need not be imported here).
_TRANSIENT_NAMES = {
    "Timeout",
    "APITimeoutError",
    "APIConnectionError",
    "RateLimitError",
    "ServiceUnavailableError",
    "InternalServerError",
    "BadGatewayError",
}


@dataclass(frozen=True)
class Retry:
    """How many attempts one request gets (first included), the backoff's base and the cap on any single wait."""

    attempts: int = 3
    base: float = 0.5
    max_wait: float = 30.0

    @classmethod
    def of(cls, retries: int | None = None, max_wait: float | None = None) -> Retry:
        """From a workflow's `llm: {retries, retry_max_wait}` (retries are the attempts after the first)."""
        return cls(
            attempts=DEFAULT.attempts if retries is None else retries + 1,
            max_wait=DEFAULT.max_wait if max_wait is None else max_wait,
        )

    def wait(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based): the server's Retry-After when it sent one, else an
        exponential backoff with jitter (half to all of base·2ⁿ⁻¹, so clients that failed together retry apart);
        never more than max_wait."""
        if retry_after is not None:
            return round(min(self.max_wait, max(0.0, retry_after)), 3)
        ceiling = self.base * 2 ** (attempt - 1)
        return round(min(self.max_wait, random.uniform(ceiling / 2, ceiling)), 3)


DEFAULT = Retry()


def transient(exc: BaseException) -> bool:
    """Whether asking again may succeed: a rate limit, a busy or failing server, a timeout, a dropped connection."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in _TRANSIENT_STATUS
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


def retry_after_seconds(headers: Mapping[str, object] | None) -> float | None:
    """The wait a server asked for: `retry-after-ms`, or `Retry-After` in seconds or as an HTTP date;
    None without one."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v).strip() for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = lowered.get(name)
        if not value:
            continue
        try:
            return max(0.0, float(value) / scale)
        except ValueError:
            pass
        if scale == 1.0 and (date := email.utils.parsedate_tz(value)) is not None:
            return max(0.0, email.utils.mktime_tz(date) - time.time())
    return None


def exception_retry_after(exc: BaseException) -> float | None:
    """Retry-After from a litellm/openai error: the provider's response headers, else the ones litellm kept."""
    response = getattr(exc, "response", None)
    for headers in (
        getattr(response, "headers", None),
        getattr(exc, "headers", None),
        getattr(exc, "litellm_response_headers", None),
    ):
        try:
            seconds = retry_after_seconds(headers)
        except (AttributeError, TypeError):
            continue
        if seconds is not None:
            return seconds
    return None
