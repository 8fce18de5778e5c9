"""The error tree of vertexbatch, drawn once, and the one boundary where Google errors enter it.

::

    VertexBatchError                 root of everything this package raises or yields
    ├── InvalidRequestError          rejected before or instead of a cloud call: bad id, key, model,
    │   │                            params, limits; an id already claimed for other rows or by
    │   │                            another origin; a record, manifest or ledger that was edited;
    │   │                            a create Vertex refused (400/404: the model, say)
    │   └── BucketNotFoundError      the client's bucket does not exist (GCS said so); ``bucket``
    ├── JobError                     the job itself cannot be read (unknown job, a staged object
    │                                gone or damaged, unreadable output)
    ├── WaitTimeout                  ``wait`` reached its deadline first; carries the last Status
    │                                (defined beside the wait, in ``_waiting.schedule``: a Status
    │                                is a value, and values are built on this tree)
    └── ResultError                  the outcome of one key, found on ``Result.error`` (never raised
        │                            by ``results``; raise it yourself if you want)
        ├── RefusedError             the model refused (Claude ``refusal``, Gemini block or a
        │                            finish reason other than STOP / MAX_TOKENS); no text
        ├── TruncatedError           a max-tokens stop; the partial text is kept on the Result
        ├── LineError                a per-line provider failure or an unusable answer;
        │   │                        ``code``, ``status`` and ``transient`` say what happened
        │   └── SchemaError          an answer (``schema=``) that is not JSON or breaks its
        │                            schema; retryable, its raw text on ``Result.text``
        ├── MissingError             no output line for the key once the job is terminal
        └── ExhaustedError           a run's key still retryable or missing once its shard
                                     finished: the run tries it no more; the last attempt's
                                     ``LineError`` or ``MissingError`` on ``last``

Google errors are translated here, by ``job_errors``: a job Vertex does not know becomes
``JobError``, and so does a staged object or output file that is gone or cannot be read once the
retry policy gave up. GCS's 404 for a bucket that does not exist becomes ``BucketNotFoundError``,
by ``bucket_errors``, around every GCS call (``_gcs.staging``): before any caller could take it
for an object that is not there yet. Everything else passes through to callers unchanged, as
the Google libraries raise it: credentials (``google.auth.exceptions``), permissions (403), and
transient errors (429, 5xx, network) that outlasted the retry policy — ``is_retryable`` tells
those apart.

Errors carry structured fields (ids, keys, codes, names), stay picklable, and never carry request
or response content: provider messages are not copied into them. A message that quotes a value
(an id, a name) shortens it with ``shorten``, the one way: one line, cut to a limit.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from google.api_core import exceptions as api_exceptions

__all__ = [
    "BucketNotFoundError",
    "ExhaustedError",
    "InvalidRequestError",
    "JobError",
    "LineError",
    "MissingError",
    "RefusedError",
    "ResultError",
    "SchemaError",
    "TruncatedError",
    "VertexBatchError",
    "bucket_errors",
    "create_bucket_fix",
    "damaged_record",
    "job_errors",
    "rebuild",
    "shorten",
]


def shorten(value: object, limit: int, *, mark: str = "...") -> str:
    """``value`` as text on one line (runs of whitespace made one space), cut to at most
    ``limit`` characters, ending in ``mark`` when cut: the one way a message shortens a value.

    ``mark`` is ASCII by default, so the command's lines print on any terminal;
    ``MissingError.job_error_message`` ends in ``…``.
    """
    line = " ".join(str(value).split())
    return line if len(line) <= limit else line[: limit - len(mark)] + mark


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
        return (rebuild, (type(self), self.args, {"field": self.field}))


def create_bucket_fix(bucket: str) -> str:
    """What to do about a bucket that does not exist: the one wording (``BucketNotFoundError``,
    ``vertexbatch doctor``)."""
    return (
        f"create it in the job's region (gcloud storage buckets create gs://{bucket} "
        "--location=REGION) or name an existing bucket (Client(bucket=...), --bucket or "
        "VERTEXBATCH_BUCKET)"
    )


class BucketNotFoundError(InvalidRequestError):
    """The client's bucket does not exist (or no longer does): GCS answered 404 for the bucket
    itself, not for one of its objects. Raised by the first GCS call, before any job is created.

    Attributes:
        bucket: the bucket's name (``field`` is ``"bucket"``).
    """

    def __init__(self, bucket: str) -> None:
        super().__init__(
            f"bucket gs://{bucket} does not exist: {create_bucket_fix(bucket)}", field="bucket"
        )
        self.bucket = bucket

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.bucket,))


# GCS's own words for a bucket that does not exist ("The specified bucket does not exist.",
# in the JSON API's 404; "NoSuchBucket" in the XML API's). A 404 for an object says "No such
# object": that one is an object not written yet, which callers take as such. The URL before
# the message has no spaces, so no object name can read as these words.
_NO_BUCKET = re.compile(r"\bbucket\b[^.]{0,80}?\bdoes not exist|\bno ?such ?bucket\b", re.I)


@contextlib.contextmanager
def bucket_errors(bucket: str) -> Iterator[None]:
    """Translate GCS's 404 for a bucket that does not exist into ``BucketNotFoundError``
    (``bucket``: the bucket the calls are about); every other error passes unchanged."""
    try:
        yield
    except api_exceptions.NotFound as exc:
        if not _NO_BUCKET.search(str(exc.message)):
            raise
        raise BucketNotFoundError(bucket) from exc


def damaged_record(where: str, what: str, why: str) -> InvalidRequestError:
    """The error for a record read back from GCS that fails a check (``field == "id"``): ``where``
    is its URI, ``what`` the kind of record ("run ledger"), ``why`` the check it failed."""
    return InvalidRequestError(
        f"{where} is not a vertexbatch {what} ({why}): it was damaged or edited", field="id"
    )


class JobError(VertexBatchError):
    """The job cannot be read at all: it does not exist, or its output cannot be listed or read."""

    def __init__(self, message: str, *, job: str = "") -> None:
        super().__init__(message)
        self.job = job

    def __reduce__(self) -> tuple[Any, ...]:
        return (rebuild, (type(self), self.args, {"job": self.job}))


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
        return (rebuild, (type(self), self.args, self._state()))


class RefusedError(ResultError):
    """The model refused or the provider blocked the request; ``Result.refusal`` says why."""


class TruncatedError(ResultError):
    """The answer stopped at the token limit; ``Result.text`` holds the partial text."""


class MissingError(ResultError):
    """The job is terminal and wrote no line for this key.

    Attributes:
        job_error_code: the job's own error code when it ended with one (7: Vertex could not
            write the output; 3: it could not import the input; 1: cancelled), else 0.
        job_error_message: the job's error message as Vertex wrote it (about the job, never a
            request), cut to ``MAX_JOB_MESSAGE`` characters; ``""`` without one.
    """

    MAX_JOB_MESSAGE = 300

    def __init__(
        self, message: str, *, key: str, job_error_code: int = 0, job_error_message: str = ""
    ) -> None:
        super().__init__(message, key=key)
        self.job_error_code = job_error_code
        self.job_error_message = self.bound(job_error_message)

    @classmethod
    def bound(cls, text: str) -> str:
        """A job's error message on one line, cut to ``MAX_JOB_MESSAGE`` characters."""
        return shorten(text, cls.MAX_JOB_MESSAGE, mark="…")

    def _state(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "job_error_code": self.job_error_code,
            "job_error_message": self.job_error_message,
        }


class ExhaustedError(ResultError):
    """A run's key that was still retryable or missing when its shard finished: the run tries
    it no more (its ``max_attempts`` were used, or the deadline passed without the fallback).

    Not retryable (``is_retryable``): the run is done with the key. Sending the request again
    is the caller's choice; ``last`` says what the last attempt found.

    Attributes:
        last: the key's last error: a ``LineError`` (transient) or a ``MissingError``.
        attempts: the run's attempts that held the key.
    """

    def __init__(self, message: str, *, key: str, last: ResultError, attempts: int) -> None:
        super().__init__(message, key=key)
        self.last = last
        self.attempts = attempts

    def _state(self) -> dict[str, Any]:
        return {"key": self.key, "last": self.last, "attempts": self.attempts}


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


class SchemaError(LineError):
    """The answer is not JSON, or breaks the submission's schema; another sample may comply,
    so it is transient (``is_retryable``). ``Result.text`` keeps the raw answer; the message
    never quotes it.

    Attributes:
        place: where the answer breaks the schema, by the schema's own names and positions
            (``$.items[2].price``), ``""`` when it is not JSON at all.
        rule: the schema keyword broken (``required``, ``type``, ...), or ``not_json``.
    """

    def __init__(
        self,
        message: str,
        *,
        key: str,
        status: str = "SCHEMA_MISMATCH",
        place: str = "",
        rule: str = "",
        code: int = 0,
        transient: bool = True,
    ) -> None:
        super().__init__(message, key=key, code=code, status=status, transient=transient)
        self.place = place
        self.rule = rule

    def _state(self) -> dict[str, Any]:
        return {**super()._state(), "place": self.place, "rule": self.rule}


def rebuild(cls: type[Exception], args: tuple[Any, ...], state: dict[str, Any]) -> Exception:
    """Rebuild a pickled error through its own constructor (keyword-only fields)."""
    return cls(*args, **state)


class ObjectReplaced(api_exceptions.NotFound):
    """The generation of an object being read is gone: it was replaced or deleted meanwhile."""


@contextlib.contextmanager
def job_errors(job: str, reading: str = "") -> Iterator[None]:
    """Translate the Google errors of one job's calls into ``JobError``: the one boundary.

    Args:
        job: the job's resource name (``JobError.job``).
        reading: the ``gs://`` URI being read, if the calls read a staged object or an output
            file: then any API error left after retries is a ``JobError`` naming it. Without
            it (a call about the job itself), only ``NotFound`` is, and the rest pass through.
    """
    try:
        yield
    except ObjectReplaced as exc:
        raise JobError(
            f"{reading or 'an object'} was replaced or deleted while it was read: read the "
            f"results of job {job} again",
            job=job,
        ) from exc
    except api_exceptions.NotFound as exc:
        if reading:
            message = f"{reading} is gone: job {job} cannot be read without it"
        else:
            message = f"job {job} does not exist"
        raise JobError(message, job=job) from exc
    except api_exceptions.GoogleAPICallError as exc:
        if not reading:
            raise
        raise JobError(f"cannot read {reading}: {type(exc).__name__}", job=job) from exc
