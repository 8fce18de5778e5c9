"""Google error envelopes: the HTTP code, the gRPC status name and the reason phrase.

One table serves the REST service (`{"error": {"code", "message", "status"}}`, never `details`)
and the per-line errors the local model writes into output rows.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ApiError", "envelope", "reason_phrase", "status_name"]

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    412: "FAILED_PRECONDITION",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
    529: "UNAVAILABLE",
}

_PHRASES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    409: "Conflict",
    412: "Precondition Failed",
    413: "Payload Too Large",
    429: "Too Many Requests",
    499: "Client Closed Request",
    500: "Internal Server Error",
    501: "Not Implemented",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    529: "Overloaded",
}


def status_name(code: int) -> str:
    """The gRPC status name Google pairs with an HTTP code (UNKNOWN when there is none)."""
    if code in _STATUS_NAMES:
        return _STATUS_NAMES[code]
    if 400 <= code < 500:
        return "FAILED_PRECONDITION"
    return "UNKNOWN"


def reason_phrase(code: int) -> str:
    """The HTTP reason phrase used as the prefix of a per-line error status string."""
    return _PHRASES.get(code, "Error" if code < 500 else "Server Error")


def envelope(code: int, message: str, status: str | None = None) -> dict[str, Any]:
    """The Google error envelope, without `details` (google-genai rejects object details)."""
    return {"error": {"code": code, "message": message, "status": status or status_name(code)}}


class ApiError(Exception):
    """A REST error to answer with the Google envelope; carries no request content."""

    def __init__(self, code: int, message: str, status: str | None = None) -> None:
        super().__init__(code, message, status)
        self.code = code
        self.message = message
        self.status = status or status_name(code)

    def body(self) -> dict[str, Any]:
        """The JSON body of the error response."""
        return envelope(self.code, self.message, self.status)
