"""A task's share of a BigQuery source table, and the one snapshot every task of a run reads.

**The share.** Task ``i`` of ``N`` reads only the rows whose key hashes to ``i``: its read session
carries the row restriction ``share_restriction`` gives, evaluated by BigQuery, so a task is sent
its own rows and no other's::

    IFNULL(MOD(MOD(FARM_FINGERPRINT(`KEY`), N) + N, N), 0) = i

``FARM_FINGERPRINT`` is BigQuery's documented stable 64-bit hash of a STRING (the same value on
every call, in every project); ``MOD`` of a negative fingerprint is negative, so ``+ N`` and a
second ``MOD`` bring it into ``0 … N-1`` without ``ABS`` (which overflows on the smallest
INT64). Every row's key has exactly one such value, so the shares of tasks ``0 … N-1`` are
disjoint and cover the table; a NULL key has none, so ``IFNULL`` puts its row in task 0's share,
where it is refused as a one-process read refuses it. The function depends on the key alone:
a retried task (the same index) reads the same rows.

**The snapshot.** Tasks start at different times; a table changed between two of them would
give a key in no share or in two. So every task of a run reads the table as it was at one
moment: the first task to read writes ``RUN/tasks/snapshot.json`` create-only (the table, the
two columns and the snapshot time, its clock's now), and every other task, and every later
attempt, loses that race and adopts the record, reading with
``table_modifiers.snapshot_time`` set to its time. A task given another table or other columns
than the record is refused, naming both, before it reads a row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from .._errors import InvalidRequestError, damaged_record
from .._gcs.staging import Staging
from .source import BigQuerySource, Share

__all__ = ["TableSnapshot", "read_snapshot", "run_snapshot", "share_restriction"]

_FORMAT = "vertexbatch-run-snapshot/1"


def _quoted(column: str) -> str:
    """A column name as a quoted identifier (a backtick or backslash escaped)."""
    return "`" + column.replace("\\", "\\\\").replace("`", "\\`") + "`"


def share_restriction(key_column: str, index: int, count: int) -> str:
    """The row restriction of task ``index``'s share of ``count`` (none for one task)."""
    if count == 1:
        return ""
    return (
        f"IFNULL(MOD(MOD(FARM_FINGERPRINT({_quoted(key_column)}), {count}) + {count}, {count}), "
        f"0) = {index}"
    )


@dataclass(frozen=True, slots=True)
class TableSnapshot:
    """What ``RUN/tasks/snapshot.json`` records: the table, its two columns, the time read."""

    table: str
    key_column: str
    request_column: str
    at: datetime

    @classmethod
    def of(cls, source: BigQuerySource, at: datetime) -> TableSnapshot:
        return cls(source.table, source.key_column, source.request_column, at)

    def reads(self) -> str:
        return (
            f"{self.table} (key_column {self.key_column!r}, request_column {self.request_column!r})"
        )

    def to_json(self, run_id: str) -> dict[str, object]:
        return {
            "format": _FORMAT,
            "run": run_id,
            "table": self.table,
            "key_column": self.key_column,
            "request_column": self.request_column,
            "snapshot_time": self.at.isoformat(),
        }

    @classmethod
    def from_json(cls, data: object, run_id: str, where: str) -> TableSnapshot:
        """A record read from GCS, every field checked: it may have been edited."""

        def bad(why: str) -> InvalidRequestError:
            return damaged_record(where, "snapshot record", why)

        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise bad("not an object of its format")
        if data.get("run") != run_id:
            raise bad("its 'run' is not this one")
        try:
            source = BigQuerySource(data["table"], data["key_column"], data["request_column"])
            at = datetime.fromisoformat(data["snapshot_time"])
        except (KeyError, TypeError, ValueError, InvalidRequestError):
            raise bad("its table, columns or snapshot time are not what a task writes") from None
        if at.tzinfo is None:
            raise bad("its snapshot time has no timezone")
        return cls.of(source, at)


def _name(staging: Staging, run_id: str) -> str:
    return staging.folder(run_id).name("tasks/snapshot.json")


def read_snapshot(staging: Staging, run_id: str) -> TableSnapshot | None:
    """The run's snapshot record, ``None`` until a task has read its table."""
    name = _name(staging, run_id)
    data = staging.read_json(name)
    if data is None:
        return None
    where = f"gs://{staging.folder(run_id).bucket}/{name}"
    return TableSnapshot.from_json(data, run_id, where)


def run_snapshot(
    staging: Staging,
    run_id: str,
    source: BigQuerySource,
    index: int,
    count: int,
    *,
    write: bool = True,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Share:
    """Task ``index`` of ``count``'s share of ``source`` in run ``run_id``, read at the run's
    snapshot: the record's, or (``write``) the one this call records create-only when no task
    has read yet; a plan (``write=False``) before any read reads now and records nothing.

    Raises:
        InvalidRequestError: the run's tasks read another table or other columns (the message
            names both), or the record was damaged.
    """
    held = read_snapshot(staging, run_id)
    if held is None and write:
        taken = now()  # to the millisecond: the record's text and the read agree exactly
        mine = TableSnapshot.of(source, taken.replace(microsecond=taken.microsecond // 1000 * 1000))
        if staging.create_json(_name(staging, run_id), mine.to_json(run_id)):
            held = mine
        else:  # another task (or attempt) recorded first: its snapshot is the run's
            held = read_snapshot(staging, run_id)
    restriction = share_restriction(source.key_column, index, count)
    if held is None:
        return Share(restriction, None)
    given = TableSnapshot.of(source, held.at)
    if given != held:
        raise InvalidRequestError(
            f"task {index} of run {run_id!r} reads {given.reads()}, but the run's tasks read "
            f"{held.reads()} (gs://{staging.folder(run_id).bucket}/{_name(staging, run_id)}): "
            "every task of a run reads the same table and columns; nothing was staged",
            field="requests",
        )
    return Share(restriction, held.at)
