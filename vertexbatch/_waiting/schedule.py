"""When to poll a job again, or stop: the rules of waiting, apart from sleeping and I/O (pure).

``Client.wait`` and ``vertexbatch.wait`` sleep with ``time.sleep``, ``AsyncClient.wait`` with
``asyncio.sleep`` (the loops are in ``_waiting.wait``); all of them ask a ``Schedule`` after every
status they poll. ``check_deadline`` is also the rule of ``Run.advance``'s deadline.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

from .._errors import InvalidRequestError, VertexBatchError, rebuild
from .._rules import is_seconds
from .._values import Job, Status

__all__ = ["MAX_JOB_LIFETIME", "Schedule", "WaitTimeout", "check_deadline", "poll_delays"]

# Vertex lets a batch job queue up to 72 h and run up to 24 h; past that it cannot be running.
MAX_JOB_LIFETIME = timedelta(hours=96)


class WaitTimeout(VertexBatchError):
    """``wait`` reached its deadline (or the job's longest possible life) first (in the tree of
    ``_errors``; here, beside the wait, as it carries a ``Status``).

    Attributes:
        status: the last status seen.
    """

    def __init__(self, message: str, *, status: Status) -> None:
        super().__init__(message)
        self.status = status

    def __reduce__(self) -> tuple[Any, ...]:
        return (rebuild, (type(self), self.args, {"status": self.status}))


def check_deadline(deadline: object) -> datetime | None:
    """``deadline`` itself if it is ``None`` or a timezone-aware ``datetime``.

    A naive ``datetime`` cannot be compared with the current time, which is always aware here.

    Raises:
        InvalidRequestError: anything else (``field == "deadline"``).
    """
    if deadline is None or (isinstance(deadline, datetime) and deadline.utcoffset() is not None):
        return deadline
    what = "has no timezone" if isinstance(deadline, datetime) else "is not a datetime"
    raise InvalidRequestError(
        f"the deadline {what}: it must be a datetime with a timezone, such as "
        "datetime.now(UTC) + timedelta(hours=2)",
        field="deadline",
    )


def poll_delays(
    floor: float, ceiling: float, *, rng: random.Random | None = None
) -> Iterator[float]:
    """Pauses between polls: doubling from ``floor`` to ``ceiling``, jittered, never under floor.

    Jitter spreads schedulers that started together; the floor keeps a naive loop against a
    24-hour job from making tens of thousands of calls. The bounds are checked at the call,
    before the first pause is asked for.

    Raises:
        InvalidRequestError: ``floor`` is not a number of seconds from 1e-06 to 1e9
            (``field == "floor"``), or ``ceiling`` is not one at least ``floor`` (``field ==
            "ceiling"``).
    """
    if not is_seconds(floor, positive=True):
        field = "floor"
    elif not is_seconds(ceiling, positive=True) or ceiling < floor:
        field = "ceiling"
    else:
        return _delays(floor, ceiling, rng or random.Random())
    raise InvalidRequestError(
        f"need 1e-06 <= floor <= ceiling <= 1e9 seconds, got floor={floor!r:.40}, "
        f"ceiling={ceiling!r:.40}",
        field=field,
    )


def _delays(floor: float, ceiling: float, rng: random.Random) -> Iterator[float]:
    step = floor
    while True:
        yield min(ceiling, rng.uniform(floor, step * 1.5) if step > floor else floor)
        step = min(ceiling, step * 2)


class Schedule:
    """When to poll a job again, or stop: the rules of waiting, apart from sleeping and I/O.

    Every loop that waits (``_waiting.wait``) asks this after every status it polls.
    """

    def __init__(
        self,
        job: Job,
        *,
        deadline: datetime | None,
        timeout: float | None,
        floor: float,
        ceiling: float,
        now: Callable[[], datetime],
    ) -> None:
        check_deadline(deadline)
        if timeout is not None and not is_seconds(timeout):
            raise InvalidRequestError(
                f"timeout must be a number of seconds from 0 to 1e9, got {timeout!r:.40}",
                field="timeout",
            )
        self._delays = poll_delays(floor, ceiling)
        self._job = job
        self._now = now
        start = now()
        self._start = start
        # A timeout of 0 is one: give up at the first poll that is not terminal.
        limits = (deadline, None if timeout is None else start + timedelta(seconds=timeout))
        self._limits = [limit for limit in limits if limit is not None]
        self.polls = 0

    def pause(self, status: Status) -> float | None:
        """The pause before the next poll, or ``None`` once ``status`` is terminal.

        Raises:
            WaitTimeout: the deadline passed, or the job outlived any Vertex job (96 h).
        """
        self.polls += 1
        if status.terminal:
            return None
        bound = min([*self._limits, (status.created or self._start) + MAX_JOB_LIFETIME])
        left = (bound - self._now()).total_seconds()
        if left <= 0:
            raise WaitTimeout(
                f"job {self._job.name} is still {status.state} at the deadline", status=status
            )
        return min(next(self._delays), left)
