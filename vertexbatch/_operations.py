"""Each operation of a ``Client``, written once on a ``Cloud``: submit, plan, resubmit, run.

``Client``'s provider-named methods (``submit_claude``, ``plan_gemini``, ...) are thin typed entry
points that hand their provider and one ``SubmitOptions`` to these; the provider's row
(``_providers.PROVIDERS``) gives the request type and the line builder, and the requests are
checked and built into lines here, one request at a time, before any cloud call
(``staged_lines``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sized
from dataclasses import replace
from typing import Any

from ._bigquery.share import run_snapshot
from ._bigquery.source import BigQuerySource, ChatRequests, ClaudeRequests, GeminiRequests, Share
from ._cache.files import file_versions, stored_versions
from ._cache.store import AnswerCache, check_ttl
from ._cache.submission import answer_from_cache, claimed_digests, is_cached_job
from ._cloud import Cloud
from ._errors import InvalidRequestError
from ._job.find import existing_job
from ._job.results import iter_results
from ._job.submit import resubmit, stage_and_submit
from ._observe.metrics import SILENT
from ._observe.progress import Meter, finish, meter_of
from ._plans.budget import budgeted
from ._plans.count_tokens import token_counter
from ._plans.estimate import Plan, build_plan, submitted_plan
from ._plans.prices import Price, today_utc
from ._providers import PROVIDERS, checked_model, job_limits
from ._requests.dedupe import dedupe as dedupe_lines
from ._rules import check_id, check_job, check_keys, check_own_id, next_attempt_id
from ._runs.ledger import MAX_ATTEMPTS, Ledger, Shard, check_requests_fit, check_run_id
from ._runs.run import DEFAULT_SHARD_SIZE, Run
from ._runs.shares import Listed
from ._runs.sink import check_run_dest
from ._runs.start import check_numbers, create_run, held_run
from ._runs.start_task import existing_task, start_task
from ._runs.tasks import Task
from ._staged.amend import with_canary, with_schema, with_source
from ._staged.manifest import no_rows, resubmit_origin
from ._submission.canary import canaried
from ._submission.lines import request_lines
from ._submission.options import PlanKeywords, RunKeywords, SubmitOptions
from ._values import Job, Provider, Status
from ._vertex.controls import Controls
from ._vertex.tiers import check_tier

__all__ = [
    "plan",
    "plan_with",
    "resubmit_job",
    "start_run",
    "run_with",
    "submit",
]


def submit(
    cloud: Cloud,
    id: str,
    model: str,
    provider: Provider,
    requests: ClaudeRequests | GeminiRequests | ChatRequests,
    options: SubmitOptions,
) -> Job:
    """Check, build the lines (deduplicated, minus what the answer cache holds), then the
    identity protocol: what each ``submit_<lane>`` does."""
    check_own_id(id)
    checked_model(model, provider, cloud.location)
    ttl = check_ttl(options.cache_ttl)
    controls = options.controls(cloud.location)
    staging = cloud.staging.keyed(controls.kms_key)  # every object written with the key
    limits = job_limits(model, staging.limits)  # one job's, where the catalogue gives them
    staging = staging if limits is staging.limits else staging.with_sizes(limits=limits)
    meter = meter_of(options.progress, "stage", requests)
    lines, read = request_lines(cloud, provider, requests, options, meter)
    if options.budget is not None:  # held to its plan before any cloud call (the lines: local)
        lines = budgeted(provider, model, lines, options.budget, f"submission {id!r}",
                         prices=options.prices, dedupe=options.dedupe, canary=options.canary,
                         limits=cloud.staging.limits, today=today_utc())  # fmt: skip
    lines, canary = canaried(cloud, id, provider, model, lines, options.canary,
                             prices=options.prices)  # fmt: skip
    if options.dedupe:
        lines = dedupe_lines(lines)
    amend = None
    if options.cache:
        held, amend = answer_from_cache(staging, id, provider, model, lines, ttl)
        lines = iter(held)
    job = stage_and_submit(
        staging,
        cloud.vertex,
        cloud.retry,
        id,
        provider,
        model,
        lines,
        amend=with_canary(
            with_source(with_schema(amend, options.schema), read.record if read else None), canary
        ),
        controls=controls,
        dest=options.dest,
    )
    finish(meter)
    return job


def plan(
    cloud: Cloud,
    id: str,
    model: str,
    provider: Provider,
    requests: ClaudeRequests | GeminiRequests | ChatRequests,
    options: SubmitOptions,
    *,
    count_tokens: bool,
    prices: Iterable[Price],
    shard_size: int | None,
    task: Task | None = None,
    fallback_tier: object = None,
) -> Plan:
    """What submitting (or, with ``shard_size``, starting a run of) the requests would do; the
    plan names the sink (``Plan.dest``). ``task``: the requests are that task's part of a run;
    ``fallback_tier``: the run's (``None``: not checked)."""
    for name, given in (("task", task), ("fallback_tier", fallback_tier)):
        if given is not None and shard_size is None:
            raise InvalidRequestError(f"{name}= plans a run: give shard_size too", field=name)
    meter = meter_of(options.progress, "plan", requests)
    made = _plan(cloud, id, model, provider, requests, options, count_tokens, prices, shard_size,
                 task, meter, fallback_tier)  # fmt: skip
    finish(meter)
    return replace(made, dest=options.dest)


def _plan(
    cloud: Cloud,
    id: str,
    model: str,
    provider: Provider,
    requests: ClaudeRequests | GeminiRequests | ChatRequests,
    options: SubmitOptions,
    count_tokens: bool,
    prices: Iterable[Price],
    shard_size: int | None,
    task: Task | None,
    meter: Meter | None,
    fallback_tier: object,
) -> Plan:
    check_own_id(id)
    checked_model(model, provider, cloud.location)
    tier = None if fallback_tier is None else check_tier(  # as run_* checks it
        fallback_tier, model, cloud.location, PROVIDERS[provider].tiers)  # fmt: skip
    ttl = check_ttl(options.cache_ttl)
    controls = options.controls(cloud.location)  # checked as submit and run check them
    cloud = replace(cloud, staging=cloud.staging.keyed(controls.kms_key))  # the key's cache
    dedupe, cache = options.dedupe, options.cache
    today = today_utc()  # the day of the plan: a price's last day is held to it
    if shard_size is not None and (type(shard_size) is not int or shard_size < 1):
        raise InvalidRequestError(
            f"shard_size must be at least 1, got {shard_size!r}", field="shard_size"
        )
    prices = tuple(prices)
    if task is not None:
        check_run_dest(options.dest)  # before the snapshot record is read
    share = tasked_share(cloud, id, task, requests, controls, write=False)  # a plan writes none
    given, read = request_lines(cloud, provider, requests, options, meter, share)
    held = list(given)  # what the id (or run id) already holds is checked against them first
    if not held and task is None:  # as submit and run refuse it, before any cloud call
        raise no_rows(id)  # (a task's part may be empty: it registers as one, docs/runs.md)
    if options.budget is not None:  # as submit and run hold it: estimated, the cache not asked
        budgeted(provider, model, held, options.budget, f"{'run' if shard_size else 'submission'} "
                 f"{id!r}", prices=prices, dedupe=dedupe, shard_size=shard_size,
                 limits=cloud.staging.limits, canary=options.canary, today=today)  # fmt: skip
    if shard_size is not None:  # what run_claude / run_gemini refuse before any cloud call
        check_run_dest(options.dest)  # a dataset, never a table
        check_run_id(id)
        # MAX_ATTEMPTS: the most digits a run's attempts take in its ledger.
        check_requests_fit(id, provider, model, MAX_ATTEMPTS, len(held), shard_size,
                           cloud.staging.limits, controls, options.dest)  # fmt: skip
    if shard_size is None:  # what the id already holds: a submit would return its job
        found = existing_job(
            cloud.staging,
            cloud.vertex,
            id,
            provider,
            model,
            held,
            dedupe=dedupe,
            cache=cache,
            schema=options.schema,
            controls=controls,
            dest=options.dest,
            source=read.source.table if read is not None else "",
        )
        if found is not None:
            job, cached = found
            return submitted_plan(provider, model, held, job.name, cached, prices, today=today)
    else:  # what the run id already holds: starting these would rejoin it, or be refused
        holding = (
            functools.partial(held_run, dest=options.dest, fallback_tier=tier)
            if task is None
            else functools.partial(
                existing_task,
                task=task,
                dest=options.dest,
                fallback_tier=tier,
                listing=requests.listing if isinstance(requests, Listed) else "",
            )
        )
        run = holding(
            cloud,
            id,
            provider,
            model,
            held,
            shard_size=shard_size,
            dedupe=dedupe,
            cache=cache,
            schema=options.schema,
            controls=controls,
        )
        if run is not None:
            return submitted_plan(provider, model, held, f"run:{id}", run[1], prices,
                                  said=_rejoined(run), today=today)  # fmt: skip
    count = token_counter(cloud, provider, model) if count_tokens else None
    lookup = None
    claimed = None
    if cache and shard_size is None:  # a submit that stopped before its manifest: its claim
        given = dedupe_lines(iter(held)) if dedupe else iter(held)
        claimed = claimed_digests(cloud.staging, id, given, provider, model)
    files = None  # the cache keys a request naming gs:// objects on their generations
    if claimed is not None:
        files = stored_versions(cloud.staging, id)
    elif cache:
        files = file_versions(cloud.staging, id, held, write=False)
    if claimed is not None:
        taken = claimed

        def lookup(digests: list[str]) -> set[str]:
            return taken.intersection(digests)

    elif cache:
        answers = AnswerCache(cloud.staging, provider, model, ttl=ttl)

        def lookup(digests: list[str]) -> set[str]:
            return set(answers.lookup(digests))

    return build_plan(
        provider,
        model,
        held,
        dedupe=dedupe,
        lookup=lookup,
        count=count,
        prices=prices,
        shard_size=shard_size,
        limits=cloud.staging.limits,
        files=files,
        canary=options.canary,
        today=today,
    )


def resubmit_job(
    cloud: Cloud,
    job: Job,
    keys: Iterable[str] | None,
    id: str | None,
    status_of_job: Callable[[Job], Status],
) -> Job:
    """``Client.resubmit``: check the job and keys (by default its retryable and missing ones,
    read silently once ``status_of_job`` says it is terminal), then submit them under the new id."""
    if is_cached_job(job):
        raise InvalidRequestError(
            f"id {job.id!r} was answered from the answer cache: every key has an ok "
            "answer, so there is nothing to resubmit",
            field="job",
        )
    check_job(job)
    new_id = check_id(id) if id is not None else next_attempt_id(job.id)
    if keys is None:
        status = status_of_job(job)
        if not status.terminal:
            raise InvalidRequestError(
                f"job {job.name} is {status.state}: its missing keys are not known until "
                "it is terminal; wait for it or pass keys=",
                field="job",
            )
        # The library's own pass: not the caller's reading, so nothing goes to the metrics
        # (nor to the answer cache), as runs' steps read results silently.
        silent = iter_results(cloud.vertex, cloud.staging, job, SILENT, bigquery=cloud.bigquery)
        wanted = {r.key for r in silent if r.outcome in ("retryable", "missing")}
    else:
        wanted = check_keys(keys)
    if not wanted:
        raise InvalidRequestError(f"job {job.name} has no keys to resubmit", field="keys")
    return resubmit(
        cloud.staging, cloud.vertex, cloud.retry, job, wanted, new_id, resubmit_origin(job.id)
    )


def tasked_share(
    cloud: Cloud,
    run_id: str,
    task: Task | None,
    requests: object,
    controls: Controls,
    *,
    write: bool,
) -> Share | None:
    """A run task's share of a ``BigQuerySource`` at the run's one snapshot (``_bigquery.share``):
    recorded create-only by the first task to read (``write``), adopted by every other; ``None``
    for requests given in Python or a run of one process (a ``task`` not a ``Task`` is refused
    by the run's start)."""
    if not isinstance(task, Task) or not isinstance(requests, BigQuerySource):
        return None
    check_run_id(run_id)  # before the record's cloud call
    staging = cloud.staging.keyed(controls.kms_key)
    return run_snapshot(staging, run_id, requests, task.index, task.count, write=write)


def _rejoined(run: tuple[Ledger, int, list[Shard]]) -> str:
    """What a plan of a run the id already holds says."""
    ledger, _, pending = run
    left = sum(shard.keys for shard in pending)
    return (
        f"run {ledger.id} already holds these requests ({len(ledger.shards)} shards): starting "
        f"it again rejoins it and stages or pays nothing more; {len(pending)} shards "
        f"({left} keys) are not finished yet, and their jobs are paid as the run goes on"
    )


def start_run(
    cloud: Cloud,
    id: str,
    model: str,
    provider: Provider,
    requests: ClaudeRequests | GeminiRequests | ChatRequests,
    options: SubmitOptions,
    *,
    shard_size: int,
    max_attempts: int,
    task: Task | None = None,
    fallback_tier: object = "standard",
) -> Run:
    """``run_claude`` and ``run_gemini``: check, then start (or rejoin) the run (``task``: one
    task's part of it)."""
    dest = check_run_dest(options.dest)  # a dataset, never a table
    checked_model(model, provider, cloud.location)
    tier = check_tier(fallback_tier, model, cloud.location, PROVIDERS[provider].tiers)
    controls = options.controls(cloud.location)
    ttl = check_ttl(options.cache_ttl)
    if task is not None or options.budget is not None:
        check_numbers(shard_size, max_attempts)  # before the snapshot record's cloud call
    share = tasked_share(cloud, id, task, requests, controls, write=True)  # a table's share
    meter = meter_of(options.progress, "stage", requests)
    lines, _ = request_lines(cloud, provider, requests, options, meter, share)  # the ledger's rows
    if options.budget is not None:  # the whole run's plan (a task's: its part), before staging
        lines = budgeted(provider, model, lines, options.budget, f"run {id!r}", today=today_utc(),
                         prices=options.prices, dedupe=options.dedupe, shard_size=shard_size,
                         limits=cloud.staging.limits, canary=options.canary)  # fmt: skip
    lines, canary = canaried(cloud, id, provider, model, lines, options.canary, run=True,
                             prices=options.prices)  # fmt: skip
    if task is not None:  # one task's part of a run staged by many (docs/runs.md)
        run = start_task(
            cloud, id, provider, model, lines, task=task, shard_size=shard_size,
            max_attempts=max_attempts, dedupe=options.dedupe, cache=options.cache,
            cache_ttl=ttl, schema=options.schema, controls=controls, dest=dest,
            count=len(requests) if isinstance(requests, Sized) else None,
            listing=requests.listing if isinstance(requests, Listed) else "",
            fallback_tier=tier, canary=canary,
        )  # fmt: skip
        finish(meter)
        return run
    run = create_run(
        cloud,
        id,
        provider,
        model,
        lines,
        shard_size=shard_size,
        max_attempts=max_attempts,
        dedupe=options.dedupe,
        cache=options.cache,
        cache_ttl=ttl,
        count=len(requests) if isinstance(requests, Sized) else None,
        schema=options.schema,
        controls=controls,
        dest=dest,
        fallback_tier=tier,
        canary=canary,
    )
    finish(meter)
    return run


def plan_with(
    cloud: Cloud,
    method: str,
    id: str,
    model: str,
    provider: Provider,
    requests: ClaudeRequests | GeminiRequests | ChatRequests,
    given: Mapping[str, Any],
) -> Plan:
    """``plan_claude`` / ``plan_gemini`` (named by ``method``) with their keywords ``given``."""
    options = SubmitOptions.of(method, given, PlanKeywords)  # every keyword checked here
    return plan(
        cloud,
        id,
        model,
        provider,
        requests,
        options,
        count_tokens=given.get("count_tokens", False),
        prices=options.prices,
        shard_size=given.get("shard_size"),
        task=given.get("task"),
        fallback_tier=given.get("fallback_tier"),
    )


def run_with(
    cloud: Cloud,
    method: str,
    id: str,
    model: str,
    provider: Provider,
    requests: ClaudeRequests | GeminiRequests | ChatRequests,
    given: Mapping[str, Any],
) -> Run:
    """``run_claude`` / ``run_gemini`` (named by ``method``) with their keywords ``given``."""
    options = SubmitOptions.of(method, given, RunKeywords)  # every keyword checked here
    check_own_id(id)  # the runs' own derived ids (RUN.s0) never come through here
    return start_run(
        cloud,
        id,
        model,
        provider,
        requests,
        options,
        shard_size=given.get("shard_size", DEFAULT_SHARD_SIZE),
        max_attempts=given.get("max_attempts", 3),
        task=given.get("task"),
        fallback_tier=given.get("fallback_tier", "standard"),
    )
