"""The registry of a run staged by tasks: one create-only record per task, and the check that
makes the run's ledger once every task has registered.

::

    PREFIX/RUN/tasks/t3.json   task 3's record: the run's settings (the fallback's tier too),
                               the count of tasks, the shards it staged (ids and key
                               counts), its keys file's MD5, and for a share of files their
                               listing's digest (``listing``)
    PREFIX/RUN/tasks/t3.keys   task 3's keys: one line per key, ``<digest> <key as JSON>``,
                               sorted by digest (the key digest every staged line carries)
    PREFIX/RUN/tasks/snapshot.json  a run from a BigQuery table: the table, its columns and the
                               snapshot time every task reads it at (``_bigquery.share``)

Each task writes only its own two objects, create-only, so tasks never read-modify-write a
shared object and never wait on each other. The run's ledger (``run.json``) is written by the
first ``advance`` (any process, a task included) that finds all ``count`` records: it checks the
records agree (their listings too: a prefix changed between two tasks' listings is refused) and
that no key is in two tasks, then writes the ledger create-only (its content follows from the
records alone, so racing writers write the same). Until then no job exists.

The keys check is a k-way merge of the tasks' sorted keys files, streamed: memory is one read
range (256 KiB, one more read ahead) per task, whatever the number of keys; the time is one
pass over every key's line. A digest in two files is a duplicate key, named with both tasks.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from .._errors import InvalidRequestError, damaged_record
from .._gcs.staging import Staging
from .._providers import job_rows
from .._staged.usage import TierUsage, parse_usage, summed, usage_json
from .._values import PROVIDER_NAMES, Provider
from .._vertex.controls import NO_CONTROLS, Controls
from .._vertex.tiers import TIERS
from .ledger import MAX_ATTEMPTS, Ledger, Shard, is_dataset, read_ledger, write_ledger

__all__ = [
    "KEYS_CHUNK",
    "TaskRecord",
    "Waiting",
    "any_task",
    "assemble",
    "check_unique_keys",
    "difference",
    "keys_name",
    "listing_changed",
    "read_task",
    "record_name",
    "registered",
    "shard_id",
    "sink_of",
    "write_task",
]

_FORMAT = "vertexbatch-run-task/1"
_FOLDER = "tasks"
# The range each keys file is read in by the merge: memory per task, whatever its keys.
KEYS_CHUNK = 256 * 1024
_NAME = re.compile(r"t(0|[1-9]\d*)\.json")


def shard_id(run_id: str, index: int, count: int, number: int) -> str:
    """Task ``index``'s shard ``number`` of ``count`` tasks: ``RUN.s{number*count+index}``.

    Interleaved, so the ids of different tasks never collide and a run of balanced tasks uses
    every shard number below its total with no gap (a run of one task numbers as an untasked
    run does).
    """
    return f"{run_id}.s{number * count + index}"


def record_name(staging: Staging, run_id: str, index: int) -> str:
    return staging.folder(run_id).name(f"{_FOLDER}/t{index}.json")


def keys_name(staging: Staging, run_id: str, index: int) -> str:
    return staging.folder(run_id).name(f"{_FOLDER}/t{index}.keys")


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """What one task registered: the run's settings as it was given them, and its shards."""

    run: str
    index: int
    count: int
    provider: Provider
    model: str
    max_attempts: int
    shard_size: int
    cache: bool
    controls: Controls
    shards: tuple[Shard, ...]
    keys_md5: str
    dest: str = ""  # the run's BigQuery dataset ("": GCS), as the ledger records it
    listing: str = ""  # the digest of the listing of files its share was cut from ("": none)
    fallback_tier: str = "standard"  # the online fallback's price tier, as the ledger records it
    # What its canary used (``_submission.canary``), summed into the ledger's; not compared.
    canary: TierUsage = field(default_factory=dict, compare=False, hash=False)

    @property
    def keys(self) -> int:
        return sum(s.keys for s in self.shards)

    def placeholder(self) -> Ledger:
        """The ledger a run waiting for its tasks stands on: the run's settings, no shards."""
        return Ledger(
            self.run,
            self.provider,
            self.model,
            self.max_attempts,
            (),
            True,
            self.controls,
            dest=self.dest,
            tasks=self.count,
            fallback_tier=self.fallback_tier,
        )

    def settings(self) -> tuple[object, ...]:
        """What every task of one run must agree on."""
        return (
            self.count,
            self.provider,
            self.model,
            self.max_attempts,
            self.shard_size,
            self.cache,
            self.controls,
            self.dest,
            self.fallback_tier,
        )

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "format": _FORMAT,
            "run": self.run,
            "task": self.index,
            "tasks": self.count,
            "provider": self.provider,
            "model": self.model,
            "max_attempts": self.max_attempts,
            "shard_size": self.shard_size,
            "cache": self.cache,
            "shards": [{"id": s.id, "keys": s.keys} for s in self.shards],
            "keys_md5": self.keys_md5,
        }
        if not self.controls.empty:
            data["controls"] = self.controls.to_json()
        if self.dest:
            data["dest"] = self.dest
        if self.listing:
            data["listing"] = self.listing
        if self.fallback_tier != "standard":
            data["fallback_tier"] = self.fallback_tier
        if self.canary:
            data["canary"] = usage_json(self.canary)
        return data

    @classmethod
    def from_json(cls, data: object, run_id: str, index: int, where: str) -> TaskRecord:
        """A task record read from GCS, every field checked: it may have been edited."""

        def bad(why: str) -> InvalidRequestError:
            return damaged_record(where, "task record", why)

        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise bad("not an object of its format")
        if data.get("run") != run_id or data.get("task") != index:
            raise bad("its 'run' or 'task' is not this one's")
        count = data.get("tasks")
        if type(count) is not int or not index < count:
            raise bad("'tasks' is not a count above its index")
        provider = data.get("provider")
        if provider not in PROVIDER_NAMES:
            raise bad("'provider' is neither 'anthropic' nor 'google'")
        model, attempts, size = data.get("model"), data.get("max_attempts"), data.get("shard_size")
        if not isinstance(model, str) or not model:
            raise bad("'model' is not a model id")
        if type(attempts) is not int or not 1 <= attempts <= MAX_ATTEMPTS:
            raise bad(f"'max_attempts' is not a whole number from 1 to {MAX_ATTEMPTS}")
        if type(size) is not int or size < 1 or type(data.get("cache")) is not bool:
            raise bad("'shard_size' or 'cache' is not what a task writes")
        listed, md5 = data.get("shards"), data.get("keys_md5")
        if not isinstance(listed, list) or not isinstance(md5, str):
            raise bad("'shards' or 'keys_md5' is missing")
        shards = []
        most = job_rows(model)  # one job's rows: the model's (``_providers.job_limits``)
        for number, entry in enumerate(listed):
            expected = shard_id(run_id, index, count, number)
            if (
                not isinstance(entry, dict)
                or entry.get("id") != expected
                or type(entry.get("keys")) is not int
                or not 1 <= entry["keys"] <= most
            ):
                raise bad(f"shard {number} is not {{'id': '{expected}', 'keys': 1-{most}}}")
            shards.append(Shard(entry["id"], entry["keys"]))
        try:
            controls = Controls.from_json(data["controls"]) if "controls" in data else NO_CONTROLS
        except ValueError as exc:
            raise bad(str(exc)) from None
        dest = data.get("dest", "")
        if "dest" in data and not is_dataset(dest):
            raise bad("'dest' is not a bq://PROJECT.DATASET vertexbatch wrote")
        listing = data.get("listing", "")
        if "listing" in data and (not isinstance(listing, str) or len(listing) != 32):
            raise bad("'listing' is not the MD5 digest of a listing of files")
        tier = data.get("fallback_tier", "standard")
        if tier not in TIERS or ("fallback_tier" in data and tier == "standard"):
            raise bad(f"'fallback_tier' is not one of {', '.join(TIERS[1:])}")
        canary = parse_usage(data.get("canary", {}), sum(s.keys for s in shards))
        if canary is None or ("canary" in data and not canary):
            raise bad("'canary' is not a canary's usage vertexbatch wrote")
        return cls(
            run_id, index, count, provider, model, attempts, size, data["cache"], controls,
            tuple(shards), md5, dest, listing, tier, canary,
        )  # fmt: skip


def _encoded(record: TaskRecord) -> bytes:
    return json.dumps(record.to_json(), sort_keys=True, indent=1).encode()  # as create_json


def read_task(staging: Staging, run_id: str, index: int) -> TaskRecord | None:
    """Task ``index``'s record, ``None`` until it has registered."""
    name = record_name(staging, run_id, index)
    data = staging.read_json(name)
    if data is None:
        return None
    return TaskRecord.from_json(data, run_id, index, f"gs://{staging.folder(run_id).bucket}/{name}")


def write_task(staging: Staging, record: TaskRecord) -> TaskRecord | None:
    """Register a task create-only; the record already there if another attempt of the task
    registered first (``None`` when this call wrote it). A canary's record that alone would
    take it past ``staging.limits.record_bytes`` is left out."""
    if record.canary and len(_encoded(record)) > staging.limits.record_bytes:
        record = replace(record, canary={})
    if staging.create_json(record_name(staging, record.run, record.index), record.to_json()):
        return None
    return read_task(staging, record.run, record.index)


def any_task(staging: Staging, run_id: str) -> TaskRecord | None:
    """The record of the first task that registered under ``run_id``, ``None`` if none did."""
    indexes = registered(staging, run_id)
    return read_task(staging, run_id, indexes[0]) if indexes else None


def registered(staging: Staging, run_id: str) -> list[int]:
    """The indexes of the tasks that registered under ``run_id`` (one listing), in order."""
    prefix = staging.folder(run_id).name(f"{_FOLDER}/")
    found = []
    for name in staging.list_generations(prefix):
        match = _NAME.fullmatch(name[len(prefix) :])
        if match is not None:
            found.append(int(match[1]))
    return sorted(found)


@dataclass(frozen=True, slots=True)
class Waiting:
    """A tasked run whose ledger is not made yet: the tasks that have not registered (none
    when every task has, and a look left the keys check to the next ``advance``)."""

    first: TaskRecord
    missing: tuple[int, ...]
    keys: int  # the keys of the tasks that registered
    shards: tuple[Shard, ...]  # and the shards they staged, in order


def assemble(
    staging: Staging, run_id: str, *, write: bool, check: bool = True
) -> Ledger | Waiting | None:
    """The run's ledger: read, or made from its task records once every task has registered
    (and written create-only when ``write``); ``Waiting`` before; ``None`` if the id holds
    neither a ledger nor a task record.

    Without ``check`` (``status``: read-only), a run whose every task registered but whose
    ledger is not written yet is ``Waiting`` with no task missing, its keys counted from the
    records: the keys check (one pass over every key) is left to the ``advance`` that makes the
    ledger, so a look costs one ledger read, one listing and a read per task record.

    Raises:
        InvalidRequestError: the records disagree on the run's settings (naming two tasks), a
            key is in two tasks' requests (naming it and both), or the ledger of every task's
            shards would be over the size a ledger may be.
    """
    ledger = read_ledger(staging, run_id)
    if ledger is not None:
        return ledger
    indexes = registered(staging, run_id)
    if not indexes:
        return None
    first = read_task(staging, run_id, indexes[0])
    if first is None:  # listed, then gone: removed by hand
        return None
    records = {first.index: first}
    for index in indexes[1:]:
        if index >= first.count:
            raise _disagree(run_id, first, index, f"task {index} is past the {first.count} tasks")
        record = read_task(staging, run_id, index)
        if record is None:
            continue
        if record.settings() != first.settings():
            raise _disagree(run_id, first, index, difference(first, record))
        if record.listing and first.listing and record.listing != first.listing:
            raise listing_changed(run_id, first.index, index)
        records[index] = record
    missing = tuple(i for i in range(first.count) if i not in records)
    if missing or not check:
        staged = _in_order(s for r in records.values() for s in r.shards)
        return Waiting(first, missing, sum(r.keys for r in records.values()), staged)
    ordered = [records[i] for i in range(first.count)]
    check_unique_keys(staging, run_id, ordered)
    shards = _in_order(s for r in ordered for s in r.shards)
    if not shards:
        raise InvalidRequestError(
            f"no requests for run {run_id!r}: every one of its {first.count} tasks registered "
            "an empty part",
            field="requests",
        )
    ledger = Ledger(
        run_id,
        first.provider,
        first.model,
        first.max_attempts,
        tuple(shards),
        True,
        first.controls,
        dest=first.dest,
        tasks=first.count,
        fallback_tier=first.fallback_tier,
        canary=summed(r.canary for r in ordered),
    )
    if write and not write_ledger(staging, ledger):
        raise InvalidRequestError(
            f"run id {run_id!r} holds a ledger other than its tasks' records make: it was "
            "edited; nothing was submitted",
            field="id",
        )
    return ledger


def _in_order(shards: Iterable[Shard]) -> tuple[Shard, ...]:
    """Shards by their number (``RUN.sN``)."""
    return tuple(sorted(shards, key=lambda s: int(s.id.rpartition(".s")[2])))


def _disagree(run_id: str, first: TaskRecord, index: int, why: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"tasks {first.index} and {index} of run {run_id!r} were started differently ({why}): "
        "every task of a run takes the same model, settings and task count; nothing was "
        "submitted",
        field="task",
    )


def listing_changed(
    run_id: str, one: int, other: int, retried: bool = False
) -> InvalidRequestError:
    """The refusal of tasks whose shares were cut from different listings of their files."""
    which = f"task {one}'s first attempt and its retry" if retried else f"tasks {one} and {other}"
    return InvalidRequestError(
        f"the prefix changed while the tasks listed it: {which} of run {run_id!r} listed "
        "different files, so a file could be in two shares or in none; start the run again "
        "under a new run id once the prefix holds every file; no job was created",
        field="requests",
    )


def difference(one: TaskRecord, other: TaskRecord) -> str:
    """The first setting two task records differ in, in words."""
    names = (
        "count", "provider", "model", "max_attempts", "shard_size", "cache", "controls", "dest",
        "fallback_tier",
    )  # fmt: skip
    for name, a, b in zip(names, one.settings(), other.settings(), strict=True):
        if a != b:
            shown = (a, b) if name != "controls" else ("its controls", "others")
            if name == "dest":
                return f"{sink_of(str(a))} against {sink_of(str(b))}"
            return f"{name} {shown[0]!r} against {shown[1]!r}"
    return "their settings"  # pragma: no cover - settings() differed


def sink_of(dest: str) -> str:
    """A run's sink in words: its dataset, or GCS."""
    return f"dest {dest!r}" if dest else "the GCS output prefix (no dest)"


def _lines(staging: Staging, run_id: str, record: TaskRecord) -> Iterator[tuple[bytes, int, bytes]]:
    """Task ``record``'s keys file as (digest, task, line), checked sorted and whole."""
    name = keys_name(staging, run_id, record.index)
    where = f"gs://{staging.folder(run_id).bucket}/{name}"
    previous = b""
    count = 0
    for line in staging.read_lines(name):
        if not line:
            continue
        digest = line.partition(b" ")[0]
        if digest <= previous:
            raise InvalidRequestError(
                f"{where} is not sorted by digest: it was damaged or edited", field="staging"
            )
        previous = digest
        count += 1
        yield digest, record.index, line
    if count != record.keys:
        raise InvalidRequestError(
            f"{where} holds {count} keys, not the {record.keys} task {record.index} staged: it "
            "was damaged or edited",
            field="staging",
        )


def check_unique_keys(staging: Staging, run_id: str, records: Sequence[TaskRecord]) -> None:
    """Raise if a key is in two tasks' requests: a streamed merge of their sorted keys files."""
    reading = staging.with_sizes(read_chunk=KEYS_CHUNK)
    streams = [_lines(reading, run_id, r) for r in records if r.shards]
    last: tuple[bytes, int, bytes] | None = None
    for entry in heapq.merge(*streams):
        if last is not None and entry[0] == last[0]:
            key = json.loads(entry[2].partition(b" ")[2])
            raise InvalidRequestError(
                f"request key {key!r} is in the requests of both task {last[1]} and task "
                f"{entry[1]} of run {run_id!r}: keys must be unique across a run's tasks; no "
                "job was created (start the run again under a new id with each key in one task)",
                field="key",
            )
        last = entry
