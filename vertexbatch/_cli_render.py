"""What the ``vertexbatch`` command prints, and with which exit code.

Exit codes for job states and run summaries, the one line an exception becomes, the JSON record
of a result, the lines of a job, a status and a run: pure functions of values, which ``_cli``
echoes. ``Progress`` draws the bar of ``watch`` on the stream it is given. Nothing here reads the
cloud or the command line.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TextIO

import requests
from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions

from ._errors import InvalidRequestError, JobError, LineError, VertexBatchError
from ._models import Job, Outcome, Result, Status
from ._runs import RunSummary, summary_line

__all__ = [
    "OUTCOMES",
    "ExitCode",
    "Fail",
    "Progress",
    "describe_error",
    "job_lines",
    "progress_bar",
    "result_record",
    "results_summary",
    "run_exit_code",
    "run_line",
    "run_record",
    "short",
    "status_exit_code",
    "status_line",
    "status_record",
]

OUTCOMES: tuple[Outcome, ...] = ("ok", "refused", "truncated", "retryable", "failed", "missing")
"""Every outcome word, in the order the command reports them."""


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
    if isinstance(exc, Fail):
        return exc.code, str(exc)
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
            f"Google Cloud error {exc.code} {type(exc).__name__}: {short(exc.message)}"
        )
    if isinstance(exc, requests.exceptions.SSLError):
        return ExitCode.CLOUD_ERROR, (
            f"TLS error ({short(str(exc))}): an endpoint without a scheme is spoken to over "
            "https; the local stack needs http://host:port"
        )
    if isinstance(exc, requests.ConnectionError | auth_exceptions.TransportError | OSError):
        return ExitCode.CLOUD_ERROR, (
            f"cannot reach Google Cloud ({type(exc).__name__}): {short(str(exc))}"
        )
    if isinstance(exc, VertexBatchError):
        return ExitCode.CLOUD_ERROR, f"{type(exc).__name__}: {exc}"
    return ExitCode.UNEXPECTED, f"unexpected {type(exc).__name__} (a bug in vertexbatch): {exc}"


def short(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


# -- jobs and results ---------------------------------------------------------------------------


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
        "error": None
        if error is None
        else {
            "type": type(error).__name__,
            "code": error.code if isinstance(error, LineError) else 0,
            "status": error.status if isinstance(error, LineError) else "",
        },
    }


def results_summary(counts: Mapping[str, int], *, keys: int, where: str) -> str:
    """The stderr line after the results: how many keys of ``keys`` had each outcome."""
    summary = ", ".join(f"{name} {counts.get(name, 0)}" for name in OUTCOMES)
    return f"vertexbatch: {sum(counts.values())} of {keys} keys, {where}: {summary}"


def job_lines(job: Job) -> list[str]:
    """The job as aligned ``label value`` lines."""
    rows = (
        ("id", job.id),
        ("name", job.name),
        ("provider", job.provider),
        ("model", job.model),
        ("keys", str(job.keys)),
        ("input", job.input_uri),
        ("output", job.output_prefix),
    )
    return [f"{label:<9}{value}" for label, value in rows]


def status_line(job: Job, status: Status) -> str:
    """Where the job stands, on one line; counts Vertex has not reported show as ``?``."""

    def count(n: int) -> str:
        return "?" if n < 0 else str(n)

    line = (
        f"{job.id}  {status.state}  succeeded {count(status.succeeded)}  "
        f"failed {count(status.failed)}  incomplete {count(status.incomplete)}  of {job.keys} keys"
    )
    if status.error_code or status.error_message:
        line += f"  error {status.error_code}: {short(status.error_message, 200)}"
    return line


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
    """The JSON form of a run's summary, with its number of shards and the exit code."""
    return {
        **dataclasses.asdict(summary),
        "outcomes": dict(summary.outcomes),
        "shards": shards,
        "exit_code": int(run_exit_code(summary)),
    }


def run_line(summary: RunSummary, *, created: bool = False) -> str:
    """A run's summary on one line; ``created`` adds the jobs this step created."""
    line = summary_line(summary)
    return f"{line}; created {summary.created} job(s)" if created else line


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
        """Show the latest status of ``job``."""
        done = max(status.succeeded, 0) + max(status.failed, 0)
        text = f"{job.id} {status.state} {done}/{job.keys} rows"
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
