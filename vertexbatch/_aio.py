"""``client.aio``: the async view of a ``Client``, the same methods awaitable.

The protocol exists once, in the blocking core: each call here runs the ``Client``'s own
method off the event loop, in a thread of a small pool, with the caller's context copied (so
spans nest). ``results`` streams: a producer thread walks the blocking iterator and hands
results to the loop in chunks, through a bounded number of slots, so neither side holds the
whole file. docs/architecture.md says why this design, and docs/asyncio.md what cancellation
does at each step.

Cancelling the task that awaits a call cannot stop its thread: a call still queued never
starts, and a call under way runs on to its end. Every step of the identity protocol is
create-only or conditional, so wherever the call is when its task is cancelled (or its process
dies), the next submit of the same id and rows carries on from there. A cancelled call says so
in the log, and its outcome (its job, or the type of its error) is logged when its thread ends.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar, Unpack

from ._aio_threads import Pool, ResultStream
from ._bigquery.source import ChatRequests, ClaudeRequests, GeminiRequests
from ._client import Client
from ._functions import require_client
from ._lanes.embeddings import EmbeddingRequests
from ._lifecycle import ASYNC_WITH
from ._observe.progress import ProgressCallback
from ._plans.estimate import Plan
from ._runs.online import CONCURRENCY
from ._runs.run import KeyResult, Run
from ._runs.step import RunSummary
from ._runs.tasks import Task
from ._submission.options import PlanKeywords, RunKeywords, SubmitKeywords
from ._values import Job, Result, Status
from ._waiting.wait import poll_async

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["AsyncClient", "AsyncRun"]

logger = logging.getLogger("vertexbatch")

T = TypeVar("T")


class AsyncRun:
    """The async view of a ``Run``: ``advance`` and ``status`` awaitable, results streamed."""

    def __init__(self, run: Run, pool: Pool) -> None:
        self.run = run
        self._pool = pool

    @property
    def id(self) -> str:
        return self.run.id

    @property
    def keys(self) -> int:
        return self.run.keys

    def __repr__(self) -> str:
        return f"Async{self.run!r}"

    async def advance(
        self,
        *,
        deadline: datetime | None = None,
        fallback: Literal["online"] | None = None,
        max_live_jobs: int | None = None,
        online_concurrency: int = CONCURRENCY,
    ) -> RunSummary:
        """``Run.advance``, awaitable; one step, safe to cancel (the next step finishes it)."""
        step = functools.partial(
            self.run.advance,
            deadline=deadline,
            fallback=fallback,
            max_live_jobs=max_live_jobs,
            online_concurrency=online_concurrency,
        )
        return await self._pool.call(f"advance of run {self.run.id}", step)

    async def status(self) -> RunSummary:
        """``Run.status``, awaitable."""
        return await self._pool.call(f"status of run {self.run.id}", self.run.status)

    def results(
        self,
        *,
        task: Task | None = None,
        schema: type[BaseModel] | Mapping[str, Any] | None = None,
        progress: ProgressCallback | None = None,
    ) -> ResultStream[Result]:
        """``Run.results`` as an async iterator (``task``: that task's share; ``schema``: the
        run's, its class making each ``parsed`` an instance; ``progress`` is called in its
        reading thread)."""
        results = self.run.results(task=task, schema=schema, progress=progress)
        return ResultStream(f"results of run {self.run.id}", results)

    def key_results(
        self,
        *,
        task: Task | None = None,
        schema: type[BaseModel] | Mapping[str, Any] | None = None,
    ) -> ResultStream[KeyResult]:
        """``Run.key_results`` as an async iterator (``task``: that task's share; ``schema``:
        as for ``results``)."""
        key_results = self.run.key_results(task=task, schema=schema)
        return ResultStream(f"key results of run {self.run.id}", key_results)


class AsyncClient:
    """``client.aio``: the methods of a ``Client``, awaitable, on the same configuration.

    Each call runs the client's own method in a thread (see the module docstring); results
    are async iterators. Any number of calls may run at once on one loop.

    The view and its client are one: ``aclose()`` (or the end of ``async with``) closes the
    client, and ``client.close()`` closes the view.

    ``AsyncClient(client)`` is deprecated (it warns with ``DeprecationWarning``, and goes in a
    later release): use ``client.aio``, the client's own view.
    """

    def __init__(self, client: Client) -> None:
        require_client(client, "use client.aio")
        warnings.warn(
            "AsyncClient(client) is deprecated: use client.aio, the client's own async view",
            DeprecationWarning,
            stacklevel=2,
        )
        self._open(client)

    @classmethod
    def _view_of(cls, client: Client) -> AsyncClient:
        """The async view of ``client``, without the warning: how ``Client.aio`` builds it (once
        per client)."""
        view = cls.__new__(cls)
        view._open(client)
        return view

    def _open(self, client: Client) -> None:
        self._client = client
        self._pool = Pool()
        # Without waiting: a blocking close() may run on the event loop (aclose waits, off it).
        client._life.own(functools.partial(self._pool.shutdown, wait=False))

    def __repr__(self) -> str:
        return f"{self._client!r}.aio"

    async def aclose(self) -> None:
        """Close the client: take no more calls, let those under way end (their threads are
        waited for off the loop), then close the clients it built (``Client.close``).

        Every call after this raises ``RuntimeError``; closing again does nothing.
        """
        await asyncio.to_thread(self._pool.shutdown)
        self._client.close()

    async def __aenter__(self) -> AsyncClient:
        self._client._life.check()
        return self

    # ``with client.aio``: refused with the right form, nothing opened or closed.
    def __enter__(self) -> NoReturn:
        raise TypeError(ASYNC_WITH.format(what="client.aio", how="a blocking"))

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None  # pragma: no cover - __enter__ always raises

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def submit_claude(
        self,
        id: str,
        model: str,
        requests: ClaudeRequests,
        **options: Unpack[SubmitKeywords],
    ) -> Job:
        """``Client.submit_claude``, awaitable; ``requests`` is read in the call's thread."""
        submit = functools.partial(self._client.submit_claude, id, model, requests, **options)
        return await self._pool.call(f"submit of id {id!r}", submit)

    async def plan_claude(
        self,
        id: str,
        model: str,
        requests: ClaudeRequests,
        **options: Unpack[PlanKeywords],
    ) -> Plan:
        """``Client.plan_claude``, awaitable; nothing is staged."""
        plan = functools.partial(self._client.plan_claude, id, model, requests, **options)
        return await self._pool.call(f"plan of id {id!r}", plan)

    async def submit_gemini(
        self,
        id: str,
        model: str,
        requests: GeminiRequests,
        **options: Unpack[SubmitKeywords],
    ) -> Job:
        """``Client.submit_gemini``, awaitable; ``requests`` is read in the call's thread."""
        submit = functools.partial(self._client.submit_gemini, id, model, requests, **options)
        return await self._pool.call(f"submit of id {id!r}", submit)

    async def plan_gemini(
        self,
        id: str,
        model: str,
        requests: GeminiRequests,
        **options: Unpack[PlanKeywords],
    ) -> Plan:
        """``Client.plan_gemini``, awaitable; nothing is staged."""
        plan = functools.partial(self._client.plan_gemini, id, model, requests, **options)
        return await self._pool.call(f"plan of id {id!r}", plan)

    async def submit_embeddings(
        self,
        id: str,
        model: str,
        requests: EmbeddingRequests,
        **options: Unpack[SubmitKeywords],
    ) -> Job:
        """``Client.submit_embeddings``, awaitable; ``requests`` is read in the call's thread."""
        submit = functools.partial(self._client.submit_embeddings, id, model, requests, **options)
        return await self._pool.call(f"submit of id {id!r}", submit)

    async def plan_embeddings(
        self,
        id: str,
        model: str,
        requests: EmbeddingRequests,
        **options: Unpack[PlanKeywords],
    ) -> Plan:
        """``Client.plan_embeddings``, awaitable; nothing is staged."""
        plan = functools.partial(self._client.plan_embeddings, id, model, requests, **options)
        return await self._pool.call(f"plan of id {id!r}", plan)

    async def submit_chat(
        self,
        id: str,
        model: str,
        requests: ChatRequests,
        **options: Unpack[SubmitKeywords],
    ) -> Job:
        """``Client.submit_chat``, awaitable; ``requests`` is read in the call's thread."""
        submit = functools.partial(self._client.submit_chat, id, model, requests, **options)
        return await self._pool.call(f"submit of id {id!r}", submit)

    async def plan_chat(
        self,
        id: str,
        model: str,
        requests: ChatRequests,
        **options: Unpack[PlanKeywords],
    ) -> Plan:
        """``Client.plan_chat``, awaitable; nothing is staged."""
        plan = functools.partial(self._client.plan_chat, id, model, requests, **options)
        return await self._pool.call(f"plan of id {id!r}", plan)

    async def find(self, id: str) -> Job | None:
        """``Client.find``, awaitable."""
        return await self._pool.call(f"find of id {id!r}", functools.partial(self._client.find, id))

    async def status(self, job: Job) -> Status:
        """``Client.status``, awaitable."""
        status = functools.partial(self._client.status, job)
        return await self._pool.call(f"status of {_name(job)}", status)

    def results(
        self,
        job: Job,
        *,
        schema: type[BaseModel] | Mapping[str, Any] | None = None,
        progress: ProgressCallback | None = None,
    ) -> ResultStream[Result]:
        """``Client.results`` as an async iterator: ``async for result in ...``.

        A bad ``job`` or ``schema`` raises here, before anything is read (a ``schema`` that is
        not the job's, from the first ``__anext__``). ``progress`` is called in the thread that
        reads (``loop.call_soon_threadsafe`` hands it to the loop).
        """
        results = self._client.results(job, schema=schema, progress=progress)
        return ResultStream(f"results of {_name(job)}", results)

    async def cancel(self, job: Job) -> None:
        """``Client.cancel``, awaitable."""
        await self._pool.call(
            f"cancel of {_name(job)}", functools.partial(self._client.cancel, job)
        )

    async def resubmit(
        self, job: Job, *, keys: Iterable[str] | None = None, id: str | None = None
    ) -> Job:
        """``Client.resubmit``, awaitable."""
        resubmit = functools.partial(self._client.resubmit, job, keys=keys, id=id)
        return await self._pool.call(f"resubmit of {_name(job)}", resubmit)

    async def wait(
        self,
        job: Job,
        *,
        deadline: datetime | None = None,
        timeout: float | None = None,
        floor: float = 5.0,
        ceiling: float = 300.0,
        on_progress: Callable[[Status], None] | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> Status:
        """``Client.wait``, pausing with ``asyncio.sleep``: the same floor, ceiling, jitter and
        deadline rules (``vertexbatch._waiting.schedule.Schedule``); ``sleep``, if given, is
        awaited.

        Raises:
            InvalidRequestError: the deadline is not a timezone-aware ``datetime``, or the
                timeout, floor or ceiling is not a number of seconds that fits.
            WaitTimeout: the deadline passed, or the job outlived any Vertex job (96 h).
        """
        return await poll_async(
            self.status,
            self._client._cloud.tracing,
            job,
            deadline=deadline,
            timeout=timeout,
            floor=floor,
            ceiling=ceiling,
            on_progress=on_progress,
            sleep=sleep,
            now=now,
        )

    async def run_claude(
        self,
        id: str,
        model: str,
        requests: ClaudeRequests,
        **options: Unpack[RunKeywords],
    ) -> AsyncRun:
        """``Client.run_claude``, awaitable."""
        start = functools.partial(self._client.run_claude, id, model, requests, **options)
        return AsyncRun(await self._pool.call(f"start of run {id!r}", start), self._pool)

    async def run_gemini(
        self,
        id: str,
        model: str,
        requests: GeminiRequests,
        **options: Unpack[RunKeywords],
    ) -> AsyncRun:
        """``Client.run_gemini``, awaitable."""
        start = functools.partial(self._client.run_gemini, id, model, requests, **options)
        return AsyncRun(await self._pool.call(f"start of run {id!r}", start), self._pool)

    async def run_embeddings(
        self,
        id: str,
        model: str,
        requests: EmbeddingRequests,
        **options: Unpack[RunKeywords],
    ) -> AsyncRun:
        """``Client.run_embeddings``, awaitable."""
        start = functools.partial(self._client.run_embeddings, id, model, requests, **options)
        return AsyncRun(await self._pool.call(f"start of run {id!r}", start), self._pool)

    async def run_chat(
        self,
        id: str,
        model: str,
        requests: ChatRequests,
        **options: Unpack[RunKeywords],
    ) -> AsyncRun:
        """``Client.run_chat``, awaitable."""
        start = functools.partial(self._client.run_chat, id, model, requests, **options)
        return AsyncRun(await self._pool.call(f"start of run {id!r}", start), self._pool)

    async def open_run(self, id: str) -> AsyncRun:
        """``Client.open_run``, awaitable."""
        opened = functools.partial(self._client.open_run, id)
        return AsyncRun(await self._pool.call(f"opening of run {id!r}", opened), self._pool)


def _name(job: object) -> str:
    """How a log line names a job argument (a bad one is refused by the client's method)."""
    return f"job {job.name}" if isinstance(job, Job) else "a job"
