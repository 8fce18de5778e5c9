"""The ``vertexbatch`` command: submit, find, status, cancel, results, watch, emulator, demo,
doctor, probe, and ``run submit|advance|status|results`` for runs.

Every command takes the same configuration, from flags or the environment (a flag wins); the
table of flags and variables is in ``_config``, the one place a client is built from them.

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
    13  doctor: at least one check failed
    141 the reader of the output went away (a closed pipe, as in ``| head``): nothing more is
        printed, as a command killed by SIGPIPE

What is printed is made in ``_cli_render``, request files are read by ``_cli_requests``, and the
shared options live in ``_cli_options``; this module wires them into click commands.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

import click

from ._cli_doctor import doctor
from ._cli_options import ENVIRONMENT_HELP, cloud_client, cloud_command, verbose
from ._cli_plan import cache_options, dedupe_option, dry_run_options, echo_plan, plan_of
from ._cli_probe import probe
from ._cli_render import (
    OUTCOMES,
    RUN_OUTCOMES,
    ExitCode,
    Fail,
    Progress,
    describe_error,
    job_lines,
    result_record,
    results_summary,
    run_exit_code,
    run_line,
    run_record,
    run_result_record,
    run_results_summary,
    status_exit_code,
    status_line,
    status_note,
    status_record,
)
from ._cli_requests import check_provider, naming_the_line, open_requests, request_lines
from ._client import Client
from ._config import BUCKET
from ._errors import InvalidRequestError, WaitTimeout
from ._models import Job, Result, Status
from ._runs import DEFAULT_SHARD_SIZE, Run, RunSummary
from ._wait import wait

# ExitCode is the command's contract with scripts: importable from the command's own module.
__all__ = ["ExitCode", "main"]

logger = logging.getLogger("vertexbatch")


class _Group(click.Group):
    """The command group: maps every exception of a command to one stderr line and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except BrokenPipeError:
            # `vertexbatch results ID | head`: the reader is gone; say nothing (there is no one
            # to tell) and keep Python's exit flush from failing on the same pipe.
            _silence_stdout()
            ctx.exit(int(ExitCode.CLOSED_PIPE))
        except Exception as exc:
            code, message = describe_error(exc)
            logger.debug("%s", message, exc_info=True)
            click.echo(f"vertexbatch: {message}", err=True)
            ctx.exit(int(code))


def _silence_stdout() -> None:
    """Point stdout's descriptor at /dev/null (when it has one) so nothing more fails on it."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real stream (click's test runner)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, descriptor)
    finally:
        os.close(devnull)


def _find(client: Client, submission_id: str) -> Job:
    job = client.find(submission_id)
    if job is None:
        raise Fail(
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
            raise Fail(ExitCode.NOT_FOUND, str(exc)) from exc
        raise


def _echo_job(job: Job, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(job.to_dict()))
        return
    for line in job_lines(job):
        click.echo(line)


def _echo_status(job: Job, status: Status) -> None:
    """The status line on stdout; under it, on stderr, what Vertex's counts mean."""
    click.echo(status_line(job, status))
    note = status_note(job, status)
    if note:
        click.echo(note, err=True)


def _echo_results(
    results: Iterable[Result], only: tuple[str, ...], *, keys: int, where: str
) -> None:
    """One JSON line per result (those in ``only``, if given), then the summary on stderr."""
    counts: Counter[str] = Counter()
    for result in results:
        counts[result.outcome] += 1
        if not only or result.outcome in only:
            click.echo(json.dumps(result_record(result), ensure_ascii=False))
    click.echo(results_summary(counts, keys=keys, where=where), err=True)


def _echo_run(run: Run, summary: RunSummary, as_json: bool, *, created: bool = False) -> None:
    if as_json:
        click.echo(json.dumps(run_record(summary, shards=len(run.shards))))
        return
    click.echo(run_line(summary, created=created))


def _deadline(value: str | None) -> datetime | None:
    """The ``--deadline`` as an aware datetime; a usage error if it is not one."""
    if value is None:
        return None
    example = "e.g. 2026-11-30T06:00:00+00:00 or 2026-11-30T06:00:00Z"
    try:
        deadline = datetime.fromisoformat(value)
    except ValueError:
        raise Fail(
            ExitCode.USAGE, f"--deadline {value!r} is not an ISO 8601 date and time, {example}"
        ) from None
    if deadline.utcoffset() is None:
        raise Fail(ExitCode.USAGE, f"--deadline {value!r} has no timezone: add one, {example}")
    return deadline


# -- the commands -------------------------------------------------------------------------------

# A path, not click.File: a file that cannot be opened is the command's one-line error (exit 2),
# not click's usage text.
_file_argument = click.argument("file", type=click.Path(allow_dash=True))


@click.group(cls=_Group, epilog=ENVIRONMENT_HELP)
@verbose
@click.version_option(package_name="vertexbatch")
def main() -> None:
    """Vertex AI batch prediction for Claude and Gemini, by submission id.

    Exit codes: 0 done (status/watch: succeeded), 2 usage or configuration, 3 invalid request,
    4 no job (or run) for the id, 5 job error, 6 other cloud error, 10 job not terminal (run
    not done), 11 job failed, 12 job cancelled/expired/paused, 13 a doctor check failed, 141
    output pipe closed, 1 unexpected.
    """


@main.command()
@click.option(
    "--provider", type=click.Choice(["claude", "gemini"]), required=True, help="Whose model."
)
@click.option("--model", required=True, help="Bare Vertex model id, e.g. claude-opus-5-5@default.")
@click.option("--id", "submission_id", required=True, help="Submission id (idempotency key).")
@click.option("--json", "as_json", is_flag=True, help="Print the job as JSON.")
@dedupe_option
@cache_options
@dry_run_options
@_file_argument
@cloud_command
def submit(
    provider: str,
    model: str,
    submission_id: str,
    as_json: bool,
    dedupe: bool,
    cache: bool,
    cache_ttl: float | None,
    dry_run: bool,
    count_tokens: bool,
    file: str,
) -> None:
    """Submit the requests of FILE (JSONL, - for stdin) under an id; the same id adopts its job.

    Claude lines: {"key": ..., "params": {Messages parameters}}.
    Gemini lines: {"key": ..., "contents": [...], "config": {...}}.
    """
    check_provider(provider, model)
    client = cloud_client()
    with open_requests(file) as stream:
        lines = request_lines(stream, provider)
        with naming_the_line(lines):
            ttl = None if cache_ttl is None else timedelta(seconds=cache_ttl)
            if dry_run:
                plan = plan_of(
                    client,
                    provider,
                    submission_id,
                    model,
                    lines,
                    dedupe,
                    count_tokens,
                    cache=cache,
                    ttl=ttl,
                )
                echo_plan(plan, f"submission {submission_id!r}", as_json)
                return
            if provider == "claude":
                job = client.submit_claude(
                    submission_id,
                    model,
                    iter(lines),  # type: ignore[arg-type]
                    dedupe=dedupe,
                    cache=cache,
                    cache_ttl=ttl,
                )
            else:
                job = client.submit_gemini(
                    submission_id,
                    model,
                    iter(lines),  # type: ignore[arg-type]
                    dedupe=dedupe,
                    cache=cache,
                    cache_ttl=ttl,
                )
    _echo_job(job, as_json)


@main.command()
@click.argument("submission_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the job as JSON.")
@cloud_command
def find(submission_id: str, as_json: bool) -> None:
    """Print the job of ID (exit 4 when there is none); read-only."""
    _echo_job(_find(cloud_client(), submission_id), as_json)


@main.command()
@click.argument("submission_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@cloud_command
def status(submission_id: str, as_json: bool) -> None:
    """Print where the job of ID stands; the exit code says it too.

    0 succeeded, 10 not terminal yet, 11 failed, 12 cancelled, expired or paused.
    """
    client = cloud_client()
    job = _find(client, submission_id)
    st = client.status(job)
    if as_json:
        click.echo(json.dumps(status_record(job, st)))
    else:
        _echo_status(job, st)
    click.get_current_context().exit(int(status_exit_code(st)))


@main.command()
@click.argument("submission_id", metavar="ID")
@cloud_command
def cancel(submission_id: str) -> None:
    """Ask Vertex to cancel the job of ID; finished rows keep their output.

    A job that has already ended is left as it is, and the command says so (exit 0).
    """
    client = cloud_client()
    job = _find(client, submission_id)
    st = client.status(job)
    if not st.terminal:
        client.cancel(job)
        # The job may have ended between the two calls: Vertex then refuses the cancel, which
        # the client takes as done. Ask again, so that the line says what happened.
        st = client.status(job)
        if not st.terminal or st.state == "JOB_STATE_CANCELLED":
            click.echo(f"cancel requested for job {job.name} (id {job.id})")
            return
    click.echo(f"job {job.name} (id {job.id}) already ended {st.state}: nothing to cancel")


_only_option = click.option(
    "--only",
    type=click.Choice(list(OUTCOMES)),
    multiple=True,
    help="Print only results with this outcome (repeatable).",
)


@main.command()
@click.argument("submission_id", metavar="ID")
@_only_option
@cloud_command
def results(submission_id: str, only: tuple[str, ...]) -> None:
    """Print one JSON line per key; a summary of the outcomes goes to stderr.

    Fields: key, outcome, text, stop, usage{input,output,cache_read,cache_write},
    refusal{category,detail} or null, error{type,code,status} or null, shared, cached.
    """
    client = cloud_client()
    job = _find(client, submission_id)
    st = client.status(job)
    note = "" if st.terminal else " (not terminal: rows written so far; missing keys come later)"
    _echo_results(client.results(job), only, keys=job.keys, where=f"job {st.state}{note}")


@main.command()
@click.argument("submission_id", metavar="ID")
@click.option("--floor", type=float, default=5.0, show_default=True, help="Shortest poll gap (s).")
@click.option("--ceiling", type=float, default=60.0, show_default=True, help="Longest gap (s).")
@click.option("--timeout", type=float, default=None, help="Give up after this many seconds.")
@cloud_command
def watch(submission_id: str, floor: float, ceiling: float, timeout: float | None) -> None:
    """Poll the job of ID with backoff until it is terminal; exit with the status exit code."""
    if floor <= 0 or ceiling < floor:
        raise Fail(ExitCode.USAGE, "--floor must be > 0 and --ceiling at least --floor")
    client = cloud_client()
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
        _echo_status(job, exc.status)
        raise Fail(
            ExitCode.NOT_TERMINAL,
            f"job of id {job.id!r} is still {exc.status.state} after "
            f"{time.monotonic() - start:.0f}s (--timeout)",
        ) from exc
    progress.close()
    _echo_status(job, st)
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
@dedupe_option
@cache_options
@dry_run_options
@_file_argument
@cloud_command
def run_submit(
    provider: str,
    model: str,
    run_id: str,
    shard_size: int,
    attempts: int,
    as_json: bool,
    dedupe: bool,
    cache: bool,
    cache_ttl: float | None,
    dry_run: bool,
    count_tokens: bool,
    file: str,
) -> None:
    """Start a run of the requests of FILE (JSONL, - for stdin).

    The lines are those of `vertexbatch submit`. Stages every shard, creates the first jobs and
    prints the run's summary; the same id and file again rejoin the run.
    """
    check_provider(provider, model)
    client = cloud_client()
    with open_requests(file) as stream:
        lines = request_lines(stream, provider)
        with naming_the_line(lines):
            ttl = None if cache_ttl is None else timedelta(seconds=cache_ttl)
            if dry_run:
                plan = plan_of(
                    client,
                    provider,
                    run_id,
                    model,
                    lines,
                    dedupe,
                    count_tokens,
                    shard_size,
                    cache=cache,
                    ttl=ttl,
                )
                echo_plan(plan, f"run {run_id!r}", as_json)
                return
            start = client.run_claude if provider == "claude" else client.run_gemini
            run = start(
                run_id,
                model,
                iter(lines),  # type: ignore[arg-type]
                shard_size=shard_size,
                max_attempts=attempts,
                dedupe=dedupe,
                cache=cache,
                cache_ttl=ttl,
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
@cloud_command
def run_advance(run_id: str, deadline: str | None, fallback: str | None, as_json: bool) -> None:
    """Take one step of the run; exit 0 once it is done, 10 before.

    A step creates jobs, resubmits retryable and missing keys while attempts remain, and
    finishes shards. It is safe to call from any number of processes at once.
    """
    when = _deadline(deadline)
    if fallback and when is None:
        raise Fail(ExitCode.USAGE, "--fallback online needs --deadline")
    client = cloud_client()
    run = _open_run(client, run_id)
    summary = run.advance(deadline=when, fallback="online" if fallback else None)
    _echo_run(run, summary, as_json, created=True)
    click.get_current_context().exit(int(run_exit_code(summary)))


@run_group.command("status")
@click.argument("run_id", metavar="RUN_ID")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
@cloud_command
def run_status(run_id: str, as_json: bool) -> None:
    """Print where the run stands; exit 0 once it is done, 10 before. Changes nothing."""
    client = cloud_client()
    run = _open_run(client, run_id)
    summary = run.status()
    _echo_run(run, summary, as_json)
    click.get_current_context().exit(int(run_exit_code(summary)))


@run_group.command("results")
@click.argument("run_id", metavar="RUN_ID")
@click.option(
    "--only",
    type=click.Choice(list(RUN_OUTCOMES)),
    multiple=True,
    help="Print only keys with this outcome or run_outcome (repeatable), e.g. exhausted.",
)
@cloud_command
def run_results(run_id: str, only: tuple[str, ...]) -> None:
    """Print one JSON line per key of the run; a summary goes to stderr.

    Each key's latest attempt wins. The fields are those of `vertexbatch results`, then
    attempts (how many attempts held the key) and run_outcome (ok, refused, truncated, failed,
    exhausted: retryable or missing with no attempt left, or pending: its shard is not
    finished), the words `run status` counts; the summary counts them as it does.
    """
    client = cloud_client()
    run = _open_run(client, run_id)
    counts: Counter[str] = Counter()
    for item in run.key_results():
        counts[item.outcome] += 1
        if not only or item.result.outcome in only or item.outcome in only:
            click.echo(json.dumps(run_result_record(item), ensure_ascii=False))
    click.echo(run_results_summary(counts, keys=run.keys), err=True)


_port = click.IntRange(0, 65535)


@main.command()
@click.option(
    "--bucket",
    envvar=BUCKET.variable,
    show_envvar=True,
    default="vertexbatch-local",
    show_default=True,
    help="Bucket to create on the local GCS server.",
)
@click.option(
    "--row-seconds", type=float, default=0.05, show_default=True, help="Time each row takes."
)
@click.option(
    "--port", type=_port, default=0, help="Port of the Vertex service [default: a free one]."
)
@click.option(
    "--gcs-port", type=_port, default=0, help="Port of the GCS server [default: a free one]."
)
@click.option(
    "--env-file",
    type=click.Path(dir_okay=False),
    help="Write the export lines to this file once the stack serves (removed when it stops).",
)
@click.option(
    "--probe-report",
    type=click.Path(dir_okay=False, exists=True),
    help="Behave as this `vertexbatch probe` report says the real service did.",
)
@verbose
def emulator(
    bucket: str,
    row_seconds: float,
    port: int,
    gcs_port: int,
    env_file: str | None,
    probe_report: str | None,
) -> None:
    """Run the local stack (GCS + Vertex) until Ctrl-C or SIGTERM; print its environment.

    The export lines go to stdout, and with --env-file to a file. From a shell, give fixed
    ports and an env file, then source it where you run commands; a restart on the same ports
    keeps those exports right:

    \b
      vertexbatch emulator --port 9100 --gcs-port 9101 --env-file .vertexbatch.env
      source .vertexbatch.env          # in another shell, or after the file appears

    It keeps running, so `eval "$(vertexbatch emulator)"` would never return: use the file.
    """
    if port and port == gcs_port:
        raise Fail(ExitCode.USAGE, f"--port and --gcs-port must differ (both {port})")
    try:
        from .emulator import Timing, run_foreground
    except ImportError as exc:
        raise Fail(ExitCode.USAGE, _LOCAL_EXTRA.format(exc=exc)) from exc
    try:
        run_foreground(
            bucket=bucket,
            timing=Timing(row_seconds=row_seconds),
            port=port,
            gcs_port=gcs_port,
            env_file=env_file,
            probe_report=probe_report,
        )
    except ValueError as exc:  # not a probe report
        raise Fail(ExitCode.USAGE, f"--probe-report: {exc}") from None
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        raise Fail(
            ExitCode.USAGE,
            f"cannot start the local stack: {exc.strerror} (another vertexbatch emulator?): "
            "stop it, or choose another --port / --gcs-port",
        ) from None


_LOCAL_EXTRA = (
    "the local stack needs the 'local' extra ({exc}): pip install 'vertexbatch[cli,local]'"
)


@main.command()
@click.option("--fast", is_flag=True, help="No simulated latency (for tests).")
@verbose
def demo(fast: bool) -> None:
    """Run a Claude and a Gemini batch on a local stack and show what happened to each request."""
    try:
        from ._demo import run_demo
    except ImportError as exc:
        raise Fail(ExitCode.USAGE, _LOCAL_EXTRA.format(exc=exc)) from exc
    run_demo(out=sys.stdout, fast=fast, tty=sys.stdout.isatty())


main.add_command(doctor)
main.add_command(probe)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
