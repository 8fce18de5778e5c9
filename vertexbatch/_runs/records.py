"""A run step's view of its shards' records in GCS: one listing, and a cache of what was read.

A step needs, per shard, whether it is finished (``done.json``) and, for an unfinished one, its
attempts' ``manifest.json``, ``job.json`` and ``ended.json``. Reading them shard by shard costs
a few requests per shard (about 20 ms each on a loaded machine: minutes at tens of thousands of
shards). A step of ``ListedRecords`` instead makes:

- **one listing** of the run's shard folders (prefix ``PREFIX/RUN.s``, every page; on GCS
  ``matchGlob`` ``PREFIX/RUN.s*/*.json`` keeps it to the records at the folders' tops): it
  says which records exist and their generations, so an absent record costs nothing;
- **one read** of the run's progress record, a cache of what earlier steps read::

      PREFIX/RUN/progress.json   {"format": "vertexbatch-progress/1", "run": RUN,
                                  "done": {"<shard index>": "<generation> <counts> <usage> <day>"},
                                  "records": {"s0.r1/job.json": [<generation>, <record>]}}

  ``done`` holds each finished shard's outcome counts (in ``OUTCOME_ORDER``), its answers'
  usage per tier (``_runs.usage.encode_usage``) and the day they are priced on
  (``encode_day``) as of its ``done.json``'s generation (an entry without usage or without the
  day, written by an earlier version, is not used: the record is read again);
  ``records`` the records of unfinished shards' attempts that a step read (those of finished
  shards are dropped: a step never reads them);
- **a read of each record the listing shows at a generation the cache does not hold**: the
  records that changed since the step that last wrote the cache (a job recorded, ended, a
  shard finished, a manifest replaced), and an unfinished attempt's manifest only once it has
  a job or is about to get one (``RunJobs`` leaves a staged attempt with no job unread).

The per-shard records stay the source of truth: a cached value is used only for the
generation the listing shows now, and generations of an object only grow, so a stale or lost
cache costs reads, never a wrong answer. ``advance`` writes the cache when it learned
anything (create-only the first time, then replaced conditionally on the generation it read;
a writer that loses the race merges what the winner wrote, keeping the newer generation of
each entry, and tries again; one that keeps losing leaves it to the next step). ``status``
writes nothing. A progress record that is damaged is ignored (logged) and rewritten.

``Records`` reads each record from GCS when asked, as results passes do (they read every
shard's output anyway).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any

from .._errors import InvalidRequestError
from .._gcs.staging import Staging
from .._staged.manifest import MANIFEST, RECORD
from .done import DONE, OUTCOME_ORDER, Done, read_done
from .ledger import Shard
from .usage import decode_day, decode_usage, encode_day, encode_usage

__all__ = ["PROGRESS", "ListedRecords", "Records"]

logger = logging.getLogger("vertexbatch")

PROGRESS = "progress.json"
_FORMAT = "vertexbatch-progress/1"
_ENDED = "ended.json"  # ``_run_jobs.ENDED``, which imports this module
_LEAVES = (MANIFEST, RECORD, _ENDED, DONE)
# Characters GCS's matchGlob reads as patterns: a prefix holding one is listed without a glob.
_GLOB_SPECIALS = frozenset("*?[]{}\\,")
_SAVE_TRIES = 3
_DAMAGED = object()  # a stored progress record that is not JSON


class Records:
    """How a step reads its shards' records: each one from GCS, when asked."""

    #: Whether an absent record is known without a read (``ListedRecords``).
    lazy = False

    def __init__(self, staging: Staging) -> None:
        self.staging = staging
        self._staging = staging

    def listed(self, submission_id: str, leaf: str) -> bool:
        """Whether the record may exist (``True`` unless a listing says it does not)."""
        return True

    def read(self, submission_id: str, leaf: str) -> Any | None:
        """The record's JSON value, ``None`` if it does not exist."""
        return self._staging.read_json(self._staging.folder(submission_id).name(leaf))

    def done(self, shard: Shard) -> Done | None:
        """The shard's record (outcome counts, usage), ``None`` while it is not finished."""
        return read_done(self._staging, shard)

    def save(self) -> None:
        """Keep what was read for the next step (nothing to keep here)."""


class ListedRecords(Records):
    """The records of one step of one run: listed once, read only when they changed."""

    lazy = True

    def __init__(self, staging: Staging, run_id: str, shards: int) -> None:
        super().__init__(staging)
        self._run = run_id
        self._name = staging.folder(run_id).name(PROGRESS)
        prefix = staging.folder(f"{run_id}.s").path
        glob = "" if _GLOB_SPECIALS & set(prefix) else f"{prefix}*/*.json"
        pattern = re.compile(re.escape(prefix) + r"(\d+)((?:\.r\d+)?)/([a-z]+\.json)")
        # submission id (without the run's part) -> leaf -> generation
        self._listed: dict[str, dict[str, int]] = {}
        for name, generation in staging.list_generations(prefix, glob).items():
            match = pattern.fullmatch(name)
            if match is None or match[3] not in _LEAVES or int(match[1]) >= shards:
                continue  # another run's folder sharing the prefix, output, online answers
            if match[1] != str(int(match[1])):
                continue  # "s01" is no shard's id
            self._listed.setdefault(f"s{match[1]}{match[2]}", {})[match[3]] = generation
        self._loaded, self._done, self._records = self._load()
        self._kept_done: dict[str, str] = {}
        self._kept: dict[str, list[Any]] = {}

    def _local(self, submission_id: str) -> str:
        return submission_id.removeprefix(f"{self._run}.")

    def _load(self) -> tuple[Any, dict[str, str], dict[str, list[Any]]]:
        """The cache as stored, and its entries (empty when missing or damaged)."""
        try:
            stored = self._staging.read_json(self._name)
        except InvalidRequestError:  # not JSON: the next advance deletes and rewrites it
            stored = _DAMAGED
        if stored is None:
            return None, {}, {}
        done = stored.get("done") if isinstance(stored, dict) else None
        records = stored.get("records") if isinstance(stored, dict) else None
        if (
            not isinstance(stored, dict)
            or stored.get("format") != _FORMAT
            or stored.get("run") != self._run
            or not isinstance(done, dict)
            or not all(isinstance(v, str) for v in done.values())
            or not isinstance(records, dict)
            or not all(
                isinstance(v, list) and len(v) == 2 and type(v[0]) is int for v in records.values()
            )
        ):
            logger.warning(
                "run %s: its progress record is not a vertexbatch progress record; ignoring it "
                "(the next advance rewrites it)",
                self._run,
            )
            return stored, {}, {}
        return stored, done, records

    def listed(self, submission_id: str, leaf: str) -> bool:
        return leaf in self._listed.get(self._local(submission_id), {})

    def read(self, submission_id: str, leaf: str) -> Any | None:
        local = self._local(submission_id)
        generation = self._listed.get(local, {}).get(leaf)
        if generation is None:
            return None
        key = f"{local}/{leaf}"
        cached = self._kept.get(key) or self._records.get(key)
        if cached is not None and cached[0] == generation:
            value = cached[1]
        else:
            value = super().read(submission_id, leaf)
            if value is None:  # deleted since the listing
                return None
        # Kept under the listed generation: what was read is that one or a later one, and a
        # later listing never shows an earlier generation again.
        self._kept[key] = [generation, value]
        return value

    def done(self, shard: Shard) -> Done | None:
        local = self._local(shard.id)
        generation = self._listed.get(local, {}).get(DONE)
        if generation is None:
            return None
        index = local.removeprefix("s")
        done = _cached_done(self._done.get(index, ""), generation, shard.keys)
        if done is None:
            done = super().done(shard)
            if done is None:  # deleted since the listing
                return None
        counts = " ".join(str(done.outcomes.get(name, 0)) for name in OUTCOME_ORDER)
        usage = f"{encode_usage(done.usage)} {encode_day(done.day)}"
        self._kept_done[index] = f"{generation} {counts} {usage}"
        return done

    def save(self) -> None:
        """Write what this step read for the next one, unless the cache holds it already."""
        staging = self._staging
        fresh = self._value(self._kept_done, self._kept)
        if fresh == self._loaded:
            return
        # A record is read back whole up to the size a ledger may be: a larger one could not be.
        if len(json.dumps(fresh, sort_keys=True, indent=1)) > staging.limits.record_bytes:
            logger.warning("run %s: its progress record would be too large to read", self._run)
            return
        if self._loaded is None and staging.create_json(self._name, fresh):
            return
        current = self._loaded
        if current is _DAMAGED:
            current = _read_or_none(staging, self._name)
        for _ in range(_SAVE_TRIES):
            if current is None:  # created meanwhile, or damaged and just deleted
                current = _read_or_none(staging, self._name)
                if current is None:
                    if staging.create_json(self._name, fresh):
                        return
                    continue
            merged = self._merged(fresh, current)
            if merged == current or staging.replace_json(self._name, merged, current):
                return
            current = _read_or_none(staging, self._name)
        logger.info("run %s: its progress record kept changing; the next step writes it", self._run)

    def _value(self, done: Mapping[str, str], records: Mapping[str, list[Any]]) -> dict[str, Any]:
        finished = {f"s{index}" for index in done}
        kept = {k: v for k, v in records.items() if _shard_of(k) not in finished}
        return {
            "format": _FORMAT,
            "run": self._run,
            "done": dict(sorted(done.items(), key=lambda item: int(item[0]))),
            "records": dict(sorted(kept.items())),
        }

    def _merged(self, fresh: dict[str, Any], current: Any) -> dict[str, Any]:
        """``fresh`` and what another step wrote, the newer generation of each entry winning."""
        if not isinstance(current, dict) or current.get("format") != _FORMAT:
            return fresh
        done = dict(fresh["done"])
        other_done = current.get("done")
        for index, entry in other_done.items() if isinstance(other_done, dict) else ():
            if isinstance(entry, str) and _generation(entry) > _generation(done.get(index, "")):
                done[index] = entry
        records = dict(fresh["records"])
        other = current.get("records")
        for key, entry in other.items() if isinstance(other, dict) else ():
            valid = isinstance(entry, list) and len(entry) == 2 and type(entry[0]) is int
            if valid and (key not in records or entry[0] > records[key][0]):
                records[key] = entry
        return self._value(done, records)


def _shard_of(key: str) -> str:
    """``s3`` of ``s3.r1/job.json``."""
    return key.partition("/")[0].partition(".")[0]


def _generation(entry: str) -> int:
    head = entry.partition(" ")[0]
    return int(head) if head.isdigit() else -1


def _cached_done(entry: str, generation: int, keys: int) -> Done | None:
    """The record a cached done entry holds, if it is of ``generation`` and whole (an entry
    of an earlier version, without usage or the day, is not: the record may hold what it left
    out)."""
    parts = entry.split(" ")
    width = 1 + len(OUTCOME_ORDER)
    if len(parts) != width + 2 or not all(p.isascii() and p.isdigit() for p in parts[:width]):
        return None
    if int(parts[0]) != generation:
        return None
    counts = dict(zip(OUTCOME_ORDER, map(int, parts[1:width]), strict=True))
    if sum(counts.values()) != keys:
        return None
    whole, usage = decode_usage(parts[width], keys)
    dated, day = decode_day(parts[width + 1])
    if not whole or not dated or (usage is None and day is not None):
        return None
    return Done({name: n for name, n in counts.items() if n}, usage, day)


def _read_or_none(staging: Staging, name: str) -> Any | None:
    """The stored cache; a damaged one is deleted, so that it can be written again."""
    try:
        return staging.read_json(name)
    except InvalidRequestError:
        staging.delete(name)
        return None
