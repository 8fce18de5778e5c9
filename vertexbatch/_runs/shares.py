"""A task's share of a set of files, by bytes: pure, a function of (name, size) pairs alone.

The files are sorted by name and cut into ``count`` contiguous runs, each of about
``total / count`` bytes: file ``j``, whose bytes start at ``start_j`` (the sizes of the files
before it) and end at ``end_j``, is task ``i``'s when its middle byte falls in task ``i``'s
``[i*total/count, (i+1)*total/count)``, that is ``i = (start_j + end_j) * count // (2 * total)``.
That number never decreases along the sorted files, so each task's files are contiguous, every
file is in exactly one share, and the same files give every task the same share again (a
retried task included). A task gets no file when the files are fewer than the tasks, or when a
file larger than a task's bytes covers its middle. Files of no bytes all go by count.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar

from .._errors import InvalidRequestError
from .tasks import Task

__all__ = ["Listed", "byte_shares", "share_of"]

T = TypeVar("T")


class Listed(Iterator[T], Generic[T]):
    """Requests read from a listing of files, which also name it: ``listing`` is the digest of
    every file listed (not just this share), recorded by a task so that the run can refuse
    tasks whose shares were cut from different listings (the prefix changed meanwhile)."""

    __slots__ = ("_items", "listing")

    def __init__(self, items: Iterator[T], listing: str) -> None:
        self._items = items
        self.listing = listing

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        return next(self._items)


def _checked(files: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    listed = sorted(files)
    for (name, size), after in zip(listed, [*listed[1:], None], strict=True):
        if not isinstance(name, str) or type(size) is not int or size < 0:
            raise InvalidRequestError(
                f"a file is a (name, size in bytes) pair, got {(name, size)!r}", field="files"
            )
        if after is not None and after[0] == name:
            raise InvalidRequestError(f"file {name!r} is listed twice", field="files")
    return listed


def byte_shares(sizes: Sequence[int], count: int) -> list[int]:
    """The task (0 … ``count - 1``) of each of ``sizes`` (files in name order), by bytes."""
    total = sum(sizes)
    if not total:  # every file empty: by count, as Task.bounds cuts a sequence
        return [j * count // len(sizes) for j in range(len(sizes))]
    owners = []
    start = 0
    for size in sizes:
        owners.append(min(count - 1, (2 * start + size) * count // (2 * total)))
        start += size
    return owners


def share_of(files: Iterable[tuple[str, int]], task: Task) -> list[tuple[str, int]]:
    """Task ``task``'s share of ``files`` ((name, size in bytes) pairs), sorted by name:
    a contiguous run of the sorted files, of about ``1/count`` of their bytes (possibly none).

    Raises:
        InvalidRequestError: a pair is not a name and a size of at least 0, or a name is given
            twice (``field == "files"``).
    """
    if not isinstance(task, Task):
        raise InvalidRequestError(
            f"task must be a vertexbatch.Task, got {type(task).__name__}", field="task"
        )
    listed = _checked(files)
    owners = byte_shares([size for _, size in listed], task.count)
    return [file for file, owner in zip(listed, owners, strict=True) if owner == task.index]
