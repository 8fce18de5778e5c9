"""Starting one task's part of a run: stage its shards, register them, and step if it can.

Task ``i`` of ``N`` stages its shards create-only as ``RUN.s{n*N+i}`` (``registry.shard_id``),
so tasks never collide, then writes its keys file and its record (``_runs.registry``),
create-only, and takes a step: the step that finds every task registered makes the run's
ledger; before that it creates nothing. A task never waits for another.

A task's later attempt (the same index) adopts what an earlier one staged: each shard staged
with the same rows is adopted by the identity protocol, and once the task is registered its
rows are checked against its record, read-only. Other rows are refused, as a run id with other
rows is.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import timedelta

from .._bigquery.share import share_restriction
from .._bigquery.source import BigQuerySource
from .._cache.submission import record_cached
from .._cloud import Cloud
from .._errors import InvalidRequestError
from .._gcs.staging import Staging
from .._gcs.upload import md5_of
from .._providers import job_limits
from .._requests.lines import StagedLine
from .._rules import Limits
from .._schemas.check import Schema
from .._staged.manifest import Manifest, read_manifest, run_origin
from .._staged.usage import TierUsage
from .._staged.write import stage
from .._values import Provider
from .._vertex.controls import NO_CONTROLS, Controls
from .done import read_done
from .ledger import Ledger, Shard, check_run_id, encoded_size, read_ledger
from .registry import (
    TaskRecord,
    any_task,
    difference,
    keys_name,
    listing_changed,
    read_task,
    shard_id,
    sink_of,
    write_task,
)
from .run import Run
from .shards import Shards
from .start import _check_rejoin, _from_cache, check_numbers
from .tasks import Task

__all__ = ["existing_task", "start_task", "table_share"]

logger = logging.getLogger("vertexbatch")


class _Keys:
    """The keys of the lines streamed through, as ``<digest> <key as JSON>`` lines (each with
    its newline: sorted, they are the object's bytes as they are held)."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def through(self, lines: Iterable[StagedLine]) -> Iterator[StagedLine]:
        for line in lines:
            self.lines.append(f"{line.digest} {json.dumps(line.key)}\n".encode())
            yield line

    def write(self, staging: Staging, name: str) -> str:
        """Write them sorted by digest, create-only; the MD5 of what this task's rows make."""
        # The newline sorts below any character of a line, so the order is the lines' own.
        self.lines.sort()
        md5 = md5_of(self.lines)
        if not staging.create(name, self.lines, "text/plain", md5=md5) and staging.md5(name) != md5:
            raise InvalidRequestError(
                f"{name} holds other keys than this task's requests: another attempt of the "
                "task staged other requests; nothing was changed",
                field="id",
            )
        return md5


def table_share(source: BigQuerySource, task: Task) -> str:
    """The SQL condition that selects ``task``'s share of ``source``'s rows: what the task's read
    session gives BigQuery as its row restriction when ``source`` is its requests (``""`` for
    one task). Every row is in exactly one task's share, by a stable hash of its key; use it in
    a query of your own (``SELECT ... FROM T WHERE <share>``) to see or count a share.

    Raises:
        InvalidRequestError: ``source`` is not a ``BigQuerySource`` or ``task`` not a ``Task``.
    """
    if not isinstance(source, BigQuerySource):
        raise InvalidRequestError(
            f"source must be a vertexbatch.BigQuerySource, got {type(source).__name__}",
            field="requests",
        )
    if not isinstance(task, Task):
        raise InvalidRequestError(
            f"task must be a vertexbatch.Task, got {type(task).__name__}", field="task"
        )
    return share_restriction(source.key_column, task.index, task.count)


class _LedgerFloor:
    """The smallest records a task's own shards imply: its task record lists them, and so does
    the run's ledger (at their ids ``RUN.s{n*N+i}``, whatever the other tasks stage), each read
    back whole. Exact arithmetic on the encoding (as ``ledger.ledger_size``): every shard's
    entry costs the same bytes in either, but for its digits."""

    def __init__(self, wanted: TaskRecord, limits: Limits) -> None:
        def sizes(n: int) -> tuple[int, int]:
            listed = tuple(Shard(f"{wanted.run}.s{i}", 1) for i in range(n))  # 2 digits each
            ledger = encoded_size(replace(wanted.placeholder(), shards=listed))
            record = replace(wanted, shards=listed, keys_md5="0" * 32).to_json()
            return ledger, len(json.dumps(record, sort_keys=True, indent=1).encode())

        one, two = sizes(1), sizes(2)
        # (fixed bytes, bytes per entry but its digits) of the ledger and of the record; the
        # first entry has no comma, the others one.
        self._forms = [(a - (b - a - 2) - 2, b - a - 2) for a, b in zip(one, two, strict=True)]
        self._wanted = wanted
        self._limit = limits.record_bytes
        self.shards = 0
        self._digits = 0  # of this task's shards so far: their numbers' and key counts'

    def _digits_of(self, number: int, keys: int) -> int:
        position = number * self._wanted.count + self._wanted.index
        return len(str(position)) + len(str(keys))

    def add(self, keys: int) -> None:
        """Count this task's next shard, of ``keys`` keys."""
        self._digits += self._digits_of(self.shards, keys)
        self.shards += 1

    def check(self, more: int, keys: int, last: int, why: str, then: str) -> None:
        """Raise if this task's shards so far and ``more`` more (each of at least ``keys``
        keys, the last of at least ``last``) make its record or the run's ledger over the
        limit."""
        digits = self._digits + sum(
            self._digits_of(self.shards + n, keys if n < more - 1 else last) for n in range(more)
        )
        total = self.shards + more
        size = max(fixed + total * entry for fixed, entry in self._forms) + digits
        if size <= self._limit:
            return
        wanted = self._wanted
        raise InvalidRequestError(
            f"{why}: this task's record of them, and run {wanted.run!r}'s ledger listing them "
            f"({wanted.run}.s{{n*{wanted.count}+{wanted.index}}}), would be at least {size:,} "
            f"bytes, over the {self._limit:,} a record may be, as each is read back whole; use "
            f"a larger shard_size than {wanted.shard_size:,} (the ledger lists every task's "
            "shards, so more tasks make it no smaller; only a larger share for this task than "
            f"for the others does){then}",
            field="shard_size",
        )


def start_task(
    cloud: Cloud,
    run_id: str,
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
    *,
    task: Task,
    shard_size: int,
    max_attempts: int,
    dedupe: bool = False,
    cache: bool = False,
    cache_ttl: timedelta | None = None,
    schema: Schema | None = None,
    controls: Controls = NO_CONTROLS,
    dest: str = "",
    count: int | None = None,
    listing: str = "",
    fallback_tier: str = "standard",
    canary: TierUsage | None = None,
) -> Run:
    """Stage task ``task``'s part of run ``run_id`` (its ``lines``, possibly none) and register
    it, or rejoin it; then take a step, which creates jobs only once every task registered.

    ``dest``: the run's BigQuery dataset (checked), in the task's record; a task given another
    sink than a registered task's (or the ledger's) is refused before it stages, as is another
    ``fallback_tier`` than a registered task's (by ``assemble``). ``count``: the
    number of this task's requests when known before they are read (a list), so that a part
    whose own shards would make the run's ledger too large to read back is refused before any
    cloud call; a stream's is refused before the shard that would, is staged. ``canary``: what
    the task's canary used (``_submission.canary``), in its record, summed into the ledger."""
    check_run_id(run_id)
    if not isinstance(task, Task):
        raise InvalidRequestError(
            f"task must be a vertexbatch.Task, got {type(task).__name__}", field="task"
        )
    check_numbers(shard_size, max_attempts)
    cloud = replace(cloud, staging=cloud.staging.keyed(controls.kms_key))
    staging = cloud.staging
    wanted = TaskRecord(
        run_id, task.index, task.count, provider, model, max_attempts, shard_size, cache,
        controls, (), "", dest, listing, fallback_tier,
    )  # fmt: skip
    floor = _LedgerFloor(wanted, staging.limits)
    if count:  # the fewest shards these requests make, each of its fewest keys
        more = -(-count // shard_size)
        exact = not dedupe and not cache  # else a shard may list fewer keys than its rows
        floor.check(
            more,
            shard_size if exact else 1,
            count - (more - 1) * shard_size if exact else 1,
            f"{task}: {count:,} requests in shards of {shard_size:,} make at least {more:,} shards",
            "; nothing was staged",
        )
    keys = _Keys()
    # The first request is checked before any cloud call.
    cutter = Shards(keys.through(lines), shard_size, job_limits(model, staging.limits), dedupe)
    ledger = read_ledger(staging, run_id)
    _check_count(ledger, run_id, task)
    record = read_task(staging, run_id, task.index)
    if record is None:
        _check_sink(staging, ledger, run_id, task.index, dest, fallback_tier)
        staged = replace(wanted, canary=canary or {})  # what its canary used, if it sent one
        record = _stage(cloud, staged, cutter, keys, cache_ttl, schema, floor)
    else:
        _check_rejoin_task(cloud, record, wanted, cutter, cache, cache_ttl, schema)
    logger.info(
        "run %s: %s (attempt %d) registered %d shards, %d keys",
        run_id,
        task,
        task.attempt,
        len(record.shards),
        record.keys,
    )
    run = Run(cloud, ledger or record.placeholder(), waiting=ledger is None)
    run.advance()
    return run


def existing_task(
    cloud: Cloud,
    run_id: str,
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
    *,
    task: Task,
    shard_size: int,
    dedupe: bool = False,
    cache: bool = False,
    schema: Schema | None = None,
    controls: Controls = NO_CONTROLS,
    dest: str = "",
    listing: str = "",
    fallback_tier: str | None = None,
) -> tuple[Ledger, int, list[Shard]] | None:
    """A plan's question for one task (``held_run``'s): the part of the run this task already
    registered with these rows (a ledger of its shards), how many keys the cache answered, and
    its shards not finished yet; read-only. ``None`` if the task has not registered.
    ``fallback_tier``: compared with the run's unless ``None``.

    Raises:
        InvalidRequestError: starting these rows as this task would be refused (the same
            message).
    """
    check_run_id(run_id)
    if not isinstance(task, Task):
        raise InvalidRequestError(
            f"task must be a vertexbatch.Task, got {type(task).__name__}", field="task"
        )
    cloud = replace(cloud, staging=cloud.staging.keyed(controls.kms_key))
    staging = cloud.staging
    ledger = read_ledger(staging, run_id)
    _check_count(ledger, run_id, task)
    record = read_task(staging, run_id, task.index)
    if record is None:  # what starting it would refuse before staging: another sink
        _check_sink(staging, ledger, run_id, task.index, dest, fallback_tier)
        return None
    cutter = Shards(lines, shard_size, job_limits(model, staging.limits), dedupe)
    wanted = TaskRecord(
        run_id, task.index, task.count, provider, model, record.max_attempts, shard_size, cache,
        controls, (), "", dest, listing, fallback_tier or record.fallback_tier,
    )  # fmt: skip
    staged = _check_rejoin_task(cloud, record, wanted, cutter, cache, None, schema)
    pending = [shard for shard in record.shards if read_done(staging, shard) is None]
    part = replace(record.placeholder(), shards=record.shards)
    return part, sum(manifest.cached for manifest in staged), pending


def _check_count(ledger: Ledger | None, run_id: str, task: Task) -> None:
    """Raise if the run's ledger was made by another number of tasks (or by one process)."""
    if ledger is not None and ledger.tasks != task.count:
        how = f"by {ledger.tasks} tasks" if ledger.tasks else "by one process"
        raise InvalidRequestError(
            f"run {run_id!r} was staged {how}, not by {task.count}: use a new run id, or "
            "rejoin it as it was started; nothing staged was changed",
            field="task",
        )


def _check_sink(
    staging: Staging,
    ledger: Ledger | None,
    run_id: str,
    index: int,
    dest: str,
    tier: str | None = None,
) -> None:
    """Raise if the run's ledger, or a task that registered, writes to another sink than
    ``dest`` (or asks the fallback for another tier than ``tier``, unless ``None``): before task
    ``index`` stages anything. (Two tasks registering at once are checked by ``assemble``.)"""
    if ledger is not None:
        other, whose, their = ledger.dest, "the run's ledger", ledger.fallback_tier
    else:
        first = any_task(staging, run_id)
        if first is None or first.index == index:
            return
        other, whose, their = first.dest, f"task {first.index}", first.fallback_tier
    if tier is not None and their != tier:
        raise InvalidRequestError(
            f"task {index} of run {run_id!r} was given fallback_tier={tier!r}, but {whose} "
            f"says {their!r}: every task of a run asks the fallback for the same tier; nothing "
            "was staged",
            field="fallback_tier",
        )
    if other != dest:
        raise InvalidRequestError(
            f"task {index} of run {run_id!r} writes to {sink_of(dest)}, but {whose} to "
            f"{sink_of(other)}: every task of a run writes to the same sink; nothing was staged",
            field="dest",
        )


def _stage(
    cloud: Cloud,
    wanted: TaskRecord,
    cutter: Shards,
    keys: _Keys,
    cache_ttl: timedelta | None,
    schema: Schema | None,
    floor: _LedgerFloor,
) -> TaskRecord:
    """Stage the task's shards (adopting those an earlier attempt staged), write its keys and
    its record, create-only. Returns the record as registered."""
    staging = cloud.staging
    run_id, origin = wanted.run, run_origin(wanted.run)
    shards: list[Shard] = []
    while cutter.more():
        # A stream's length is known only as it is cut: refused before the shard the ledger
        # cannot hold is staged (and long before the ledger would be made).
        floor.check(
            1, 1, 1, f"task {wanted.index} of {wanted.count} has more than {len(shards):,} shards",
            f" and a new run id (its first {len(shards):,} shards were staged before the "
            "number of requests was known: pass a list to have it checked first)",
        )  # fmt: skip
        sid = shard_id(run_id, wanted.index, wanted.count, len(shards))
        lines, amend = _from_cache(
            cloud, sid, wanted.provider, wanted.model, cutter.take(), wanted.cache, cache_ttl,
            schema,
        )  # fmt: skip
        try:
            manifest = stage(
                staging, sid, wanted.provider, wanted.model, lines, origin, amend,
                wanted.controls, wanted.dest,
            )  # fmt: skip
        except InvalidRequestError as exc:
            staged = read_manifest(staging, sid) if exc.field == "id" else None
            if exc.field != "id" or (staged is not None and staged.origin != origin):
                raise  # a bad line, or the id is someone else's: its own message says so
            raise _other_rows(wanted) from exc
        if not manifest.rows:
            record_cached(staging, manifest.spec(sid, staging.folder(sid)), manifest)
        shards.append(Shard(sid, manifest.key_count))
        floor.add(manifest.key_count)
    # An earlier attempt that staged more shards than these rows make had other rows.
    after = shard_id(run_id, wanted.index, wanted.count, len(shards))
    staged = read_manifest(staging, after)
    if staged is not None and staged.origin == origin:
        raise _other_rows(wanted)
    md5 = keys.write(staging, keys_name(staging, run_id, wanted.index))
    record = replace(wanted, shards=tuple(shards), keys_md5=md5)
    earlier = write_task(staging, record)
    if earlier is not None and earlier != record:
        raise _other_rows(wanted)
    return record


def _other_rows(wanted: TaskRecord) -> InvalidRequestError:
    return InvalidRequestError(
        f"task {wanted.index} of run {wanted.run!r} was staged before with other requests, "
        "model or shard size: a retried task must be given the same part of the run; use a "
        "new run id; nothing staged was changed",
        field="id",
    )


def _check_rejoin_task(
    cloud: Cloud,
    record: TaskRecord,
    wanted: TaskRecord,
    cutter: Shards,
    cache: bool,
    cache_ttl: timedelta | None,
    schema: Schema | None,
) -> list[Manifest]:
    """Raise unless these rows and settings are those the task registered (reads only);
    the manifests of its shards."""
    if record.settings() != wanted.settings():
        raise InvalidRequestError(
            f"task {wanted.index} of run {wanted.run!r} was registered with "
            f"{difference(record, wanted)}: rejoin it as it was started, or use a new run "
            "id; nothing staged was changed",
            field="id",
        )
    if record.listing and wanted.listing and record.listing != wanted.listing:
        raise listing_changed(wanted.run, wanted.index, wanted.index, retried=True)
    if not record.shards:
        if cutter.more():
            raise _other_rows(wanted)
        return []
    part = replace(record.placeholder(), shards=record.shards)
    try:
        return _check_rejoin(
            cloud, part, wanted.provider, wanted.model, wanted.max_attempts, wanted.shard_size,
            cutter, cache, cache_ttl, schema, wanted.controls, wanted.dest,
        )  # fmt: skip
    except InvalidRequestError as exc:
        raise _other_rows(wanted) from exc
