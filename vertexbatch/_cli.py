"""The ``vertexbatch`` command: submit, find, status, cancel, results, watch, emulator, demo,
and ``run submit|advance|status|results`` for runs.

Every command takes the same configuration, from flags or the environment::

    --project          GOOGLE_CLOUD_PROJECT
    --location         GOOGLE_CLOUD_LOCATION
    --bucket           VERTEXBATCH_BUCKET
    --prefix           VERTEXBATCH_PREFIX            (default "vertexbatch")
    --vertex-endpoint  VERTEXBATCH_VERTEX_ENDPOINT   (the local stack; with --storage-endpoint)
    --storage-endpoint STORAGE_EMULATOR_HOST

Exit codes (an error is one line on stderr, never a traceback, never request content)::

    0   the command worked; for status and watch: the job is terminal and succeeded
    1   an unexpected error (a bug in vertexbatch)
    2   usage or configuration: a bad flag, a missing --project / GOOGLE_CLOUD_PROJECT, ...
    3   InvalidRequestError: a bad id, model or request line (named by its line number)
    4   not found: no job for the id; run commands: no run under the id
    5   JobError: the job cannot be read
    6   another cloud error: credentials, permissions, quota, network
    10  status / watch: the job is not terminal yet (watch: --timeout passed);
        run advance / run status: the run is not done yet
    11  status / watch: the job failed
    12  status / watch: the job was cancelled, expired or paused
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import logging
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any, TextIO, TypeVar

import click
import requests
from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions

from ._client import Client
from ._errors import InvalidRequestError, JobError, LineError, VertexBatchError
from ._models import ClaudeRequest, GeminiRequest, Job, Outcome, Result, Status
from ._runs import DEFAULT_SHARD_SIZE, Run, RunSummary, summary_line
from ._wait import WaitTimeout, wait

__all__ = [
    "OUTCOMES",
    "ExitCode",
    "Progress",
    "main",
    "read_requests",
    "result_record",
    "run_exit_code",
    "status_exit_code",
]

logger = logging.getLogger("vertexbatch")

F = TypeVar("F", bound=Callable[..., Any])

OUTCOMES: tuple[Outcome, ...] = ("ok", "refused", "truncated", "retryable", "failed", "missing")
"""Every outcome word, in the order the command reports them."""


class ExitCode(enum.IntEnum):
    """The command's exit codes (see the module docstring)."""

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


class _Fail(Exception):
    """A failure the command explains in one line with its own exit code."""

    def __init__(self, code: ExitCode, message: str) -> None:
        super().__init__(message)
        self.code = code


# -- errors: translated to one line and an exit code, at one boundary --------------------------


def _describe(exc: Exception) -> tuple[ExitCode, str]:
    """The exit code and the one line that explain an exception."""
    if isinstance(exc, _Fail):
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
            f"Google Cloud error {exc.code} {type(exc).__name__}: {_short(exc.message)}"
        )
    if isinstance(exc, requests.exceptions.SSLError):
        return ExitCode.CLOUD_ERROR, (
            f"TLS error ({_short(str(exc))}): an endpoint without a scheme is spoken to over "
            "https; the local stack needs http://host:port"
        )
    if isinstance(exc, requests.ConnectionError | auth_exceptions.TransportError | OSError):
        return ExitCode.CLOUD_ERROR, (
            f"cannot reach Google Cloud ({type(exc).__name__}): {_short(str(exc))}"
        )
    if isinstance(exc, VertexBatchError):
        return ExitCode.CLOUD_ERROR, f"{type(exc).__name__}: {exc}"
    return ExitCode.UNEXPECTED, f"unexpected {type(exc).__name__} (a bug in vertexbatch): {exc}"


def _short(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


class _Group(click.Group):
    """The command group: maps every exception of a command to one stderr line and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:
            code, message = _describe(exc)
            logger.debug("%s", message, exc_info=True)
            click.echo(f"vertexbatch: {message}", err=True)
            ctx.exit(int(code))


# -- configuration ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Config:
    project: str | None
    location: str | None
    bucket: str | None
    prefix: str
    vertex_endpoint: str | None
    storage_endpoint: str | None

    def client(self) -> Client:
        """The client this configuration names; missing values are a one-line usage error."""
        required = (
            ("--project", "GOOGLE_CLOUD_PROJECT", self.project),
            ("--location", "GOOGLE_CLOUD_LOCATION", self.location),
            ("--bucket", "VERTEXBATCH_BUCKET", self.bucket),
        )
        for flag, variable, value in required:
            if not value:
                raise _Fail(ExitCode.USAGE, f"missing {flag} (or set {variable})")
        assert self.project and self.location and self.bucket
        if self.vertex_endpoint or self.storage_endpoint:
            endpoints = (
                ("--vertex-endpoint", "VERTEXBATCH_VERTEX_ENDPOINT", self.vertex_endpoint),
                ("--storage-endpoint", "STORAGE_EMULATOR_HOST", self.storage_endpoint),
            )
            for flag, variable, value in endpoints:
                if not value:
                    raise _Fail(
                        ExitCode.USAGE,
                        f"missing {flag} (or set {variable}): the local stack needs both endpoints",
                    )
                if not value.startswith(("http://", "https://")):
                    raise _Fail(
                        ExitCode.USAGE,
                        f"{flag} ({variable}) must be a URL such as http://127.0.0.1:PORT, "
                        f"got {value!r}",
                    )
            assert self.vertex_endpoint and self.storage_endpoint
            return Client.for_endpoints(
                vertex_endpoint=self.vertex_endpoint,
                storage_endpoint=self.storage_endpoint,
                project=self.project,
                location=self.location,
                bucket=self.bucket,
                prefix=self.prefix,
            )
        return Client(self.project, self.location, self.bucket, self.prefix)


_CONFIG_KEY = "vertexbatch.config"


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if param.name is not None:
        ctx.meta.setdefault(_CONFIG_KEY, {})[param.name] = value
    return value


class _StderrHandler(logging.Handler):
    """Writes log lines to whatever ``sys.stderr`` is when the line is logged."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            click.echo(f"vertexbatch: {self.format(record)}", err=True)
        except Exception:  # pragma: no cover - logging must never break the command
            self.handleError(record)


def _set_verbosity(ctx: click.Context, param: click.Parameter, value: int) -> int:
    """``-v`` shows the library's INFO logs on stderr, ``-vv`` DEBUG; restored when done."""
    level = logging.WARNING if not value else logging.INFO if value == 1 else logging.DEBUG
    previous = ctx.meta.get("vertexbatch.verbosity")
    if previous is not None and previous <= level:
        return value  # the group's -v already set a level at least as verbose
    ctx.meta["vertexbatch.verbosity"] = level
    handler = _StderrHandler()
    saved = (logger.level, logger.propagate)
    for old in [h for h in logger.handlers if isinstance(h, _StderrHandler)]:
        logger.removeHandler(old)
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False

    def restore() -> None:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]

    ctx.call_on_close(restore)
    return value


_verbose = click.option(
    "-v",
    "--verbose",
    count=True,
    expose_value=False,
    callback=_set_verbosity,
    help="Show the library's INFO logs (created, adopted, recorded, cancelled); -vv for DEBUG.",
)


def _config_option(*decls: str, **attrs: Any) -> Callable[[F], F]:
    # The value goes to ctx.meta, not to the command's arguments: _client() reads it there.
    return click.option(*decls, expose_value=False, callback=_remember, **attrs)


_CONFIG_OPTIONS = (
    _config_option("--project", envvar="GOOGLE_CLOUD_PROJECT", help="Google Cloud project."),
    _config_option(
        "--location", envvar="GOOGLE_CLOUD_LOCATION", help="Vertex region, e.g. us-central1."
    ),
    _config_option("--bucket", envvar="VERTEXBATCH_BUCKET", help="GCS bucket for jobs."),
    _config_option(
        "--prefix",
        envvar="VERTEXBATCH_PREFIX",
        default="vertexbatch",
        show_default=True,
        help="Folder in the bucket; each id gets PREFIX/ID/.",
    ),
    _config_option(
        "--vertex-endpoint",
        envvar="VERTEXBATCH_VERTEX_ENDPOINT",
        help="Vertex endpoint URL (the local stack's); needs --storage-endpoint.",
    ),
    _config_option(
        "--storage-endpoint",
        envvar="STORAGE_EMULATOR_HOST",
        help="GCS endpoint URL (the local stack's); needs --vertex-endpoint.",
    ),
)


def _cloud_command(f: F) -> F:
    """Add the configuration flags (each with its environment variable) and ``-v``."""
    f = _verbose(f)
    for option in reversed(_CONFIG_OPTIONS):
        f = option(f)
    return f


def _client() -> Client:
    values = click.get_current_context().meta.get(_CONFIG_KEY, {})
    return _Config(
        project=values.get("project"),
        location=values.get("location"),
        bucket=values.get("bucket"),
        prefix=values.get("prefix") or "vertexbatch",
        vertex_endpoint=values.get("vertex_endpoint"),
        storage_endpoint=values.get("storage_endpoint"),
    ).client()


def _find(client: Client, submission_id: str) -> Job:
    job = client.find(submission_id)
    if job is None:
        raise _Fail(
            ExitCode.NOT_FOUND,
            f"no job for id {submission_id!r} under gs://{client.bucket}/{client.prefix}/",
        )
    return job


def _open_run(client: Client, run_id: str) -> Run:
    try:
        return client.open_run(run_id)
    except InvalidRequestError as exc:
        # field "run" marks an absent ledger; an invalid id or a ledger that cannot be read stay
        # invalid requests (exit 3).
        if exc.field == "run":
            raise _Fail(ExitCode.NOT_FOUND, str(exc)) from exc
        raise


# -- request files ------------------------------------------------------------------------------


class _BadLine(InvalidRequestError):
    """A request line that cannot be read; the message already names the line."""


class _RequestLines:
    """Requests read one line at a time from a JSONL stream, remembering the current line."""

    def __init__(self, stream: IO[bytes], name: str, provider: str) -> None:
        self.stream = stream
        self.name = name
        self.provider = provider
        self.line = 0
        self.done = False

    def __iter__(self) -> Iterator[ClaudeRequest | GeminiRequest]:
        for number, raw in enumerate(self.stream, start=1):
            self.line = number
            if not raw.strip():
                continue
            yield self._parse(raw)
        self.done = True

    def _bad(self, problem: str, field: str = "requests") -> _BadLine:
        return _BadLine(f"{self.name} line {self.line}: {problem}", field=field)

    def _parse(self, raw: bytes) -> ClaudeRequest | GeminiRequest:
        problem = ""
        try:
            data = json.loads(raw.decode("utf-8").rstrip("\r\n"), parse_constant=_not_json)
        except UnicodeDecodeError:
            problem = "not UTF-8 text"
        except json.JSONDecodeError as exc:
            # exc.msg and the column say what is wrong without echoing the line.
            problem = f"not valid JSON ({exc.msg} at column {exc.colno})"
        except _NotJSON:
            problem = "not JSON: NaN/Infinity are not JSON numbers"
        except ValueError:  # an integer of more digits than Python converts
            problem = "not valid JSON (an integer too long to read)"
        except RecursionError:
            problem = "not valid JSON (nested too deeply to read)"
        if problem:
            # Raised outside the except block: the decoder's error holds the line's text.
            raise self._bad(problem)
        if not isinstance(data, dict):
            raise self._bad(f"expected a JSON object, got {type(data).__name__}")
        allowed = {"key", "params"} if self.provider == "claude" else {"key", "contents", "config"}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise self._bad(
                f"unknown field(s) {unknown}: a {self.provider} line has {sorted(allowed)}"
            )
        key = data.get("key")
        if not isinstance(key, str) or not key:
            raise self._bad("'key' must be a non-empty string", field="key")
        if self.provider == "claude":
            params = data.get("params")
            if not isinstance(params, dict):
                raise self._bad("'params' must be an object of Messages parameters", "params")
            return ClaudeRequest(key, params)
        if "contents" not in data:
            raise self._bad("lacks 'contents'", field="contents")
        if data.get("config") is not None and not isinstance(data["config"], dict):
            raise self._bad("'config' must be an object or null", field="config")
        return GeminiRequest(key, data["contents"], data.get("config"))


class _NotJSON(Exception):
    """A NaN or Infinity token: Python's json reads it, JSON does not have it."""


def _not_json(token: str) -> Any:
    raise _NotJSON


# Library errors with these fields are about the call, not about the line just read.
_NOT_ABOUT_A_LINE = frozenset({"id", "model", "shard_size", "max_attempts", "staging"})


def _request_lines(file: IO[bytes], provider: str) -> _RequestLines:
    given = getattr(file, "name", "-")
    name = "<stdin>" if given in ("-", "<stdin>") or not isinstance(given, str) else given
    return _RequestLines(file, name, provider)


@contextlib.contextmanager
def _naming_the_line(lines: _RequestLines) -> Iterator[None]:
    """Add the file and line number to a library error about the request just handed over."""
    try:
        yield
    except InvalidRequestError as exc:
        if (
            isinstance(exc, _BadLine)
            or lines.done
            or not lines.line
            or exc.field in _NOT_ABOUT_A_LINE
        ):
            raise
        raise InvalidRequestError(
            f"{lines.name} line {lines.line}: {exc}", field=exc.field
        ) from exc


def read_requests(
    stream: IO[bytes], *, provider: str, name: str = "<stdin>"
) -> Iterator[ClaudeRequest | GeminiRequest]:
    """Parse a JSONL stream of request lines (``provider`` is "claude" or "gemini").

    Raises:
        InvalidRequestError: a line is not JSON or not a request; the message names the line.
    """
    return iter(_RequestLines(stream, name, provider))


# -- output -------------------------------------------------------------------------------------


def result_record(result: Result) -> dict[str, Any]:
    """The stable JSON form of one result that ``vertexbatch results`` prints (pure)."""
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


def _echo_job(job: Job, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(job.to_dict()))
        return
    rows = (
        ("id", job.id),
        ("name", job.name),
        ("provider", job.provider),
        ("model", job.model),
        ("keys", str(job.keys)),
        ("input", job.input_uri),
        ("output", job.output_prefix),
    )
    for label, value in rows:
        click.echo(f"{label:<9}{value}")


def _status_line(job: Job, status: Status) -> str:
    def count(n: int) -> str:
        return "?" if n < 0 else str(n)

    line = (
        f"{job.id}  {status.state}  succeeded {count(status.succeeded)}  "
        f"failed {count(status.failed)}  incomplete {count(status.incomplete)}  of {job.keys} keys"
    )
    if status.error_code or status.error_message:
        line += f"  error {status.error_code}: {_short(status.error_message, 200)}"
    return line


def _status_dict(job: Job, status: Status) -> dict[str, Any]:
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


class Progress:
    """Shows a job's progress: a redrawn bar on a terminal, a plain line per change otherwise."""

    def __init__(self, stream: TextIO, *, tty: bool, width: int = 30) -> None:
        self.stream = stream
        self.tty = tty
        self.width = width
        self._last = ""

    def bar(self, done: int, total: int) -> str:
        """A text bar of ``done`` out of ``total``."""
        filled = 0 if total <= 0 else min(self.width, self.width * done // total)
        return "[" + "#" * filled + "." * (self.width - filled) + "]"

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


def _echo_results(
    results: Iterable[Result], only: tuple[str, ...], *, keys: int, where: str
) -> None:
    """One JSON line per result (those in ``only``, if given), then the summary on stderr."""
    counts: Counter[str] = Counter()
    for result in results:
        counts[result.outcome] += 1
        if not only or result.outcome in only:
            click.echo(json.dumps(result_record(result), ensure_ascii=False))
    summary = ", ".join(f"{name} {counts[name]}" for name in OUTCOMES)
    click.echo(f"vertexbatch: {sum(counts.values())} of {keys} keys, {where}: {summary}", err=True)


def _run_dict(run: Run, summary: RunSummary) -> dict[str, Any]:
    return {
        **dataclasses.asdict(summary),
        "outcomes": dict(summary.outcomes),
        "shards": len(run.shards),
        "exit_code": int(run_exit_code(summary)),
    }


def _echo_run(run: Run, summary: RunSummary, as_json: bool, *, created: bool = False) -> None:
    if as_json:
        click.echo(json.dumps(_run_dict(run, summary)))
        return
    line = summary_line(summary)
    click.echo(f"{line}; created {summary.created} job(s)" if created else line)


def _deadline(value: str | None) -> datetime | None:
    """The ``--deadline`` as an aware datetime; a usage error if it is not one."""
    if value is None:
        return None
    example = "e.g. 2026-11-30T06:00:00+00:00 or 2026-11-30T06:00:00Z"
    try:
        deadline = datetime.fromisoformat(value)
    except ValueError:
        raise _Fail(
            ExitCode.USAGE, f"--deadline {value!r} is not an ISO 8601 date and time, {example}"
        ) from None
    if deadline.utcoffset() is None:
        raise _Fail(ExitCode.USAGE, f"--deadline {value!r} has no timezone: add one, {example}")
    return deadline


# -- the commands -------------------------------------------------------------------------------


@click.group(cls=_Group)
@_verbose
@click.version_option(package_name="vertexbatch")
def main() -> None:
    """Vertex AI batch prediction for Claude and Gemini, by submission id.

    Exit codes: 0 done (status/watch: succeeded), 2 usage or configuration, 3 invalid request,
    4 no job (or run) for the id, 5 job error, 6 other cloud error, 10 job not terminal (run
    not done), 11 job failed, 12 job cancelled/expired/paused, 1 unexpected.
    """


@main.command()
@click.option(
    "--provider", type=click.Choice(["claude", "gemini"]), required=True, help="Whose model."
)
@click.option("--model", required=True, help="Bare Vertex model id, e.g. claude-opus-5-5@default.")
@click.option("--id", "submission_id", required=True, help="Submission id (idempotency key).")
@click.option("--json", "as_json", is_flag=True, help="Print the job as JSON.")
@click.argument("file", type=click.File("rb"))
@_cloud_command
def submit(provider: str, model: str, submission_id: str, as_json: bool, file: IO[bytes]) -> None:
    """Submit the requests of FILE (JSONL, - for stdin) under an id; the same id adopts its job.

    Claude lines: {"key": ..., "params": {Messages parameters}}.
    Gemini lines: {"key": ..., "contents": [...], "config": {...}}.
    """
    client = _client()
    lines = _request_lines(file, provider)
    with _naming_the_line(lines):
        if provider == "claude":
            job = client.submit_claude(submission_id, model, iter(lines))  # type: ignore[arg-type]
        else:
            job = client.submit_gemini(submission_id, model, iter(lines))  # type: ignore[arg-type]
    _echo_job(job, as_json)


@main.command()
@click.argument("submission_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the job as JSON.")
@_cloud_command
def find(submission_id: str, as_json: bool) -> None:
    """Print the job of ID (exit 4 when there is none); read-only."""
    _echo_job(_find(_client(), submission_id), as_json)


@main.command()
@click.argument("submission_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@_cloud_command
def status(submission_id: str, as_json: bool) -> None:
    """Print where the job of ID stands; the exit code says it too.

    0 succeeded, 10 not terminal yet, 11 failed, 12 cancelled, expired or paused.
    """
    client = _client()
    job = _find(client, submission_id)
    st = client.status(job)
    click.echo(json.dumps(_status_dict(job, st)) if as_json else _status_line(job, st))
    click.get_current_context().exit(int(status_exit_code(st)))


@main.command()
@click.argument("submission_id", metavar="ID")
@_cloud_command
def cancel(submission_id: str) -> None:
    """Ask Vertex to cancel the job of ID; finished rows keep their output."""
    client = _client()
    job = _find(client, submission_id)
    client.cancel(job)
    click.echo(f"cancel requested for job {job.name} (id {job.id})")


_only_option = click.option(
    "--only",
    type=click.Choice(list(OUTCOMES)),
    multiple=True,
    help="Print only results with this outcome (repeatable).",
)


@main.command()
@click.argument("submission_id", metavar="ID")
@_only_option
@_cloud_command
def results(submission_id: str, only: tuple[str, ...]) -> None:
    """Print one JSON line per key; a summary of the outcomes goes to stderr.

    Fields: key, outcome, text, stop, usage{input,output,cache_read,cache_write},
    refusal{category,detail} or null, error{type,code,status} or null.
    """
    client = _client()
    job = _find(client, submission_id)
    st = client.status(job)
    note = "" if st.terminal else " (not terminal: rows written so far; missing keys come later)"
    _echo_results(client.results(job), only, keys=job.keys, where=f"job {st.state}{note}")


@main.command()
@click.argument("submission_id", metavar="ID")
@click.option("--floor", type=float, default=5.0, show_default=True, help="Shortest poll gap (s).")
@click.option("--ceiling", type=float, default=60.0, show_default=True, help="Longest gap (s).")
@click.option("--timeout", type=float, default=None, help="Give up after this many seconds.")
@_cloud_command
def watch(submission_id: str, floor: float, ceiling: float, timeout: float | None) -> None:
    """Poll the job of ID with backoff until it is terminal; exit with the status exit code."""
    if floor <= 0 or ceiling < floor:
        raise _Fail(ExitCode.USAGE, "--floor must be > 0 and --ceiling at least --floor")
    client = _client()
    job = _find(client, submission_id)
    progress = Progress(sys.stderr, tty=sys.stderr.isatty())
    start = time.monotonic()
    try:
        st = wait(
            client,
            job,
            timeout=timeout,
            floor=floor,
            ceiling=ceiling,
            on_progress=lambda s: progress.update(job, s, time.monotonic() - start),
        )
    except WaitTimeout as exc:
        progress.close()
        click.echo(_status_line(job, exc.status))
        raise _Fail(
            ExitCode.NOT_TERMINAL,
            f"job of id {job.id!r} is still {exc.status.state} after "
            f"{time.monotonic() - start:.0f}s (--timeout)",
        ) from exc
    progress.close()
    click.echo(_status_line(job, st))
    click.get_current_context().exit(int(status_exit_code(st)))


@main.group("run")
def run_group() -> None:
    """Runs: many requests over shards and attempts until every key is answered.

    Submit once, then advance (by hand, in a loop or from a scheduler) until done; all state
    is in GCS under the run id. run advance / run status exit 0 once the run is done, 10 before.
    """


@run_group.command("submit")
@click.option(
    "--provider", type=click.Choice(["claude", "gemini"]), required=True, help="Whose model."
)
@click.option("--model", required=True, help="Bare Vertex model id, e.g. claude-opus-5-5@default.")
@click.option("--id", "run_id", required=True, help="Run id (shards are RUN_ID.s0, .s1, ...).")
@click.option(
    "--shard-size",
    type=click.IntRange(min=1),
    default=DEFAULT_SHARD_SIZE,
    show_default=True,
    help="Most rows per shard (one job each; Vertex allows 200,000).",
)
@click.option(
    "--attempts",
    type=click.IntRange(1, 99),
    default=3,
    show_default=True,
    help="Most attempts per key.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
@click.argument("file", type=click.File("rb"))
@_cloud_command
def run_submit(
    provider: str,
    model: str,
    run_id: str,
    shard_size: int,
    attempts: int,
    as_json: bool,
    file: IO[bytes],
) -> None:
    """Start a run of the requests of FILE (JSONL, - for stdin).

    The lines are those of `vertexbatch submit`. Stages every shard, creates the first jobs and
    prints the run's summary; the same id and file again rejoin the run.
    """
    client = _client()
    lines = _request_lines(file, provider)
    with _naming_the_line(lines):
        start = client.run_claude if provider == "claude" else client.run_gemini
        run = start(
            run_id,
            model,
            iter(lines),  # type: ignore[arg-type]
            shard_size=shard_size,
            max_attempts=attempts,
        )
    _echo_run(run, run.status(), as_json)


@run_group.command("advance")
@click.argument("run_id", metavar="RUN_ID")
@click.option(
    "--deadline",
    metavar="ISO8601",
    help="Past this moment (with a timezone) make no new attempt.",
)
@click.option(
    "--fallback",
    type=click.Choice(["online"]),
    help="Past --deadline, cancel the jobs and answer unsettled keys through the online APIs.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
@_cloud_command
def run_advance(run_id: str, deadline: str | None, fallback: str | None, as_json: bool) -> None:
    """Take one step of the run; exit 0 once it is done, 10 before.

    A step creates jobs, resubmits retryable and missing keys while attempts remain, and
    finishes shards. It is safe to call from any number of processes at once.
    """
    when = _deadline(deadline)
    if fallback and when is None:
        raise _Fail(ExitCode.USAGE, "--fallback online needs --deadline")
    client = _client()
    run = _open_run(client, run_id)
    summary = run.advance(deadline=when, fallback="online" if fallback else None)
    _echo_run(run, summary, as_json, created=True)
    click.get_current_context().exit(int(run_exit_code(summary)))


@run_group.command("status")
@click.argument("run_id", metavar="RUN_ID")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
@_cloud_command
def run_status(run_id: str, as_json: bool) -> None:
    """Print where the run stands; exit 0 once it is done, 10 before. Changes nothing."""
    client = _client()
    run = _open_run(client, run_id)
    summary = run.status()
    _echo_run(run, summary, as_json)
    click.get_current_context().exit(int(run_exit_code(summary)))


@run_group.command("results")
@click.argument("run_id", metavar="RUN_ID")
@_only_option
@_cloud_command
def run_results(run_id: str, only: tuple[str, ...]) -> None:
    """Print one JSON line per key of the run; a summary goes to stderr.

    Each key's latest attempt wins; the fields are those of `vertexbatch results`. Keys still
    retryable or missing once the run is done have exhausted their attempts.
    """
    client = _client()
    run = _open_run(client, run_id)
    summary = run.status()
    if summary.done:
        exhausted = summary.outcomes.get("exhausted", 0)
        where = f"run done ({exhausted} exhausted)" if exhausted else "run done"
    else:
        pending = summary.outcomes.get("pending", 0)
        where = f"run not done ({pending} keys pending: results written so far)"
    _echo_results(run.results(), only, keys=run.keys, where=where)


@main.command()
@click.option(
    "--bucket",
    envvar="VERTEXBATCH_BUCKET",
    default="vertexbatch-local",
    show_default=True,
    help="Bucket to create on the local GCS server.",
)
@click.option(
    "--row-seconds", type=float, default=0.05, show_default=True, help="Time each row takes."
)
@_verbose
def emulator(bucket: str, row_seconds: float) -> None:
    """Run the local stack (GCS + Vertex) until Ctrl-C; prints the environment to use it."""
    try:
        from .emulator import Timing, run_foreground
    except ImportError as exc:
        raise _Fail(ExitCode.USAGE, _LOCAL_EXTRA.format(exc=exc)) from exc
    run_foreground(bucket=bucket, timing=Timing(row_seconds=row_seconds))


_LOCAL_EXTRA = (
    "the local stack needs the 'local' extra ({exc}): pip install 'vertexbatch[cli,local]'"
)


@main.command()
@click.option("--fast", is_flag=True, help="No simulated latency (for tests).")
@_verbose
def demo(fast: bool) -> None:
    """Run a Claude and a Gemini batch on a local stack and show what happened to each request."""
    try:
        from ._demo import run_demo
    except ImportError as exc:
        raise _Fail(ExitCode.USAGE, _LOCAL_EXTRA.format(exc=exc)) from exc
    run_demo(out=sys.stdout, fast=fast, tty=sys.stdout.isatty())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
