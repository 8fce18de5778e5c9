"""Errors the emulator answers with: a REST ApiError, or a LineFailure written into an output row.

One table serves both: the HTTP code, the gRPC status name and the reason phrase of the Google
envelope (`{"error": {"code", "message", "status"}}`, never `details`), and the Anthropic error
type of a Claude line's error envelope.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "ApiError",
    "LineFailure",
    "bad_request",
    "envelope",
    "reason_phrase",
    "sentence",
    "status_name",
]

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

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


# Plain-text per-line statuses (no JSON, no code), as a serving stack may write them.
_SENTENCES = {
    400: "Request contains an invalid argument.",
    403: "Permission denied on the model.",
    404: "Requested entity was not found.",
    429: "Quota exceeded for requests per minute. Please try again later.",
    500: "Internal error encountered.",
    503: "The service is currently unavailable.",
    504: "The request timed out before the model answered.",
    529: "The model is overloaded. Please try again later.",
}


def sentence(code: int) -> str:
    """A plain sentence for a per-line failure with this code: no JSON, no number in it.

    Codes with no sentence of their own get one that names no cause.
    """
    return _SENTENCES.get(code, "The request could not be completed.")


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


def bad_request(message: str) -> ApiError:
    """A 400 INVALID_ARGUMENT, as Vertex answers a malformed request."""
    return ApiError(400, message, "INVALID_ARGUMENT")


@dataclass(frozen=True, slots=True)
class LineFailure:
    """A failure the local model answers one line with: an HTTP-style code and a message.

    The message carries no request content. `shape` overrides the job's error shape when a
    directive asked for one; `text` replaces the plain sentence of the "status_text" shape. Not to
    be confused with `vertexbatch.LineError`, the client's reading of such a line.
    """

    code: int
    message: str
    shape: str | None = None
    text: str | None = None

    @property
    def sentence(self) -> str:
        """The plain-text status of the "status_text" shape."""
        return self.text if self.text is not None else sentence(self.code)

    @property
    def status(self) -> str:
        """The gRPC status name of the code."""
        return status_name(self.code)

    @property
    def anthropic_type(self) -> str:
        """The Anthropic error type of the code."""
        if self.code in _ANTHROPIC_ERROR_TYPES:
            return _ANTHROPIC_ERROR_TYPES[self.code]
        return "api_error" if self.code >= 500 else "invalid_request_error"
