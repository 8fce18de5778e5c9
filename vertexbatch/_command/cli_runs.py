"""``vertexbatch run submit|advance|status|results``: runs from the command line.

Wired into the command by ``cli``; what is printed is made in ``cli_render``.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import IO, Any

import click

from .._client import Client
from .._errors import InvalidRequestError
from .._functions import list_request_files
from .._plans.spend import SpendMeter, count_tiers
from .._providers import COMMANDS, by_command
from .._runs.run import DEFAULT_SHARD_SIZE, Run
from .._runs.step import RunSummary
from .._runs.tasks import COUNT_VARIABLE, INDEX_VARIABLE, Task
from .._runs.usage import Tally
from .._vertex.tiers import TIERS
from .cli_controls import control_options
from .cli_options import cloud_client, cloud_command
from .cli_plan import PayOnce, echo_plan, pay_options, plan_of
from .cli_progress import request_progress
from .cli_render import (
    RUN_OUTCOMES,
    ExitCode,
    Fail,
    json_line,
    run_exit_code,
    run_line,
    run_record,
    run_result_record,
    run_results_summary,
)
from .cli_requests import GivenRequests, check_provider, given_requests, requests_argument

__all__ = ["run_group"]


def _open_run(client: Client, run_id: str) -> Run:
    try:
        return client.open_run(run_id)
    except InvalidRequestError as exc:
        # field "run" marks an absent ledger; an invalid id or a ledger that cannot be read stay
        # invalid requests (exit 3).
        if exc.field == "run":
            raise Fail(ExitCode.NOT_FOUND, str(exc)) from exc
        raise


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


def task_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--task-index`` and ``--task-count``, by default the Cloud Run task's variables."""
    command = click.option(
        "--task-count",
        type=click.IntRange(min=1),
        envvar=COUNT_VARIABLE,
        help=f"How many tasks share the run. [env: {COUNT_VARIABLE}]",
    )(command)
    return click.option(
        "--task-index",
        type=click.IntRange(min=0),
        envvar=INDEX_VARIABLE,
        help=f"This task's index, from 0. [env: {INDEX_VARIABLE}]",
    )(command)


def _task(index: int | None, count: int | None) -> Task | None:
    """The task the options name; ``None`` when neither is given (nor set by Cloud Run)."""
    if index is None and count is None:
        return None
    if index is None or count is None:
        raise Fail(ExitCode.USAGE, "--task-index and --task-count go together")
    if index >= count:
        raise Fail(ExitCode.USAGE, f"--task-index {index} is not below --task-count {count}")
    return Task(index, count)


@click.group("run")
def run_group() -> None:
    """Runs: many requests over shards and attempts until every key is answered.

    Submit once, then advance (by hand, in a loop or from a scheduler) until done; all state
    is in GCS under the run id. run advance / run status exit 0 once the run is done, 10 before.
    """


@run_group.command("submit")
@click.option("--provider", type=click.Choice(COMMANDS), required=True, help="Whose model.")
@click.option("--model", required=True, help="Bare Vertex model id, e.g. claude-sonnet-4-5.")
@click.option("--id", "run_id", required=True, help="Run id (shards are RUN_ID.s0, .s1, ...).")
@click.option(
    "--shard-size",
    type=click.IntRange(min=1),
    default=DEFAULT_SHARD_SIZE,
    show_default=True,
    help="Most rows per shard (one job each; at most the model's limit: 200,000 for Gemini, "
    "1,000,000 for Gemini embeddings).",
)
@click.option(
    "--attempts",
    type=click.IntRange(1, 99),
    default=3,
    show_default=True,
    help="Most attempts per key.",
)
@click.option(
    "--fallback-tier",
    type=click.Choice(TIERS),
    default="standard",
    show_default=True,
    help="Price tier of the online answers past a deadline (run advance --fallback online): "
    "flex (50% off, Gemini models the catalogue marks flex, location global only) or priority "
    "(Gemini, global/us/eu).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
@task_options
@pay_options
@control_options
@requests_argument
@cloud_command
def run_submit(
    provider: str,
    model: str,
    run_id: str,
    shard_size: int,
    attempts: int,
    fallback_tier: str,
    as_json: bool,
    task_index: int | None,
    task_count: int | None,
    pay: PayOnce,
    file: GivenRequests,
) -> None:
    """Start a run of the requests of FILE (JSONL, - for stdin, or a gs://BUCKET/PATH/ prefix).

    The lines (or the --source table) are those of `vertexbatch submit`. Stages every shard,
    creates the first jobs and prints the run's summary; the same id and file again rejoin it.
    FILE may be a GCS prefix of JSONL files: every file under it, in name order. With
    --task-index and --task-count (by default the Cloud Run task's), this task stages its part
    of FILE under the one run id (every COUNT-th request from INDEX; of a prefix, its share of
    the files, cut by bytes; of the --source table, its share of the rows); jobs are created
    once every task did.
    """
    check_provider(provider, model)
    task = _task(task_index, task_count)
    tasked = {} if task is None else {"task": task}
    with _given(file, provider, task) as (part, stream, client):
        if pay.dry_run:
            plan = plan_of(
                client, provider, run_id, model, part, pay, shard_size,
                fallback_tier=fallback_tier, **tasked,
            )  # fmt: skip
            echo_plan(plan, f"run {run_id!r}", as_json)
            return
        start = getattr(client, by_command(provider).method("run"))
        with request_progress(stream, "staging") as progress:
            run = start(
                run_id,
                model,
                iter(part) if stream is not None else part,
                shard_size=shard_size,
                max_attempts=attempts,
                fallback_tier=fallback_tier,
                **tasked,
                **pay.submit_arguments(),
                progress=progress,
            )
    _echo_run(run, run.status(), as_json)


@contextlib.contextmanager
def _given(
    file: GivenRequests, provider: str, task: Task | None
) -> Iterator[tuple[Any, IO[bytes] | None, Client]]:
    """This task's requests (all of them without a task), the file they stream from (``None``:
    a table, or a prefix's files) and the command's client."""
    if file.file is None or not file.file.startswith("gs://") or file.source is not None:
        with given_requests(file, provider) as (requests, stream):
            # A file's lines are cut here; a table is handed on whole: the library reads the
            # task's share of it, at the run's one snapshot.
            part = requests if task is None or stream is None else task.take(requests)
            yield part, stream, cloud_client()
        return
    if file.key_column is not None or file.request_column is not None:
        raise Fail(ExitCode.USAGE, "--key-column and --request-column go with --source only")
    client = cloud_client()
    files = list_request_files(client, file.file).share(task)
    if task is not None and not len(files):
        click.echo(
            f"{task}: no file of {files.prefix} is this task's (fewer files than tasks, or "
            "large ones); it registers an empty part of the run",
            err=True,
        )
    yield getattr(files, f"{provider}_requests")(), None, client


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
@task_options
@cloud_command
def run_results(
    run_id: str, only: tuple[str, ...], task_index: int | None, task_count: int | None
) -> None:
    """Print one JSON line per key of the run; a summary goes to stderr.

    Each key's latest attempt wins. The fields are those of `vertexbatch results`, then
    attempts (how many attempts held the key) and run_outcome (ok, refused, truncated, failed,
    exhausted: retryable or missing with no attempt left, or pending: its shard is not
    finished), the words `run status` counts; the summary counts them as it does. With
    --task-index and --task-count (by default the Cloud Run task's), only this task's share of
    the keys: the shares of COUNT tasks hold every key exactly once. The summary ends with
    what the keys' latest answers cost: batch answers at batch prices, online answers at the
    tier they were billed at (unknown for a model with no price), and the run's canary
    (--canary; in task 0's share) at its tier, priced on the day the jobs were created (a
    price past its last day then is unknown).
    """
    task = _task(task_index, task_count)
    client = cloud_client()
    run = _open_run(client, run_id)
    counts: Counter[str] = Counter()
    # Summed as they stream, priced at the end on the latest day an answer is priced on (its
    # job's creation day; today's where not known): as status prices it (_runs.usage).
    tally = Tally(run.provider, run.model)
    for item in run.key_results(task=task):
        counts[item.outcome] += 1
        tally.add(item.result, item.tier, item.priced_on)
        if not only or item.result.outcome in only or item.outcome in only:
            click.echo(json_line(run_result_record(item)))
    meter = SpendMeter(run.provider, run.model, priced_on=tally.day)
    if task is None or task.index == 0:  # the run's canary, in one share of the keys
        count_tiers(meter, run._ledger.canary)
    count_tiers(meter, tally.usage())
    keys = run.keys if task is None else sum(counts.values())
    click.echo(run_results_summary(counts, keys=keys, spend=meter.spend), err=True)
