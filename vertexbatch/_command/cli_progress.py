"""Progress of the command's long work on stderr: ``submit``, ``run submit`` and ``results``.

When stderr is a terminal, click's progress bar (``click.progressbar``) is redrawn on it from the
library's ``progress=`` callback: rows, bytes, rate, and the percentage and time left when the
total is known (a request file's size; a job's output files, as GCS lists them). When stderr is
not a terminal nothing is drawn, and stdout carries only what it always does. ``results`` draws
only when its stdout is not that terminal too: the result lines themselves are its progress
there, and a bar redrawn between them would break them.

``key_counts`` makes the counts ``status``, ``watch`` and the demo show count the caller's keys
(Vertex counts staged rows: fewer under dedupe and the answer cache); ``job_meter`` starts the
spend ``results`` sums with the job's canary, which its manifest records.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any, TextIO

import click

from .._errors import InvalidRequestError
from .._observe.progress import Progress
from .._plans.spend import SpendMeter, count_tiers
from .._staged.manifest import read_manifest
from .._values import Job, Status
from .cli_render import keys_status

if TYPE_CHECKING:
    from .._client import Client

__all__ = [
    "KeyCounts",
    "ProgressLine",
    "file_size",
    "info",
    "job_meter",
    "key_counts",
    "request_progress",
    "results_progress",
]

# The callback a command hands to the library: None when nothing is drawn.
Callback = Callable[[Progress], None] | None


def _size(count: float) -> str:
    """A byte count in the units a person reads (``1.5 MB``)."""
    for unit in ("B", "kB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:,.0f} {unit}" if unit == "B" else f"{count:,.1f} {unit}"
        count /= 1000
    raise AssertionError("unreachable")


def info(rows: int, noun: str, size: int | None, elapsed: float) -> str:
    """What follows the bar: ``12,000 requests, 14.2 MB, 3.1 MB/s`` (a rate once time passed)."""
    text = f"{rows:,} {noun}"
    if size is not None:
        text += f", {_size(size)}"
        if elapsed > 0:
            text += f", {_size(size / elapsed)}/s"
    return text


def _no_items() -> Iterator[str]:
    """No items, and no length hint: without a ``length`` the bar's total is unknown."""
    yield from ()


class ProgressLine:
    """click's progress bar on a terminal stream, moved to a position the caller measures.

    ``total`` (bytes, or rows) makes the bar a percentage with the time left; without one the
    bar only shows that work goes on (click's bouncing bar).
    """

    def __init__(self, stream: TextIO, label: str, total: int | None) -> None:
        self._bar = click.progressbar(
            _no_items(),  # never iterated: the bar is moved by ``show``
            length=total,
            label=label,
            file=stream,
            show_eta=True,
            show_percent=total is not None,
            item_show_func=lambda text: text,
        )
        self._open = False

    def show(self, position: int, text: str) -> None:
        """Redraw at ``position`` (of the total) with ``text`` after the bar."""
        if not self._open:
            self._bar.__enter__()
            self._open = True
        self._bar.update(max(position - self._bar.pos, 0), text)

    def close(self) -> None:
        """End the line (once), so the next line on the stream starts clean."""
        if self._open:
            self._open = False
            self._bar.render_finish()


def _is_terminal(stream: IO[Any]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # not a real stream, or closed
        return False


def file_size(stream: IO[bytes] | None) -> int | None:
    """The size of a request file, or ``None`` for one of unknown length (stdin, a pipe, none)."""
    if stream is None:
        return None
    try:
        status = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


def _position(stream: IO[bytes] | None) -> int | None:
    if stream is None:
        return None
    try:
        return stream.tell()
    except (AttributeError, OSError, ValueError):  # a pipe cannot tell
        return None


@contextlib.contextmanager
def request_progress(stream: IO[bytes] | None, what: str) -> Iterator[Callback]:
    """The ``progress=`` of a submission reading ``stream``: a bar of the file's bytes on a
    terminal's stderr (its size known up front: the percentage and time left; rows only for a
    table, ``stream`` ``None``), else ``None``.
    The bar is ended on the way out, whatever happens."""
    err = sys.stderr
    if not _is_terminal(err):
        yield None
        return
    total = file_size(stream)
    line = ProgressLine(err, what, total)

    def callback(progress: Progress) -> None:
        read = _position(stream)
        position = read if read is not None else progress.rows
        size = read if read is not None else progress.bytes
        line.show(position, info(progress.rows, "requests", size, progress.elapsed))
        if progress.done:
            line.close()

    try:
        yield callback
    finally:
        line.close()


@contextlib.contextmanager
def results_progress(keys: int) -> Iterator[Callback]:
    """The ``progress=`` of a results pass: a bar of the output's bytes (or, when GCS does not
    list them, of the job's ``keys``) on a terminal's stderr while stdout goes elsewhere, else
    ``None``. The bar is ended on the way out."""
    if not _is_terminal(sys.stderr) or _is_terminal(sys.stdout):
        yield None
        return
    line: ProgressLine | None = None

    def callback(progress: Progress) -> None:
        nonlocal line
        by_bytes = progress.total_bytes is not None and progress.bytes is not None
        if line is None:  # the first call: the output's total is known by now
            total = progress.total_bytes if by_bytes else (progress.total_rows or keys)
            line = ProgressLine(sys.stderr, "results", total)
        position = progress.bytes if by_bytes and progress.bytes is not None else progress.rows
        line.show(position, info(progress.rows, "keys", progress.bytes, progress.elapsed))
        if progress.done:
            line.close()

    try:
        yield callback
    finally:
        if line is not None:
            line.close()


@dataclass(frozen=True, slots=True)
class KeyCounts:
    """What a job's staged rows stand for: ``rows`` staged for ``keys`` keys, ``cached`` of
    them answered by the answer cache (no row). Called on a ``Status``, its counts in keys."""

    rows: int
    keys: int
    cached: int = 0

    @property
    def shared(self) -> bool:
        """Whether rows and keys differ (dedupe or the cache): the counts were turned."""
        return self.cached > 0 or (self.rows > 0 and self.rows != self.keys)

    def __call__(self, status: Status) -> Status:
        return keys_status(status, rows=self.rows, keys=self.keys, cached=self.cached)


def key_counts(client: Client, job: Job) -> KeyCounts:
    """The ``KeyCounts`` of ``job``, from its manifest (one small read, once per command); a
    job whose manifest cannot be read counts one key per row, as Vertex does."""
    try:
        manifest = read_manifest(client._cloud.staging, job.id)
    except InvalidRequestError:
        manifest = None
    if manifest is None or manifest.key_count != job.keys:
        return KeyCounts(job.keys, job.keys)
    return KeyCounts(manifest.rows, manifest.key_count, manifest.cached)


def job_meter(client: Client, job: Job, created: datetime | None = None) -> SpendMeter:
    """A ``SpendMeter`` for ``job``'s results that has counted its canary: the usage of the
    answers sent online before the rows were staged, which the id's manifest records
    (``Manifest.canary``), at the tier each was billed at. One small read. Priced on the day
    the job was created (``Status.created``, UTC) where Vertex said, else today."""
    day = None if created is None else created.astimezone(UTC).date()
    meter = SpendMeter(job.provider, job.model, priced_on=day)
    manifest = read_manifest(client._cloud.staging, job.id)
    if manifest is not None:
        count_tiers(meter, manifest.canary)
    return meter
