"""The ``vertexbatch`` command: submit, plan, find, status, cancel, results, watch, resubmit,
emulator, demo, doctor, probe, models, and ``run submit|advance|status|results`` for runs.

Every command takes the same configuration, from flags or the environment (a flag wins); the
table of flags and variables is in ``_config``, the one place a client is built from them.

Exit codes (an error is one line on stderr, never a traceback, never request content)::

    0   the command worked; for status and watch: the job is terminal and succeeded
    1   an unexpected error (a bug in vertexbatch)
    2   usage or configuration: a bad flag, a missing --project / GOOGLE_CLOUD_PROJECT, a
        bucket that does not exist (BucketNotFoundError), ...
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

What is printed is made in ``cli_render``, request files are read by ``cli_requests``, and the
shared options live in ``cli_options``; this module wires them into the single-job commands and
adds the commands kept apart: ``resubmit`` (``cli_resubmit``), ``run`` (``cli_runs``),
``emulator`` and ``demo`` (``cli_local``), ``doctor`` (``cli_doctor``), ``probe`` (``cli_probe``),
``models`` (``cli_models``).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

import click

from .._plans.spend import SpendMeter
from .._providers import COMMANDS, by_command
from .._values import Job, Result, Status
from .._waiting.schedule import WaitTimeout
from .cli_controls import control_options
from .cli_doctor import doctor
from .cli_local import demo, emulator
from .cli_models import catalogue_warnings, models
from .cli_options import (
    ENVIRONMENT_HELP,
    Seconds,
    cloud_client,
    cloud_command,
    find_job,
    verbose,
)
from .cli_plan import PayOnce, echo_plan, pay_options, plan_of, plan_options
from .cli_probe import probe
from .cli_progress import KeyCounts, job_meter, key_counts, request_progress, results_progress
from .cli_render import (
    OUTCOMES,
    ExitCode,
    Fail,
    Progress,
    describe_error,
    job_lines,
    json_line,
    result_record,
    results_summary,
    status_exit_code,
    status_line,
    status_note,
    status_record,
)
from .cli_requests import GivenRequests, check_provider, given_requests, requests_argument
from .cli_resubmit import resubmit
from .cli_runs import run_group

# ExitCode is the command's contract with scripts: importable from the command's own module.
__all__ = ["main"]

logger = logging.getLogger("vertexbatch")


class _Group(click.Group):
    """The command group: maps every exception of a command to one stderr line and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with catalogue_warnings():  # a model outside the catalogue: one stderr line
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


def _echo_job(job: Job, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(job.to_dict()))
        return
    for line in job_lines(job):
        click.echo(line)


def _echo_status(job: Job, status: Status, counts: KeyCounts) -> None:
    """The status line on stdout, counting keys; under it, on stderr, what the counts mean."""
    click.echo(status_line(job, counts(status)))
    note = status_note(job, status, shared=counts.shared)
    if note:
        click.echo(note, err=True)


def _echo_results(
    results: Iterable[Result],
    only: tuple[str, ...],
    *,
    keys: int,
    where: str,
    summary: dict[str, Any] | None = None,
    meter: SpendMeter | None = None,
) -> None:
    """One JSON line per result (those in ``only``, if given), then the summary on stderr: a
    line of words, or with ``summary`` (``--json``) that object with the counts, as JSON;
    ``meter`` adds up the spend of the results as they pass, and the summary says it."""
    counts: Counter[str] = Counter()
    for result in results:
        counts[result.outcome] += 1
        if meter is not None:
            meter.add(result)
        if not only or result.outcome in only:
            click.echo(json_line(result_record(result)))
    spend = None if meter is None else meter.spend
    if summary is None:
        click.echo(results_summary(counts, keys=keys, where=where, spend=spend), err=True)
    else:
        outcomes = {name: counts.get(name, 0) for name in OUTCOMES}
        extra = {} if spend is None else {"spend": spend.to_dict()}
        click.echo(
            json.dumps(
                {**summary, "read": sum(counts.values()), "outcomes": outcomes, **extra},
                allow_nan=False,
            ),
            err=True,
        )


# -- the commands -------------------------------------------------------------------------------


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


_provider_option = click.option(
    "--provider", type=click.Choice(COMMANDS), required=True, help="Whose model."
)
_model_option = click.option(
    "--model", required=True, help="Bare Vertex model id, e.g. claude-sonnet-4-5."
)
_id_option = click.option(
    "--id", "submission_id", required=True, help="Submission id (idempotency key)."
)


@main.command()
@_provider_option
@_model_option
@_id_option
@click.option("--json", "as_json", is_flag=True, help="Print the job as JSON.")
@pay_options
@control_options
@requests_argument
@cloud_command
def submit(
    provider: str,
    model: str,
    submission_id: str,
    as_json: bool,
    pay: PayOnce,
    file: GivenRequests,
) -> None:
    """Submit the requests of FILE (JSONL, - for stdin) under an id; the same id adopts its job.

    Claude lines: {"key": ..., "params": {Messages parameters}}.
    Gemini lines: {"key": ..., "contents": [...], "config": {...}}.
    Chat lines (open models): {"key": ..., "body": {OpenAI chat-completions parameters}}.
    --source reads them from a BigQuery table instead: a key column and a request column
    (Claude's Messages parameters, or Gemini's GenerateContentRequest, as JSON).
    --dry-run prints the plan instead, as 'vertexbatch plan' does.
    """
    _submit_or_plan(provider, model, submission_id, as_json, pay, file)


@main.command()
@_provider_option
@_model_option
@_id_option
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@plan_options
@control_options
@requests_argument
@cloud_command
def plan(
    provider: str,
    model: str,
    submission_id: str,
    as_json: bool,
    pay: PayOnce,
    file: GivenRequests,
) -> None:
    """Print what submitting FILE under an id would send and cost; stage and create nothing.

    The same as 'vertexbatch submit --dry-run' with the same options: requests, distinct, to
    send, jobs, input tokens (--count-tokens: counted by the provider), output ceiling, cost.
    """
    _submit_or_plan(provider, model, submission_id, as_json, pay, file)


def _submit_or_plan(
    provider: str,
    model: str,
    submission_id: str,
    as_json: bool,
    pay: PayOnce,
    file: GivenRequests,
) -> None:
    """``submit``, or with ``pay.dry_run`` (``submit --dry-run``, ``plan``) its plan."""
    check_provider(provider, model)
    with given_requests(file, provider) as (requests, stream):
        client = cloud_client()
        if pay.dry_run:
            planned = plan_of(client, provider, submission_id, model, requests, pay)
            echo_plan(planned, f"submission {submission_id!r}", as_json)
            return
        submit = getattr(client, by_command(provider).method("submit"))
        with request_progress(stream, "staging") as progress:
            job = submit(
                submission_id, model, requests, **pay.submit_arguments(), progress=progress
            )
    _echo_job(job, as_json)


@main.command()
@click.argument("submission_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the job as JSON.")
@cloud_command
def find(submission_id: str, as_json: bool) -> None:
    """Print the job of ID (exit 4 when there is none); read-only."""
    _echo_job(find_job(cloud_client(), submission_id), as_json)


@main.command()
@click.argument("submission_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@cloud_command
def status(submission_id: str, as_json: bool) -> None:
    """Print where the job of ID stands; the exit code says it too.

    0 succeeded, 10 not terminal yet, 11 failed, 12 cancelled, expired or paused.
    """
    client = cloud_client()
    job = find_job(client, submission_id)
    st = client.status(job)
    counts = key_counts(client, job)
    if as_json:
        click.echo(json.dumps(status_record(job, counts(st))))
    else:
        _echo_status(job, st, counts)
    click.get_current_context().exit(int(status_exit_code(st)))


@main.command()
@click.argument("submission_id", metavar="ID")
@cloud_command
def cancel(submission_id: str) -> None:
    """Ask Vertex to cancel the job of ID; finished rows keep their output.

    A job that has already ended is left as it is, and the command says so (exit 0).
    """
    client = cloud_client()
    job = find_job(client, submission_id)
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
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="The summary on stderr as one JSON object too (stdout is JSON either way).",
)
@cloud_command
def results(submission_id: str, only: tuple[str, ...], as_json: bool) -> None:
    """Print one JSON document per key, one a line, on stdout; a summary goes to stderr.

    \b
    Fields of each line, in this order:
      key, outcome, text, stop, usage {input, output, cache_read, cache_write},
      refusal {category, detail} or null, error {type, code, status} or null,
      shared, cached, tool_calls [{name, arguments, id, signature (when given)}],
      parsed (with --schema) or null.

    With --json the summary on stderr is one JSON object: id, keys, state, terminal, read,
    outcomes, spend {dollars (null: unknown), answers, input, output, cache_read, cache_write,
    tiers, notes}; without, a line of words. stdout is the same either way. The spend is what
    the answers read cost at batch prices (cached and shared answers are not paid again),
    and the canary's answers (--canary) at the tier they were billed at (Standard).
    """
    client = cloud_client()
    job = find_job(client, submission_id)
    st = client.status(job)
    note = "" if st.terminal else " (not terminal: rows written so far; missing keys come later)"
    summary = {"id": job.id, "keys": job.keys, "state": st.state, "terminal": st.terminal}
    with results_progress(job.keys) as progress:
        _echo_results(
            client.results(job, progress=progress),
            only,
            keys=job.keys,
            where=f"job {st.state}{note}",
            summary=summary if as_json else None,
            meter=job_meter(client, job, st.created),
        )


@main.command()
@click.argument("submission_id", metavar="ID")
@click.option(
    "--floor",
    type=Seconds(above=True),
    default=5.0,
    show_default=True,
    help="Shortest poll gap (s).",
)
@click.option(
    "--ceiling", type=Seconds(above=True), default=60.0, show_default=True, help="Longest gap (s)."
)
@click.option("--timeout", type=Seconds(), default=None, help="Give up after this many seconds.")
@cloud_command
def watch(submission_id: str, floor: float, ceiling: float, timeout: float | None) -> None:
    """Poll the job of ID with backoff until it is terminal; exit with the status exit code."""
    if ceiling < floor:
        raise Fail(ExitCode.USAGE, "--ceiling must be at least --floor")
    client = cloud_client()
    job = find_job(client, submission_id)
    counts = key_counts(client, job)  # the keys' counts, not the staged rows' (dedupe, cache)
    progress = Progress(sys.stderr, tty=sys.stderr.isatty())
    start = time.monotonic()
    try:
        st = client.wait(
            job,
            timeout=timeout,
            floor=floor,
            ceiling=ceiling,
            on_progress=lambda s: progress.update(job, counts(s), time.monotonic() - start),
        )
    except WaitTimeout as exc:
        progress.close()
        _echo_status(job, exc.status, counts)
        raise Fail(
            ExitCode.NOT_TERMINAL,
            f"job of id {job.id!r} is still {exc.status.state} after "
            f"{time.monotonic() - start:.0f}s (--timeout)",
        ) from exc
    progress.close()
    _echo_status(job, st, counts)
    click.get_current_context().exit(int(status_exit_code(st)))


main.add_command(resubmit)
main.add_command(run_group)
main.add_command(emulator)
main.add_command(demo)
main.add_command(doctor)
main.add_command(probe)
main.add_command(models)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
