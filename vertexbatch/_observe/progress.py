"""Progress of long work: the public ``Progress`` value and the ``Meter`` that makes it.

Submitting (``submit_*``, ``run_*``), planning (``plan_*``) and reading results
(``Client.results``, ``Run.results``) take ``progress=``, a callable given a ``Progress`` as
the work goes on: at most every ``INTERVAL`` seconds, once more with the final counts when the
requests (or the results) run out, and once with ``done=True`` when the call has finished its
work. A ``Progress`` holds counts and sizes only, never request or response content.

A callback that raises stops the work with its exception, as any failure of the call would:
a submission stopped so stages nothing half-written that could block a retry (its uploads are
cancelled before its manifest, the object that claims the id, is written).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import dataclass
from typing import Literal, TypeVar

from .._errors import InvalidRequestError

__all__ = [
    "INTERVAL",
    "Meter",
    "Phase",
    "Progress",
    "ProgressCallback",
    "check_progress",
    "finish",
    "meter_of",
]

Phase = Literal["stage", "plan", "results"]
"""What is under way: requests read and staged (``submit_*``, ``run_*``), requests read for a
plan (``plan_*``), results read (``Client.results``, ``Run.results``)."""

INTERVAL = 0.1
"""The shortest time between two calls of a progress callback, in seconds (the last two, the
final counts and ``done``, come whenever the work ends)."""

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Progress:
    """How far a long call has come: counts and sizes, never content.

    Attributes:
        phase: ``"stage"``, ``"plan"`` or ``"results"`` (see ``Phase``).
        rows: the caller's requests read so far (``stage``, ``plan``), or results yielded
            (``results``): the caller's keys, whatever dedupe or the answer cache stage.
        bytes: the bytes of those requests' JSONL lines (as staged before dedupe), or of the
            output read so far; ``None`` when not counted (``Run.results``).
        total_rows: how many rows there are in all: ``len(requests)`` when the requests are a
            sized collection (a list), the job's (or run's) keys for results; else ``None``.
        total_bytes: the size of the output files of a job's results when GCS lists them;
            else ``None``.
        elapsed: seconds since the call began.
        done: ``True`` on the last call, once the call has finished its work.
    """

    phase: Phase
    rows: int
    bytes: int | None
    total_rows: int | None
    total_bytes: int | None
    elapsed: float
    done: bool = False


ProgressCallback = Callable[[Progress], object]
"""What ``progress=`` takes: a callable given each ``Progress`` (its return value is ignored)."""


class Meter:
    """Counts rows and bytes as they pass and calls the callback at a bounded rate."""

    __slots__ = (
        "_callback",
        "_clock",
        "_interval",
        "_next",
        "_start",
        "bytes",
        "counts_bytes",
        "phase",
        "rows",
        "total_bytes",
        "total_rows",
    )

    def __init__(
        self,
        callback: ProgressCallback,
        phase: Phase,
        *,
        total_rows: int | None = None,
        counts_bytes: bool = True,
        clock: Callable[[], float] = time.monotonic,
        interval: float = INTERVAL,
    ) -> None:
        self._callback = callback
        self.phase: Phase = phase
        self.rows = 0
        self.bytes = 0
        self.total_rows = total_rows
        self.total_bytes: int | None = None
        self.counts_bytes = counts_bytes
        self._clock = clock
        self._interval = interval
        self._start = clock()
        self._next = self._start + interval

    def add(self, rows: int, size: int = 0) -> None:
        """Count ``rows`` rows of ``size`` bytes; call the callback if its interval passed."""
        self.rows += rows
        self.bytes += size
        now = self._clock()
        if now >= self._next:
            self._next = now + self._interval
            self._call(now, False)

    def add_bytes(self, size: int) -> None:
        """Count ``size`` bytes read (no row yet): the next ``add`` may report them."""
        self.bytes += size

    def report(self, *, done: bool = False) -> None:
        """Call the callback now, with the counts so far (``done``: the work has finished)."""
        now = self._clock()
        self._next = now + self._interval
        self._call(now, done)

    def _call(self, now: float, done: bool) -> None:
        self._callback(
            Progress(
                self.phase,
                self.rows,
                self._bytes(),
                self.total_rows,
                self.total_bytes,
                now - self._start,
                done,
            )
        )

    def _bytes(self) -> int | None:
        if not self.counts_bytes:
            return None
        # A file's last line may lack its newline: never more than the total.
        total = self.total_bytes
        return self.bytes if total is None else min(self.bytes, total)

    def counted(
        self, items: Iterable[_T], size: Callable[[_T], int] | None = None, *, done: bool = False
    ) -> Iterator[_T]:
        """``items``, each counted as a row (of ``size(item)`` bytes) as it is taken; the counts
        reported when they run out (``done``: as the end of the work)."""
        add = self.add
        if size is None:
            for item in items:
                add(1)
                yield item
        else:
            for item in items:
                add(1, size(item))
                yield item
        self.report(done=done)


def finish(meter: Meter | None) -> None:
    """The last report of a call's meter (``done``), when the call has one."""
    if meter is not None:
        meter.report(done=True)


def meter_of(
    callback: ProgressCallback | None,
    phase: Phase,
    items: object = None,
    *,
    total_rows: int | None = None,
    counts_bytes: bool = True,
) -> Meter | None:
    """The meter of a call given ``progress=callback`` (``None``: no meter, nothing counted);
    ``items``' length is the total when they are a sized collection."""
    if check_progress(callback) is None:
        return None
    assert callback is not None
    if total_rows is None and isinstance(items, Sized):
        total_rows = len(items)
    return Meter(callback, phase, total_rows=total_rows, counts_bytes=counts_bytes)


def check_progress(callback: object) -> ProgressCallback | None:
    """``callback`` if it is ``None`` or callable, else ``InvalidRequestError`` (before any
    cloud call)."""
    if callback is not None and not callable(callback):
        raise InvalidRequestError(
            "progress must be a callable taking a vertexbatch.Progress, got "
            f"{type(callback).__name__}",
            field="progress",
        )
    return callback
