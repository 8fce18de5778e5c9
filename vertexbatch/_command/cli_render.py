"""What the ``vertexbatch`` command prints, and with which exit code.

Exit codes for job states and run summaries, the one line an exception becomes, the JSON record
of a result, the lines of a job, a status and a run: pure functions of values, which ``_cli``
echoes. ``Progress`` draws the bar of ``watch`` on the stream it is given. Nothing here reads the
cloud or the command line.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TextIO

from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions

from .._errors import (
    BucketNotFoundError,
    ExhaustedError,
    InvalidRequestError,
    JobError,
    LineError,
    ResultError,
    VertexBatchError,
    shorten,
)
from .._plans.spend import Spend
from .._retry import LOCAL_STACK_HINT, is_connection_refused, transport_errors
from .._runs.run import KeyResult, summary_line
from .._runs.step import RunSummary
from .._values import Job, Outcome, Result, Status

__all__ = [
    "OUTCOMES",
    "RUN_OUTCOMES",
    "ExitCode",
    "Fail",
    "Progress",
    "describe_error",
    "job_lines",
    "keys_status",
    "progress_bar",
    "result_record",
    "results_summary",
    "run_exit_code",
    "run_line",
    "run_record",
    "run_result_record",
    "run_results_summary",
    "status_exit_code",
    "status_line",
    "status_note",
    "status_record",
]

OUTCOMES: tuple[Outcome, ...] = ("ok", "refused", "truncated", "retryable", "failed", "missing")
"""Every outcome word of a job's results, in the order the command reports them (``exhausted``
is a run's alone)."""
RUN_OUTCOMES: tuple[str, ...] = (*OUTCOMES, "exhausted", "pending")
"""What ``run results --only`` takes: the outcomes, and the run's words for unsettled keys."""


# The longest a value quoted in the command's one error line gets (``shorten``).
_LINE = 300


class ExitCode(enum.IntEnum):
    """The command's exit codes (the ``_cli`` module docstring says what each means)."""

    OK = 0
    UNEXPECTED = 1
    USAGE = 2
    INVALID_REQUEST = 3
    NOT_FOUND = 4
    JOB_ERROR = 5
    CLOUD_ERROR = 6
    NOT_TERMINAL = 10
    JOB_FAILED = 11
    JOB_ENDED = 12
    CHECK_FAILED = 13
    CLOSED_PIPE = 141


_SUCCEEDED = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_PARTIALLY_SUCCEEDED"})


def status_exit_code(status: Status) -> ExitCode:
    """The exit code of ``status`` and ``watch`` for a job in this state."""
    if not status.terminal:
        return ExitCode.NOT_TERMINAL
    if status.state in _SUCCEEDED:
        return ExitCode.OK
    if status.state == "JOB_STATE_FAILED":
        return ExitCode.JOB_FAILED
    return ExitCode.JOB_ENDED


def run_exit_code(summary: RunSummary) -> ExitCode:
    """The exit code of ``run advance`` and ``run status``: 0 once the run is done, else 10."""
    return ExitCode.OK if summary.done else ExitCode.NOT_TERMINAL


class Fail(Exception):
    """A failure the command explains in one line with its own exit code."""

    def __init__(self, code: ExitCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def describe_error(exc: Exception) -> tuple[ExitCode, str]:
    """The exit code and the one line that explain an exception (never request content)."""
    import requests  # not at the top: most commands never fail, and --help needs none of it

    if isinstance(exc, Fail):
        return exc.code, str(exc)
    if isinstance(exc, BucketNotFoundError):  # --bucket / VERTEXBATCH_BUCKET: configuration
        return ExitCode.USAGE, f"configuration: {exc}"
    if isinstance(exc, InvalidRequestError):
        return ExitCode.INVALID_REQUEST, f"invalid request: {exc}"
    if isinstance(exc, JobError):
        return ExitCode.JOB_ERROR, f"job error: {exc}"
    if isinstance(exc, auth_exceptions.DefaultCredentialsError):
        return ExitCode.CLOUD_ERROR, (
            "no Google credentials (DefaultCredentialsError): run "
            "'gcloud auth application-default login' or set GOOGLE_APPLICATION_CREDENTIALS; "
            "for the local stack set --vertex-endpoint and --storage-endpoint"
        )
    if isinstance(exc, auth_exceptions.RefreshError):
        return ExitCode.CLOUD_ERROR, (
            "Google credentials could not be refreshed (RefreshError): log in again with "
            "'gcloud auth application-default login'"
        )
    if isinstance(exc, api_exceptions.GoogleAPICallError):
        return ExitCode.CLOUD_ERROR, (
            f"Google Cloud error {exc.code} {type(exc).__name__}: {shorten(exc.message, _LINE)}"
        )
    if isinstance(exc, requests.exceptions.SSLError):
        return ExitCode.CLOUD_ERROR, (
            f"TLS error ({shorten(exc, _LINE)}): an endpoint without a scheme is spoken to over "
            "https; the local stack needs http://host:port"
        )
    if local_stack_down(exc):
        where = _refused_address(exc)
        return ExitCode.CLOUD_ERROR, (
            f"cannot reach the local stack{f' at {where}' if where else ''} (connection "
            "refused): is it running? Start it with 'vertexbatch emulator' and source the "
            "file its --env-file writes"
        )
    if isinstance(exc, (*transport_errors(), OSError)):
        return ExitCode.CLOUD_ERROR, (
            f"cannot reach Google Cloud ({type(exc).__name__}): {shorten(exc, _LINE)}"
        )
    if isinstance(exc, VertexBatchError):
        return ExitCode.CLOUD_ERROR, f"{type(exc).__name__}: {exc}"
    return ExitCode.UNEXPECTED, f"unexpected {type(exc).__name__} (a bug in vertexbatch): {exc}"


def local_stack_down(exc: BaseException) -> bool:
    """Whether ``exc`` is a refused connection to the local stack (the client's retry policy
    marks those it did not retry because the endpoint is on this machine)."""
    return is_connection_refused(exc) and LOCAL_STACK_HINT in getattr(exc, "__notes__", ())


def _refused_address(exc: BaseException) -> str:
    """``host:port`` of the refused connection, if the exception chain names it."""
    current: BaseException | None = exc
    for _ in range(10):  # the chain of a refused HTTP call is a few exceptions deep
        if current is None:
            break
        for holder in (getattr(current, "conn", None), getattr(current, "pool", None)):
            host, port = getattr(holder, "host", None), getattr(holder, "port", None)
            if isinstance(host, str) and isinstance(port, int):
                return f"{host}:{port}"
        current = current.__cause__ or current.__context__
    return ""


# -- jobs and results ---------------------------------------------------------------------------


def json_line(record: Any) -> str:
    """``record`` as one line of JSON that any UTF-8 stream can carry.

    Non-ASCII text is written as itself, except a lone surrogate (a model answer cut mid-emoji,
    say), which UTF-8 cannot encode: it is written as its ``\\uXXXX`` escape, so a JSON reader
    gets the very same string back and the line is still printed.
    """
    text = json.dumps(record, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Inside a JSON string every backslash is already escaped, so each escape added here
        # stands alone: ``\\udXXX`` is JSON's own spelling of that code unit.
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def result_record(result: Result) -> dict[str, Any]:
    """The stable JSON form of one result that ``vertexbatch results`` prints."""
    error = result.error
    return {
        "key": result.key,
        "outcome": result.outcome,
        "text": result.text,
        "stop": result.stop,
        "usage": dataclasses.asdict(result.usage),
        "refusal": dataclasses.asdict(result.refusal) if result.refusal else None,
        "error": None if error is None else _error_record(error),
        "shared": result.shared,
        "cached": result.cached,
        "tool_calls": [  # a signature (Gemini's thoughtSignature) only when the call has one
            {"name": call.name, "arguments": call.arguments, "id": call.id}
            | ({} if call.signature is None else {"signature": call.signature})
            for call in result.tool_calls
        ],
        "parsed": result.parsed,
    }


def _error_record(error: ResultError) -> dict[str, Any]:
    """A result's error as ``results`` prints it; an exhausted key's with its last error's
    code and status, and that error's type as ``last``."""
    last = error.last if isinstance(error, ExhaustedError) else error
    record: dict[str, Any] = {
        "type": type(error).__name__,
        "code": last.code if isinstance(last, LineError) else 0,
        "status": last.status if isinstance(last, LineError) else "",
    }
    if last is not error:
        record["last"] = type(last).__name__
    return record


def results_summary(
    counts: Mapping[str, int], *, keys: int, where: str, spend: Spend | None = None
) -> str:
    """The stderr line after the results: how many keys of ``keys`` had each outcome, and
    with ``spend`` what the answers read cost (``Spend.summary``)."""
    summary = ", ".join(f"{name} {counts.get(name, 0)}" for name in OUTCOMES)
    line = f"vertexbatch: {sum(counts.values())} of {keys} keys, {where}: {summary}"
    return line if spend is None else f"{line}; {spend.summary()}"


def job_lines(job: Job) -> list[str]:
    """The job as aligned ``label value`` lines."""
    rows = (
        ("id", job.id),
        ("name", job.name),
        ("provider", job.provider),
        ("model", job.model),
        ("keys", str(job.keys)),
        ("input", job.input_uri),
        ("output", job.dest or job.output_prefix),
    )
    return [f"{label:<9}{value}" for label, value in rows]


def keys_status(status: Status, *, rows: int, keys: int, cached: int = 0) -> Status:
    """``status`` with Vertex's row counts turned into counts of the caller's keys.

    Under dedupe a staged row answers several keys, and a key the answer cache answered has no
    row (``cached``); Vertex counts rows. Each count of the ``rows`` staged stands for its share
    of the keys they answer (exact when every distinct request repeats as often; ``results``
    gives each key's own outcome), the cached keys count as succeeded, and once every row is
    counted so is every key. Counts Vertex has not reported (-1) stay unknown.
    """
    answered = keys - cached  # the keys the staged rows answer
    if rows <= 0 or (rows == answered and not cached):
        return status  # one key per row: Vertex's counts are the keys'

    def share(count: int) -> int:
        return count if count < 0 else answered * count // rows

    failed, incomplete = share(status.failed), share(status.incomplete)
    succeeded = share(status.succeeded)
    counted = status.succeeded + max(status.failed, 0) + max(status.incomplete, 0)
    if succeeded >= 0 and counted == rows:  # every row counted: so is every key
        succeeded = answered - max(failed, 0) - max(incomplete, 0)
    if succeeded >= 0:
        succeeded += cached
    return dataclasses.replace(status, succeeded=succeeded, failed=failed, incomplete=incomplete)


def status_line(job: Job, status: Status) -> str:
    """Where the job stands, on one line; counts Vertex has not reported show as ``?``."""

    def count(n: int) -> str:
        return "?" if n < 0 else str(n)

    line = (
        f"{job.id}  {status.state}  succeeded {count(status.succeeded)}  "
        f"failed {count(status.failed)}  incomplete {count(status.incomplete)}  of {job.keys} keys"
    )
    if status.output_table:  # a BigQuery sink's table, once Vertex names it
        line += f"  table {status.output_table}"
    if status.error_code or status.error_message:
        line += f"  error {status.error_code}: {shorten(status.error_message, 200)}"
    return line


def status_note(job: Job, status: Status, *, shared: bool = False) -> str:
    """The stderr line under a status line that has counts: what Vertex's counts mean
    (``shared``: they were turned into keys, ``keys_status``)."""
    if status.succeeded <= 0 and status.failed <= 0:
        return ""
    if shared:
        return (
            "vertexbatch: these count keys from Vertex's row counts: 'succeeded' includes "
            "refusals and truncations (rows with a response), a row staged once for equal "
            "requests (--dedupe) counts for their keys, a key answered by the cache (--cache) "
            f"as succeeded; 'vertexbatch results {job.id}' gives each key's outcome"
        )
    return (
        "vertexbatch: these are Vertex's row counts: 'succeeded' rows include refusals and "
        f"truncations (rows with a response); 'vertexbatch results {job.id}' gives each key's "
        "outcome"
    )


def status_record(job: Job, status: Status) -> dict[str, Any]:
    """The JSON of ``status --json``: the job's id, name and keys, its status, the exit code."""
    fields = {
        k: v.isoformat() if isinstance(v, datetime) else v
        for k, v in dataclasses.asdict(status).items()
    }
    return {
        "id": job.id,
        "name": job.name,
        "keys": job.keys,
        **fields,
        "exit_code": int(status_exit_code(status)),
    }


# -- runs ---------------------------------------------------------------------------------------


def run_record(summary: RunSummary, *, shards: int) -> dict[str, Any]:
    """The JSON form of a run's summary, with its number of shards and the exit code
    (``waiting``, the tasks not registered yet, only while there are some; ``spend``:
    ``Spend.to_dict`` of the finished shards, ``null`` while none is)."""
    record = {
        **dataclasses.asdict(summary),
        "outcomes": dict(summary.outcomes),
        "spend": None if summary.spend is None else summary.spend.to_dict(),
        "shards": shards,
        "exit_code": int(run_exit_code(summary)),
    }
    if not summary.waiting:
        del record["waiting"]
    else:
        record["waiting"] = list(summary.waiting)
    if summary.made:
        del record["made"]  # written only while a tasked run's ledger is not made
    return record


def run_line(summary: RunSummary, *, created: bool = False) -> str:
    """A run's summary on one line; ``created`` adds the jobs this step created.

    A run that is not done says what it waits for: its live jobs and then ``run advance``, or
    ``run advance`` alone (nothing moves it on until then).
    """
    line = summary_line(summary)
    if created:
        line += f"; created {summary.created} job(s)"
    if summary.done:
        return line
    advance = f"'vertexbatch run advance {summary.id}'"
    if summary.waiting:
        return f"{line}: no job is created until every task has registered"
    if summary.live_jobs:
        return f"{line}; waiting for its jobs, then {advance}"
    return f"{line}; waiting for {advance}"


def run_result_record(item: KeyResult) -> dict[str, Any]:
    """The JSON of one key of ``run results``: the result's, then its attempts, run outcome and
    the price tier it was billed at (``KeyResult.tier``, its ``Result.tier``)."""
    return {
        **result_record(item.result),
        "attempts": item.attempts,
        "run_outcome": item.outcome,
        "tier": item.tier,
    }


def run_results_summary(counts: Mapping[str, int], *, keys: int, spend: Spend) -> str:
    """The stderr line after ``run results``, counting as ``run status`` does, and what the
    keys' answers cost (``Spend.summary``: online answers at their tier).

    ``counts`` holds the run outcomes of the keys printed; the run's other keys have no result
    yet, so their shards are not finished: they are pending.
    """
    seen = sum(counts.values())
    totals = {name: n for name, n in counts.items() if n}
    if keys > seen:
        totals["pending"] = totals.get("pending", 0) + keys - seen
    state = "not done (results so far)" if totals.get("pending") else "done"
    listed = ", ".join(f"{name} {n}" for name, n in sorted(totals.items()))
    return f"vertexbatch: {seen} of {keys} keys, run {state}: {listed}; {spend.summary()}"


# -- progress -----------------------------------------------------------------------------------


def progress_bar(done: int, total: int, *, width: int) -> str:
    """A text bar, ``width`` characters inside its brackets, of ``done`` out of ``total``."""
    filled = 0 if total <= 0 else min(width, width * done // total)
    return "[" + "#" * filled + "." * (width - filled) + "]"


class Progress:
    """Shows a job's progress: a redrawn bar on a terminal, a plain line per change otherwise."""

    def __init__(self, stream: TextIO, *, tty: bool, width: int = 30) -> None:
        self.stream = stream
        self.tty = tty
        self.width = width
        self._last = ""

    def bar(self, done: int, total: int) -> str:
        """A text bar of ``done`` out of ``total``."""
        return progress_bar(done, total, width=self.width)

    def update(self, job: Job, status: Status, elapsed: float) -> None:
        """Show the latest status of ``job``, its counts in keys (``keys_status``)."""
        done = max(status.succeeded, 0) + max(status.failed, 0)
        text = f"{job.id} {status.state} {done}/{job.keys} keys"
        if self.tty:
            line = f"\r{self.bar(done, job.keys)} {text} {elapsed:.0f}s"
            self.stream.write(line.ljust(len(self._last)))
            self.stream.flush()
            self._last = line
        elif text != self._last:
            self.stream.write(f"{text} ({elapsed:.0f}s)\n")
            self.stream.flush()
            self._last = text

    def close(self) -> None:
        """End the redrawn line, if any."""
        if self.tty and self._last:
            self.stream.write("\n")
            self.stream.flush()
            self._last = ""
