"""Waiting for a job: poll ``status`` with backoff between a floor and a ceiling, bounded.

The core client never waits; this is the layer that does, for callers that can block (a Cloud
Run job, a notebook). A scheduler should call ``status`` once per tick instead.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from ._errors import InvalidRequestError, WaitTimeout
from ._models import Job, Status
from ._tracing import job_attributes

if TYPE_CHECKING:
    from ._client import Client

__all__ = [
    "MAX_JOB_LIFETIME",
    "Schedule",
    "check_client",
    "check_deadline",
    "poll_delays",
    "wait",
]

# Vertex lets a batch job queue up to 72 h and run up to 24 h; past that it cannot be running.
MAX_JOB_LIFETIME = timedelta(hours=96)


def check_client(client: object, how: str) -> None:
    """Refuse anything but a ``Client`` before it is used (a swapped argument, say).

    Raises:
        InvalidRequestError: ``client`` is not a ``vertexbatch.Client`` (``field == "client"``);
            ``how`` is the right call, for the message.
    """
    from ._client import Client  # not at the top: _client imports this module's users

    if not isinstance(client, Client):
        raise InvalidRequestError(
            f"client must be a vertexbatch.Client, not {type(client).__name__}: {how}",
            field="client",
        )


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
    24-hour job from making tens of thousands of calls.
    """
    if floor <= 0 or ceiling < floor:
        raise ValueError(f"need 0 < floor <= ceiling, got floor={floor}, ceiling={ceiling}")
    rng = rng or random.Random()
    step = floor
    while True:
        yield min(ceiling, rng.uniform(floor, step * 1.5) if step > floor else floor)
        step = min(ceiling, step * 2)


class Schedule:
    """When to poll a job again, or stop: the rules of ``wait``, apart from sleeping and I/O.

    ``wait`` sleeps with ``time.sleep``, ``AsyncClient.wait`` with ``asyncio.sleep``; both ask
    this after every status they poll.
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
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 <= timeout < float("inf")
        ):
            raise InvalidRequestError(
                f"timeout must be a number of seconds, 0 or more, got {timeout!r}",
                field="timeout",
            )
        self._job = job
        self._now = now
        start = now()
        self._start = start
        # A timeout of 0 is one: give up at the first poll that is not terminal.
        limits = (deadline, None if timeout is None else start + timedelta(seconds=timeout))
        self._limits = [limit for limit in limits if limit is not None]
        self._delays = poll_delays(floor, ceiling)
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


def wait(
    client: Client,
    job: Job,
    *,
    deadline: datetime | None = None,
    timeout: float | None = None,
    floor: float = 5.0,
    ceiling: float = 300.0,
    on_progress: Callable[[Status], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Status:
    """Poll until the job is terminal and return its final ``Status``.

    Args:
        deadline: give up at this moment (timezone-aware).
        timeout: give up after this many seconds (the earlier of the two wins).
        floor / ceiling: the shortest and longest pause between polls, in seconds.
        on_progress: called with every status polled.
        sleep / now: injectable for tests and event loops.

    Raises:
        InvalidRequestError: ``client`` is not a ``Client``, ``job`` not a ``Job``, or the
            deadline is not a timezone-aware ``datetime``.
        WaitTimeout: the deadline passed, or the job outlived any Vertex job (96 h); it carries
            the last status.
    """
    check_client(client, "call vertexbatch.wait(client, job)")
    schedule = Schedule(
        job, deadline=deadline, timeout=timeout, floor=floor, ceiling=ceiling, now=now
    )
    from ._client import cloud_of  # not at the top: _client imports this module's users

    with cloud_of(client).tracing.operation("wait", job_attributes(job)) as span:
        while True:
            status = client.status(job)
            if on_progress is not None:
                on_progress(status)
            pause = schedule.pause(status)
            span.set_attribute("vertexbatch.wait.polls", schedule.polls)
            if pause is None:
                span.set_attribute("vertexbatch.job.state", status.state)
                return status
            sleep(pause)
