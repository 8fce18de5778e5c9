"""The error tree of vertexbatch, drawn once.

::

    VertexBatchError                 root of everything this package raises or yields
    ├── InvalidRequestError          rejected before or instead of a cloud call: bad id, key, model,
    │                                params, limits; an id already claimed for other rows; a job or
    │                                record that does not belong to the id
    ├── JobError                     the job itself cannot be read (unknown job, unreadable output)
    └── ResultError                  the outcome of one key, found on ``Result.error`` (never raised
        │                            by ``results``; raise it yourself if you want)
        ├── RefusedError             the model refused (Claude ``refusal``, Gemini block or a
        │                            finish reason other than STOP / MAX_TOKENS); no text
        ├── TruncatedError           a max-tokens stop; the partial text is kept on the Result
        ├── LineError                a per-line provider failure or an unusable answer;
        │                            ``code``, ``status`` and ``transient`` say what happened
        └── MissingError             no output line for the key once the job is terminal

Errors carry structured fields (ids, keys, codes, names), stay picklable, and never carry request
or response content: provider messages are not copied into them.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "InvalidRequestError",
    "JobError",
    "LineError",
    "MissingError",
    "RefusedError",
    "ResultError",
    "TruncatedError",
    "VertexBatchError",
]


class VertexBatchError(Exception):
    """Root of every error vertexbatch raises or yields."""


class InvalidRequestError(VertexBatchError):
    """A value was rejected; the message names it and the rule it broke.

    Attributes:
        field: which argument or staged object the rule is about (``"id"``, ``"key"``, ...).
    """

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.field = field

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, {"field": self.field}))


class JobError(VertexBatchError):
    """The job cannot be read at all: it does not exist, or its output cannot be listed or read."""

    def __init__(self, message: str, *, job: str = "") -> None:
        super().__init__(message)
        self.job = job

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, {"job": self.job}))


class ResultError(VertexBatchError):
    """The outcome of one key when it is not a usable answer.

    Attributes:
        key: the caller's key.
    """

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key

    def _state(self) -> dict[str, Any]:
        return {"key": self.key}

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, self._state()))


class RefusedError(ResultError):
    """The model refused or the provider blocked the request; ``Result.refusal`` says why."""


class TruncatedError(ResultError):
    """The answer stopped at the token limit; ``Result.text`` holds the partial text."""


class MissingError(ResultError):
    """The job is terminal and wrote no line for this key."""


class LineError(ResultError):
    """One request failed on the provider's side, or came back without a usable answer.

    Attributes:
        code: the HTTP-style status code (429, 503, ...), 0 when the line did not say.
        status: the provider's status or error type (``RESOURCE_EXHAUSTED``,
            ``overloaded_error``, ...), ``""`` when unknown.
        transient: whether sending the same request again may succeed.
    """

    def __init__(
        self, message: str, *, key: str, code: int = 0, status: str = "", transient: bool = False
    ) -> None:
        super().__init__(message, key=key)
        self.code = code
        self.status = status
        self.transient = transient

    def _state(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "code": self.code,
            "status": self.status,
            "transient": self.transient,
        }


def _rebuild(cls: type[Exception], args: tuple[Any, ...], state: dict[str, Any]) -> Exception:
    """Rebuild a pickled error through its own constructor (keyword-only fields)."""
    return cls(*args, **state)
