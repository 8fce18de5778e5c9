"""What counts as transient, and the one retry policy every Vertex and GCS call goes through.

``is_retryable`` and ``TRANSIENT_HTTP`` say what is transient; ``transport_errors`` is the one
list of transport errors (what the policy retries, what a best-effort cache write passes over
and what the command calls unreachable). ``RetryPolicy`` writes the backoff once: tenacity uses
it for every call (each one-request upload included), and the identity protocol's sweep for
twins (``_job.submit``) sleeps by its ``backoff``.
"""

from __future__ import annotations

import http.client
import logging
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import tenacity
from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions

from ._errors import InvalidRequestError, LineError
from ._rules import is_seconds

__all__ = [
    "LOCAL_STACK_HINT",
    "RetryPolicy",
    "is_connection_refused",
    "is_retryable",
    "is_transient_call_error",
    "transport_errors",
]

logger = logging.getLogger("vertexbatch")
# Jitter from a generator of our own: retries never draw from (or reseed) the global `random`
# state that a caller, or a test framework watching it, relies on.
_JITTER = random.Random()

T = TypeVar("T")

# The statuses google-genai retries (408, 429, 500, 502, 503, 504); 529 is Anthropic's overload.
TRANSIENT_HTTP = frozenset({408, 429, 500, 502, 503, 504, 529})

_TRANSIENT_API_ERRORS: tuple[type[BaseException], ...] = (
    api_exceptions.TooManyRequests,
    api_exceptions.ResourceExhausted,
    api_exceptions.InternalServerError,
    api_exceptions.BadGateway,
    api_exceptions.ServiceUnavailable,
    api_exceptions.GatewayTimeout,
    api_exceptions.DeadlineExceeded,
)
_NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    auth_exceptions.TransportError,
    ConnectionError,
    TimeoutError,
    http.client.IncompleteRead,  # a body cut short
)


def transport_errors() -> tuple[type[BaseException], ...]:
    """The one list of transport errors: a call that got no answer, or not all of it.

    A connection refused, reset or cut, a timeout, TLS, a body cut short, as Python,
    google-auth, requests and urllib3 raise them (requests' and urllib3's are what
    google-cloud-storage's own retry takes as transient, too). The retry policy retries them,
    a best-effort cache write passes over them, and the command says it cannot reach the cloud.

    requests and urllib3 are imported only by the paths that use them: an error of a module
    never imported cannot exist, so they are looked up in ``sys.modules``, never imported.
    """
    found = list(_NETWORK_ERRORS)
    requests = sys.modules.get("requests")
    if requests is not None:
        found += (requests.ConnectionError, requests.Timeout)
        found.append(requests.exceptions.ChunkedEncodingError)
    urllib3 = sys.modules.get("urllib3")
    if urllib3 is not None:
        found += (urllib3.exceptions.ProtocolError, urllib3.exceptions.ReadTimeoutError)
    return tuple(found)


def is_transient_call_error(exc: BaseException) -> bool:
    """Whether a failed Vertex or GCS call may succeed if made again."""
    if isinstance(exc, _TRANSIENT_API_ERRORS + transport_errors()):
        return True
    # The SDKs below are imported only by the paths that use them (the online fallback's take
    # over a second): look in sys.modules, never import (as ``transport_errors`` does).
    if isinstance(exc, api_exceptions.GoogleAPICallError):
        return exc.code in TRANSIENT_HTTP
    anthropic = sys.modules.get("anthropic")
    if anthropic is not None:
        if isinstance(exc, anthropic.APIConnectionError):  # includes its timeouts
            return True
        if isinstance(exc, anthropic.APIStatusError):
            return exc.status_code in TRANSIENT_HTTP
    genai_errors = sys.modules.get("google.genai.errors")
    if genai_errors is not None and isinstance(exc, genai_errors.APIError):
        return exc.code in TRANSIENT_HTTP
    return False


LOCAL_STACK_HINT = (
    "nothing listens at this local endpoint: is the local stack running? Start it with "
    "`vertexbatch emulator` (or `python -m vertexbatch.emulator`)"
)
"""The note a policy that does not retry refused connections adds to one (``retry_refused``)."""


def is_connection_refused(exc: BaseException) -> bool:
    """Whether a call failed because its connection was refused: nothing listens at the address.

    The SDKs wrap the socket's ``ConnectionRefusedError`` (requests, then urllib3), so the
    exception's causes are searched too.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ConnectionRefusedError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def is_retryable(error: BaseException | None) -> bool:
    """Whether sending the same request again may succeed.

    True for per-line provider errors with a rate-limit, overload, timeout or server status, for
    API errors with such a status, and for network failures. False for ``None``, refusals,
    truncations, ``MissingError`` (resubmit those if you want, but they are not *retryable*) and
    ``InvalidRequestError``.
    """
    if error is None:
        return False
    if isinstance(error, LineError):
        return error.transient
    return is_transient_call_error(error)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How Vertex and GCS calls are retried: jittered exponential backoff, bounded.

    Attributes:
        attempts: most calls made for one operation, the first included.
        initial: first wait in seconds; each wait doubles up to ``maximum``.
        maximum: longest single wait in seconds.
        jitter: up to this many seconds are added at random to each wait.
        deadline: no new attempt starts after this many seconds (an attempt whose wait would
            pass it is not made).
        timeout: the longest one Vertex call may take, in seconds; one that takes longer
            fails as a transient network error (and is retried within the policy).
        wait: ``False`` retries without waiting at all (for tests).
        retry_refused: ``False`` makes a refused connection final at once, with a note
            (``LOCAL_STACK_HINT``) saying to start the local stack. ``Client.from_env`` and the
            command use it for loopback endpoints, where a refusal means the stack is not
            running; a refusal from anywhere else stays transient.
    """

    attempts: int = 8
    initial: float = 0.5
    maximum: float = 30.0
    jitter: float = 1.0
    deadline: float = 300.0
    timeout: float = 60.0
    wait: bool = True
    retry_refused: bool = True

    def __post_init__(self) -> None:
        """Refuse a policy no call could be made under (a bad value fails at construction,
        not inside the first call, where the HTTP library would raise its own error)."""
        if (
            isinstance(self.attempts, bool)
            or not isinstance(self.attempts, int)
            or self.attempts < 1
        ):
            raise InvalidRequestError(
                f"RetryPolicy.attempts must be a whole number of at least 1, got {self.attempts!r}",
                field="retry",
            )
        for name in ("initial", "maximum", "jitter", "deadline", "timeout"):
            value = getattr(self, name)
            positive = name in ("deadline", "timeout")
            if not is_seconds(value, positive=positive):
                low = "1e-06" if positive else "0"
                raise InvalidRequestError(
                    f"RetryPolicy.{name} must be a number of seconds from {low} to 1e9, got "
                    f"{value!r:.40}",
                    field="retry",
                )

    @classmethod
    def no_wait(cls, attempts: int = 8) -> RetryPolicy:
        """A policy for tests: same retries, zero waiting."""
        return cls(attempts=attempts, wait=False)

    def retries(self, exc: BaseException) -> bool:
        """Whether this policy makes a call that raised ``exc`` again (attempts permitting)."""
        if not self.retry_refused and is_connection_refused(exc):
            return False
        return is_transient_call_error(exc)

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (0-based), jitter included."""
        if not self.wait:
            return 0.0
        return min(self.initial * 2.0**attempt, self.maximum) + _JITTER.uniform(0, self.jitter)

    def tenacity_kwargs(self, what: str) -> dict[str, Any]:
        """Keyword arguments for ``tenacity.Retrying``; ``what`` names the operation in logs."""

        def wait(state: tenacity.RetryCallState) -> float:
            return self.backoff(state.attempt_number - 1)

        def log_retry(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            logger.warning(
                "retrying %s after %s (attempt %d of %d)",
                what,
                type(exc).__name__,
                state.attempt_number,
                self.attempts,
            )

        return {
            # stop_before_delay: no attempt starts past the deadline, its wait included.
            "stop": tenacity.stop_after_attempt(self.attempts)
            | tenacity.stop_before_delay(self.deadline),
            "wait": wait,
            "retry": tenacity.retry_if_exception(self.retries),
            "reraise": True,
            "before_sleep": log_retry,
        }

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` under this policy; the last exception propagates as itself.

        With ``retry_refused=False`` a refused connection gets ``LOCAL_STACK_HINT`` as a note.
        """
        try:
            for attempt in tenacity.Retrying(**self.tenacity_kwargs(what)):
                with attempt:
                    return fn()
        except Exception as exc:
            notes = getattr(exc, "__notes__", ())
            if (
                not self.retry_refused
                and is_connection_refused(exc)
                and LOCAL_STACK_HINT not in notes
            ):
                exc.add_note(LOCAL_STACK_HINT)
            raise
        raise AssertionError("unreachable: tenacity either returns or reraises")  # pragma: no cover
