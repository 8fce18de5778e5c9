"""A task of a Cloud Run job (or any N-way split): its place, and its share of the input.

A Cloud Run job runs ``--tasks N`` copies of one container, each told its index, the count and
its attempt in ``CLOUD_RUN_TASK_INDEX``, ``CLOUD_RUN_TASK_COUNT`` and ``CLOUD_RUN_TASK_ATTEMPT``.
``Task`` is that place as a value; ``Task.slice`` and ``Task.take`` give a task its part of a
sequence or of a stream, so that the parts of tasks ``0 … N-1`` partition the input: every item
in exactly one part, and a retried task (same index) takes the same part again.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .._errors import InvalidRequestError

__all__ = ["ATTEMPT_VARIABLE", "COUNT_VARIABLE", "INDEX_VARIABLE", "Task"]

INDEX_VARIABLE = "CLOUD_RUN_TASK_INDEX"
COUNT_VARIABLE = "CLOUD_RUN_TASK_COUNT"
ATTEMPT_VARIABLE = "CLOUD_RUN_TASK_ATTEMPT"
# The most tasks a run may be split into (Cloud Run jobs allow up to 10,000 tasks).
MAX_TASKS = 10_000

T = TypeVar("T")


def _whole(name: str, value: object, low: int, high: int | None = None) -> int:
    if type(value) is not int or value < low or (high is not None and value > high):
        rule = f"a whole number from {low} to {high}" if high is not None else f"at least {low}"
        raise InvalidRequestError(f"task {name} must be {rule}, got {value!r}", field="task")
    return value


@dataclass(frozen=True, slots=True)
class Task:
    """One task of ``count``: its ``index`` (0 … count-1) and its ``attempt`` (0 the first time).

    Raises:
        InvalidRequestError: ``count`` is not a whole number from 1 to 10,000, ``index`` is not
            from 0 to ``count - 1``, or ``attempt`` is negative (``field == "task"``).
    """

    index: int
    count: int
    attempt: int = 0

    def __post_init__(self) -> None:
        _whole("count", self.count, 1, MAX_TASKS)
        _whole("index", self.index, 0)
        if self.index >= self.count:
            raise InvalidRequestError(
                f"task index must be below the task count ({self.count}), got {self.index}",
                field="task",
            )
        _whole("attempt", self.attempt, 0)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Task | None:
        """The task Cloud Run says this container is, from ``CLOUD_RUN_TASK_INDEX``,
        ``CLOUD_RUN_TASK_COUNT`` and ``CLOUD_RUN_TASK_ATTEMPT`` (0 when unset).

        Returns ``None`` outside Cloud Run (neither the index nor the count is set), so that
        ``run_claude(..., task=Task.from_env())`` is a run staged by one process there.

        Raises:
            InvalidRequestError: one of the index and the count is set and the other not, or a
                variable is not a whole number in its range (the message names it).
        """
        env = os.environ if environ is None else environ
        index, count = env.get(INDEX_VARIABLE), env.get(COUNT_VARIABLE)
        if index is None and count is None:
            return None
        if index is None or count is None:
            given, missing = (
                (INDEX_VARIABLE, COUNT_VARIABLE)
                if count is None
                else (COUNT_VARIABLE, INDEX_VARIABLE)
            )
            raise InvalidRequestError(
                f"{given} is set but {missing} is not: a Cloud Run task has both", field="task"
            )
        attempt = env.get(ATTEMPT_VARIABLE, "0")
        numbers = []
        for name, text in (
            (INDEX_VARIABLE, index),
            (COUNT_VARIABLE, count),
            (ATTEMPT_VARIABLE, attempt),
        ):
            if not text.isascii() or not text.isdigit():
                raise InvalidRequestError(
                    f"{name} must be a whole number, got {text!r}", field="task"
                )
            numbers.append(int(text))
        return cls(numbers[0], numbers[1], numbers[2])

    def bounds(self, length: int) -> tuple[int, int]:
        """The ``[start, stop)`` positions of this task's part of ``length`` items: contiguous,
        sizes differing by at most one, the parts of all tasks covering ``0 … length``."""
        if type(length) is not int or length < 0:
            raise InvalidRequestError(f"a length is at least 0, got {length!r}", field="task")
        return self.index * length // self.count, (self.index + 1) * length // self.count

    def slice(self, items: Sequence[T]) -> Sequence[T]:
        """This task's contiguous part of a sequence (a list, a range): ``items[start:stop]``."""
        if not isinstance(items, Sequence) or isinstance(items, str | bytes):
            raise InvalidRequestError(
                f"Task.slice takes a sequence, got {type(items).__name__}: use Task.take for "
                "an iterable",
                field="task",
            )
        start, stop = self.bounds(len(items))
        return items[start:stop]

    def take(self, items: Iterable[T]) -> Iterator[T]:
        """This task's part of an iterable, by position (items ``index``, ``index + count``, …),
        streamed: the iterable is never held whole."""
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise InvalidRequestError(
                f"Task.take takes an iterable of items, got {type(items).__name__}", field="task"
            )
        return itertools.islice(items, self.index, None, self.count)

    def __str__(self) -> str:
        return f"task {self.index} of {self.count}"
