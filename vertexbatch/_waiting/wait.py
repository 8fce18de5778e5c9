"""Waiting for a job: poll its status with backoff between a floor and a ceiling, bounded.

The core client never waits; this is the layer that does, for callers that can block (a Cloud
Run job, a notebook). A scheduler should call ``status`` once per tick instead.

The rules are ``_waiting.schedule.Schedule``'s; here are the two loops that follow them, one
sleeping with ``time.sleep`` (``Client.wait``), one with ``asyncio.sleep`` (``AsyncClient.wait``).
Both take the status call and the client's tracing handed down, never the client, so this module
sits below ``_client`` and ``_aio``, which use it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from .._observe.traces import Tracing, job_attributes
from .._values import Job, Status
from .schedule import Schedule

__all__ = ["poll", "poll_async"]


def _now() -> datetime:
    return datetime.now(UTC)


def _after_poll(
    schedule: Schedule, span: Any, polled: Status, on_progress: Callable[[Status], None] | None
) -> float | None:
    """What both loops do with a status they polled: report it, ask the schedule for the next
    pause (``None``: stop, the job is terminal), and note it on the wait's span."""
    if on_progress is not None:
        on_progress(polled)
    pause = schedule.pause(polled)
    span.set_attribute("vertexbatch.wait.polls", schedule.polls)
    if pause is None:
        span.set_attribute("vertexbatch.job.state", polled.state)
    return pause


def poll(
    status: Callable[[Job], Status],
    tracing: Tracing,
    job: Job,
    *,
    deadline: datetime | None,
    timeout: float | None,
    floor: float,
    ceiling: float,
    on_progress: Callable[[Status], None] | None,
    sleep: Callable[[float], None] | None,
    now: Callable[[], datetime] | None,
) -> Status:
    """``Client.wait``: call ``status`` until the job is terminal, sleeping as ``Schedule`` says.

    Raises:
        InvalidRequestError: the deadline, timeout, floor or ceiling breaks its rule.
        WaitTimeout: the deadline passed, or the job outlived any Vertex job (96 h).
    """
    schedule = Schedule(
        job, deadline=deadline, timeout=timeout, floor=floor, ceiling=ceiling, now=now or _now
    )
    pause_for = sleep or time.sleep
    with tracing.operation("wait", job_attributes(job)) as span:
        while True:
            polled = status(job)
            pause = _after_poll(schedule, span, polled, on_progress)
            if pause is None:
                return polled
            pause_for(pause)


async def poll_async(
    status: Callable[[Job], Awaitable[Status]],
    tracing: Tracing,
    job: Job,
    *,
    deadline: datetime | None,
    timeout: float | None,
    floor: float,
    ceiling: float,
    on_progress: Callable[[Status], None] | None,
    sleep: Callable[[float], Awaitable[object]] | None,
    now: Callable[[], datetime] | None,
) -> Status:
    """``AsyncClient.wait``: ``poll``, awaiting ``status`` and pausing with ``asyncio.sleep``.

    Raises:
        InvalidRequestError: the deadline, timeout, floor or ceiling breaks its rule.
        WaitTimeout: the deadline passed, or the job outlived any Vertex job (96 h).
    """
    schedule = Schedule(
        job, deadline=deadline, timeout=timeout, floor=floor, ceiling=ceiling, now=now or _now
    )
    pause_for = sleep or asyncio.sleep
    with tracing.operation("wait", job_attributes(job)) as span:
        while True:
            polled = await status(job)
            pause = _after_poll(schedule, span, polled, on_progress)
            if pause is None:
                return polled
            await pause_for(pause)
