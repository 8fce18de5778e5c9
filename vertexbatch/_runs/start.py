"""Starting a run: cut the requests into shards, stage each, write the ledger — or rejoin it.

A run started again with the same requests rejoins it; with other requests, shard size, model
or attempts it is refused, and the whole run is checked against what is staged before anything
is written. ``open_run`` rebuilds a run from its ledger alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import timedelta

from .._cache.submission import answer_from_cache, record_cached
from .._cloud import Cloud
from .._errors import InvalidRequestError
from .._providers import PROVIDERS, job_limits
from .._requests.lines import StagedLine
from .._schemas.check import Schema
from .._staged.amend import with_schema
from .._staged.manifest import Manifest, measure, read_manifest, run_origin
from .._staged.usage import TierUsage
from .._staged.write import stage
from .._values import Provider
from .._vertex.controls import NO_CONTROLS, Controls
from .done import read_done
from .ledger import (
    MAX_ATTEMPTS,
    Ledger,
    Shard,
    check_ledger_size,
    check_requests_fit,
    check_run_id,
    read_ledger,
    write_ledger,
)
from .registry import any_task
from .run import Run
from .shards import Shards
from .sink import other_sink

__all__ = ["check_numbers", "create_run", "held_run", "open_run"]


def create_run(
    cloud: Cloud,
    run_id: str,
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
    *,
    shard_size: int,
    max_attempts: int,
    dedupe: bool = False,
    cache: bool = False,
    cache_ttl: timedelta | None = None,
    count: int | None = None,
    schema: Schema | None = None,
    controls: Controls = NO_CONTROLS,
    dest: str = "",
    fallback_tier: str = "standard",
    canary: TierUsage | None = None,
) -> Run:
    """Stage every shard, write the ledger, and take the first ``advance`` step.

    With ``dedupe``, each shard stages each distinct request once (requests repeated across
    shards are staged once per shard). With ``cache``, each shard stages only what the answer
    cache does not hold (a shard it answers whole gets no job), and ``Run.results`` fills the
    cache with the ok answers of each finished shard. ``count``: the number of requests, when
    known before they are read (a list), so that a run of more shards than its ledger can hold
    is refused before any cloud call, not only once that many shards are cut. ``controls``
    (checked) go in the ledger, every shard's manifest and every attempt's job; a rejoin with
    other controls is refused. ``dest``: the run's BigQuery dataset (``_runs.sink``, checked),
    in the ledger and every shard's manifest; a rejoin with another sink is refused.
    ``fallback_tier`` (checked by the caller: ``_vertex.tiers.check_tier``): the online
    fallback's price tier, in the ledger; a rejoin with another is refused. ``canary``: what
    the run's canary used (``_submission.canary``), in a new ledger only (a rejoin sent none).
    """
    check_run_id(run_id)
    check_numbers(shard_size, max_attempts)
    if count is not None:  # a ledger too big to read back: refused before anything is staged
        check_requests_fit(
            run_id,
            provider,
            model,
            max_attempts,
            count,
            shard_size,
            cloud.staging.limits,
            controls,
            dest,
            fallback_tier,
        )
    # The first request is checked before any cloud call.
    cutter = Shards(lines, shard_size, job_limits(model, cloud.staging.limits), dedupe)
    if not cutter.more():
        raise InvalidRequestError(f"no requests for run {run_id!r}", field="requests")
    cloud = replace(cloud, staging=cloud.staging.keyed(controls.kms_key))
    staging = cloud.staging
    existing = read_ledger(staging, run_id)
    if existing is not None and existing.tasks:
        raise _other_run(
            run_id,
            f"run {run_id!r} was staged by {existing.tasks} tasks: rejoin it with task= (a "
            "vertexbatch.Task), or use a new run id",
        )
    if existing is not None:
        # Rejoining: check the whole run against what is staged before touching anything.
        _check_rejoin(
            cloud,
            existing,
            provider,
            model,
            max_attempts,
            shard_size,
            cutter,
            cache,
            cache_ttl,
            schema,
            controls,
            dest,
            fallback_tier,
        )
        ledger = existing
    else:
        origin = run_origin(run_id)
        shards: list[Shard] = []
        while cutter.more():
            # A stream's length is known only as it is cut: refused before the shard the
            # ledger cannot hold is staged, and long before any job is created.
            check_ledger_size(
                run_id,
                provider,
                model,
                max_attempts,
                len(shards) + 1,
                shard_size,
                cloud.staging.limits,
                why=f"more than {len(shards):,} shards",
                then=(
                    f" and a new run id (its first {len(shards):,} shards were staged before "
                    "the number of requests was known: pass a list to have it checked first)"
                ),
                controls=controls,
                dest=dest,
                tier=fallback_tier,
            )
            shard_id = f"{run_id}.s{len(shards)}"
            try:
                lines, amend = _from_cache(
                    cloud, shard_id, provider, model, cutter.take(), cache, cache_ttl, schema
                )
                manifest = stage(
                    staging, shard_id, provider, model, lines, origin, amend, controls, dest
                )
            except InvalidRequestError as exc:
                staged = read_manifest(staging, shard_id) if exc.field == "id" else None
                if exc.field != "id" or (staged is not None and staged.origin != origin):
                    raise  # a bad line, or the id is someone else's: its own message says so
                # An earlier start of this run staged the shard and stopped before the ledger (a
                # bad line further on, or killed): the shard's id and MD5s would only puzzle.
                raise InvalidRequestError(
                    f"run id {run_id!r} was partly staged before, with other requests, model or "
                    "shard size, by a start that stopped before it finished: use a new run id; "
                    "nothing staged was changed",
                    field="id",
                ) from exc
            if not manifest.rows:
                # Answered whole from the cache: recorded now, so that a step's listing shows it
                # ended without reading every shard's manifest (``_runs.records``).
                record_cached(staging, manifest.spec(shard_id, staging.folder(shard_id)), manifest)
            shards.append(Shard(shard_id, manifest.key_count))
        ledger = Ledger(
            run_id, provider, model, max_attempts, tuple(shards), True, controls, dest, 0,
            fallback_tier, canary or {},
        )  # fmt: skip
        if not write_ledger(staging, ledger):
            raise _other_run(run_id)
    run = Run(cloud, ledger)
    run.advance()
    return run


def check_numbers(shard_size: int, max_attempts: int) -> None:
    """Raise unless the shard size and the attempts are whole numbers in their ranges."""
    if type(shard_size) is not int or shard_size < 1:
        raise InvalidRequestError(
            f"shard_size must be at least 1, got {shard_size}", field="shard_size"
        )
    if type(max_attempts) is not int or not 1 <= max_attempts <= MAX_ATTEMPTS:
        raise InvalidRequestError(
            f"max_attempts must be a whole number from 1 to {MAX_ATTEMPTS}, got {max_attempts!r}",
            field="max_attempts",
        )


def _other_run(run_id: str, what: str = "") -> InvalidRequestError:
    """The run-level error of a rejoin that does not match; ``what`` says what differs."""
    why = what or f"run id {run_id!r} already holds another run (other requests): use a new id"
    return InvalidRequestError(f"{why}; nothing staged was changed", field="id")


def _other_cut(ledger: Ledger, shard_size: int) -> InvalidRequestError:
    shards = ledger.shards
    staged = f"in shards of {shards[0].keys} rows" if len(shards) > 1 else "in one shard"
    return _other_run(
        ledger.id,
        f"run {ledger.id!r} was staged {staged}; a shard size of {shard_size} cuts these "
        "requests differently: rejoin it with the shard size it started with, or use a new run id",
    )


def held_run(
    cloud: Cloud,
    run_id: str,
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
    *,
    shard_size: int,
    dedupe: bool = False,
    cache: bool = False,
    schema: Schema | None = None,
    controls: Controls = NO_CONTROLS,
    dest: str = "",
    fallback_tier: str | None = None,
) -> tuple[Ledger, int, list[Shard]] | None:
    """The run starting ``lines`` under ``run_id`` would rejoin (a plan's question), how
    many of its keys the cache answered, and its shards not finished yet; read-only. ``None``
    if the id holds no run. ``fallback_tier``: compared with the run's unless ``None``.

    Raises:
        InvalidRequestError: the id holds another run (other requests, model, shard size or
            fallback tier): starting these would be refused, with the same message.
    """
    check_run_id(run_id)
    cloud = replace(cloud, staging=cloud.staging.keyed(controls.kms_key))
    ledger = read_ledger(cloud.staging, run_id)
    if ledger is None:
        return None
    if ledger.tasks:
        raise _other_run(
            run_id,
            f"run {run_id!r} was staged by {ledger.tasks} tasks: plan one task's part with "
            "task= (a vertexbatch.Task), or use a new run id",
        )
    cutter = Shards(lines, shard_size, job_limits(model, cloud.staging.limits), dedupe)
    # A plan takes no max_attempts: the run's own is checked, not a default's.
    staged = _check_rejoin(
        cloud,
        ledger,
        provider,
        model,
        ledger.max_attempts,
        shard_size,
        cutter,
        cache,
        None,
        schema,
        controls,
        dest,
        fallback_tier,
    )
    cached = sum(manifest.cached for manifest in staged)
    pending = [shard for shard in ledger.shards if read_done(cloud.staging, shard) is None]
    return ledger, cached, pending


def _check_rejoin(
    cloud: Cloud,
    ledger: Ledger,
    provider: Provider,
    model: str,
    max_attempts: int,
    shard_size: int,
    cutter: Shards,
    cache: bool = False,
    cache_ttl: timedelta | None = None,
    schema: Schema | None = None,
    controls: Controls = NO_CONTROLS,
    dest: str = "",
    fallback_tier: str | None = None,
) -> list[Manifest]:
    """Raise unless these rows are the staged run's rows; reads only, stages nothing. Returns
    the shards' manifests.

    The error says what differs: the provider, the model, the attempts, the fallback's tier
    (unless ``None``: a plan's question), how the requests are cut into shards, or the
    requests themselves.
    """
    run = ledger.id
    if ledger.provider != provider:
        raise _other_run(
            run,
            f"run {run!r} was staged with {PROVIDERS[ledger.provider].title} requests, not "
            f"{PROVIDERS[provider].title} ones: use a new run id",
        )
    if ledger.model != model:
        raise _other_run(
            run,
            f"run {run!r} was staged for model {ledger.model!r}, not {model!r}: use a new run id",
        )
    if ledger.max_attempts != max_attempts:
        raise _other_run(
            run,
            f"run {run!r} was staged with at most {ledger.max_attempts} attempts per key, not "
            f"{max_attempts}: rejoin it with {ledger.max_attempts}, or use a new run id",
        )
    if ledger.controls != controls:
        raise _other_run(
            run,
            f"run {run!r} was started with {ledger.controls.difference(controls)}: rejoin it "
            "with the job controls it started with, or use a new run id",
        )
    if ledger.dest != dest:
        raise _other_run(run, other_sink(run, ledger.dest, dest))
    if fallback_tier is not None and ledger.fallback_tier != fallback_tier:
        raise _other_run(
            run,
            f"run {run!r} was started with fallback_tier={ledger.fallback_tier!r}, not "
            f"{fallback_tier!r}: rejoin it with {ledger.fallback_tier!r}, or use a new run id",
        )
    # The ledger does not say whether the run used the answer cache; its first shard does.
    first = read_manifest(cloud.staging, ledger.shards[0].id)
    if first is not None and first.cache != cache:
        raise _other_run(
            run,
            f"run {run!r} was staged with cache={first.cache}, not cache={cache}: rejoin it "
            f"with cache={first.cache}, or use a new run id",
        )
    last = len(ledger.shards) - 1
    manifests: list[Manifest] = []
    for index, shard in enumerate(ledger.shards):
        if not cutter.more():
            raise _other_run(run)
        lines, amend = _from_cache(
            cloud, shard.id, provider, model, cutter.take(), cache, cache_ttl, schema
        )
        given = replace(
            measure(
                shard.id,
                provider,
                model,
                lines,
                job_limits(model, cloud.staging.limits),
                run_origin(run),
            ),
            controls=controls,
            dest=dest,
        )
        if amend is not None:
            given = amend(given)
        staged = read_manifest(cloud.staging, shard.id)
        if staged is not None and staged.claims_same(given):
            manifests.append(staged)
            continue
        # More rows than a full staged shard, or a full new shard smaller than the staged one:
        # the same requests cut at another size.
        if (given.key_count > shard.keys and index < last) or (
            given.key_count < shard.keys and given.key_count == shard_size
        ):
            raise _other_cut(ledger, shard_size)
        raise _other_run(run)
    if cutter.more():
        raise _other_run(run)
    return manifests


def _from_cache(
    cloud: Cloud,
    shard_id: str,
    provider: Provider,
    model: str,
    lines: Iterator[StagedLine],
    cache: bool,
    ttl: timedelta | None,
    schema: Schema | None = None,
) -> tuple[Iterator[StagedLine], Callable[[Manifest], Manifest] | None]:
    """A shard's lines, with what the answer cache holds taken out when ``cache``, and the
    manifest's completion (the cached answers, the answer schema)."""
    if not cache:
        return lines, with_schema(None, schema)
    held, amend = answer_from_cache(cloud.staging, shard_id, provider, model, lines, ttl)
    return iter(held), with_schema(amend, schema)


def open_run(cloud: Cloud, run_id: str) -> Run:
    """Rebuild a run from its ledger in GCS.

    Raises:
        InvalidRequestError: there is no run under this id (``field == "run"``), or the id is
            invalid or its ledger unreadable (``field == "id"``).
    """
    check_run_id(run_id)
    ledger = read_ledger(cloud.staging, run_id)
    if ledger is None:
        task = any_task(cloud.staging, run_id)  # staged by tasks, not all registered yet
        if task is not None:
            return Run(cloud, task.placeholder(), waiting=True)
        uri = cloud.staging.folder(run_id).uri("run.json")
        raise InvalidRequestError(f"no run under id {run_id!r} (no {uri})", field="run")
    return Run(cloud, ledger)
