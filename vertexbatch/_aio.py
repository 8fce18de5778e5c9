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
import contextvars
import functools
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Generic, Literal, TypeVar

from ._client_base import check_client, cloud_of, lifecycle_of
from ._estimate import Plan
from ._lifecycle import closed_error
from ._models import ClaudeRequest, GeminiRequest, Job, Result, Status
from ._prices import Price
from ._runs.online import CONCURRENCY
from ._runs.run import DEFAULT_SHARD_SIZE, KeyResult, Run, RunSummary
from ._wait import poll_async

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["AsyncClient", "AsyncRun", "ResultStream"]

logger = logging.getLogger("vertexbatch")

T = TypeVar("T")

# Threads of one client's pool: calls beyond it queue (each is I/O-bound, mostly waiting).
# As many as the connections the Google clients' HTTP sessions keep per host (urllib3's 10).
WORKERS = 10
# A stream hands results over in chunks of up to CHUNK (the first FIRST_CHUNK, doubling, so
# the first result comes soon), with at most SLOTS chunks in flight: one thread hop per chunk
# keeps the loop's share small; the slots bound the memory held.
FIRST_CHUNK = 16
CHUNK = 256
SLOTS = 4


def _outcome(what: str, future: Future[object]) -> None:
    """Log how a call whose task was cancelled ended in its thread (nothing is dropped)."""
    error = future.exception()
    if error is not None:
        logger.warning(
            "%s, whose task was cancelled, failed in its thread: %s", what, type(error).__name__
        )
        return
    value = future.result()
    ended = f"job {value.name}" if isinstance(value, Job) else "no error"
    logger.info("%s, whose task was cancelled, finished in its thread: %s", what, ended)


class _Pool:
    """The threads a client's async calls run in, started on first use, shut down with it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False

    def _get(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._closed:
                raise closed_error()
            if self._executor is None:
                self._executor = ThreadPoolExecutor(WORKERS, thread_name_prefix="vertexbatch-aio")
            return self._executor

    def shutdown(self, *, wait: bool = True) -> None:
        """Take no more calls; with ``wait``, return once the calls under way have ended."""
        with self._lock:
            self._closed = True
            executor = self._executor
        if executor is not None:
            executor.shutdown(wait=wait)

    async def call(self, what: str, function: Callable[[], T]) -> T:
        """``function()`` in a thread, in a copy of the caller's context; see the module doc."""
        context = contextvars.copy_context()
        future = self._get().submit(context.run, function)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            if not future.cancel():  # started: it runs on, and says how it ended
                logger.warning(
                    "%s: its task was cancelled while the call ran; the call goes on in its "
                    "thread until it ends, and its outcome is logged",
                    what,
                )
                future.add_done_callback(functools.partial(_outcome, what))
            raise


_END = object()


class _Producer(Generic[T]):
    """The thread's side of a stream: walks the blocking iterator, hands chunks to the loop.

    It holds no reference to its ``ResultStream``, so a stream dropped mid-way is collected
    and its ``__del__`` stops this.
    """

    def __init__(self, what: str, items: Iterator[T], loop: asyncio.AbstractEventLoop) -> None:
        self.what = what
        self.items = items
        self.loop = loop
        self.ready: asyncio.Queue[list[T] | BaseException | object] = asyncio.Queue()
        self.slots = threading.Semaphore(SLOTS)
        self.stopped = threading.Event()
        # Set while the thread waits for a free slot: it reads no further (the bound holds).
        self.parked = threading.Event()

    def stop(self) -> None:
        if not self.stopped.is_set():
            self.stopped.set()
            self.slots.release()  # wake the thread if it waits for a slot

    def _hand(self, item: list[T] | BaseException | object) -> bool:
        """Give the loop one item once a slot is free; ``False`` once the stream is closed."""
        if not self.slots.acquire(blocking=False):
            self.parked.set()
            self.slots.acquire()
            self.parked.clear()
        if self.stopped.is_set():
            return False
        try:
            self.loop.call_soon_threadsafe(self.ready.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody reads on
            self.stopped.set()
            return False
        return True

    def run(self) -> None:
        chunk: list[T] = []
        size = FIRST_CHUNK
        try:
            for item in self.items:
                chunk.append(item)
                if len(chunk) >= size:
                    if not self._hand(chunk):
                        return
                    chunk, size = [], min(CHUNK, size * 2)
            if chunk and not self._hand(chunk):
                return
            self._hand(_END)
        except BaseException as exc:  # what was read before it still reaches the caller
            if not ((not chunk or self._hand(chunk)) and self._hand(exc)):
                logger.debug(
                    "%s: failed after it was closed (%s); nobody reads it",
                    self.what,
                    type(exc).__name__,
                )
        finally:
            _close(self.items)
            if self.stopped.is_set():
                logger.debug("%s: closed before its end; its thread stopped", self.what)


def _close(items: Iterator[object]) -> None:
    close = getattr(items, "close", None)
    if close is not None:
        close()


class ResultStream(AsyncIterator[T], Generic[T]):
    """An async iterator over a blocking iterator walked in a thread, a few chunks ahead.

    ``aclose()`` (or ``async with``, or dropping the stream) stops the thread at its next
    result: the blocking iterator is closed in that thread, ending its span.
    """

    def __init__(self, what: str, items: Iterator[T]) -> None:
        self._what = what
        self._items: Iterator[T] | None = items
        self._producer: _Producer[T] | None = None
        self._buffer: deque[T] = deque()
        self._done = False
        self._reading = False  # a task awaits the next chunk
        self._context = contextvars.copy_context()  # the spans it runs under: the caller's

    def __aiter__(self) -> ResultStream[T]:
        return self

    async def __aenter__(self) -> ResultStream[T]:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _start(self) -> _Producer[T]:
        assert self._items is not None
        producer = _Producer(self._what, self._items, asyncio.get_running_loop())
        self._producer, self._items = producer, None
        thread = threading.Thread(
            target=self._context.run,
            args=(producer.run,),
            name="vertexbatch-results",
            daemon=True,  # it stops at the next result once closed; never holds the exit
        )
        thread.start()
        return producer

    async def __anext__(self) -> T:
        if self._buffer:
            return self._buffer.popleft()
        if self._done:
            raise StopAsyncIteration
        if self._reading:
            # One item reaches one task: a second reader would wait for ever at the end.
            raise RuntimeError(
                f"{self._what} is being read by another task: one task reads a result stream"
            )
        producer = self._producer or self._start()
        self._reading = True
        try:
            item = await producer.ready.get()
        finally:
            self._reading = False
        producer.slots.release()
        if item is _END:
            self._done = True
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            self._done = True
            raise item
        assert isinstance(item, list)
        self._buffer.extend(item)
        return self._buffer.popleft()

    def _close(self) -> None:
        self._done = True
        self._buffer.clear()
        if self._producer is not None:
            self._producer.stop()
        elif self._items is not None:  # never started: no thread, close it here
            _close(self._items)
            self._items = None

    async def aclose(self) -> None:
        """Stop reading: the thread stops at its next result; a task awaiting the next result
        (another task's ``async for``) ends its iteration."""
        if self._reading and self._producer is not None:
            self._producer.ready.put_nowait(_END)  # the loop's thread: the queue's own
        self._close()

    def __del__(self) -> None:
        self._close()


class AsyncRun:
    """The async view of a ``Run``: ``advance`` and ``status`` awaitable, results streamed."""

    def __init__(self, run: Run, pool: _Pool) -> None:
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

    def results(self) -> ResultStream[Result]:
        """``Run.results`` as an async iterator."""
        return ResultStream(f"results of run {self.run.id}", self.run.results())

    def key_results(self) -> ResultStream[KeyResult]:
        """``Run.key_results`` as an async iterator."""
        return ResultStream(f"key results of run {self.run.id}", self.run.key_results())


class AsyncClient:
    """``client.aio``: the methods of a ``Client``, awaitable, on the same configuration.

    Each call runs the client's own method in a thread (see the module docstring); results
    are async iterators. Any number of calls may run at once on one loop.

    The view and its client are one: ``aclose()`` (or the end of ``async with``) closes the
    client, and ``client.close()`` closes the view.
    """

    def __init__(self, client: Client) -> None:
        check_client(client, "use client.aio, or AsyncClient(client)")
        self._client = client
        self._pool = _Pool()
        # Without waiting: a blocking close() may run on the event loop (aclose waits, off it).
        lifecycle_of(client).own(functools.partial(self._pool.shutdown, wait=False))

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
        lifecycle_of(self._client).check()
        return self

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
        requests: Iterable[ClaudeRequest],
        *,
        dedupe: bool = False,
        cache: bool = False,
        cache_ttl: timedelta | None = None,
    ) -> Job:
        """``Client.submit_claude``, awaitable; ``requests`` is read in the call's thread."""
        submit = functools.partial(
            self._client.submit_claude,
            id,
            model,
            requests,
            dedupe=dedupe,
            cache=cache,
            cache_ttl=cache_ttl,
        )
        return await self._pool.call(f"submit of id {id!r}", submit)

    async def plan_claude(
        self,
        id: str,
        model: str,
        requests: Iterable[ClaudeRequest],
        *,
        dedupe: bool = False,
        cache: bool = False,
        cache_ttl: timedelta | None = None,
        count_tokens: bool = False,
        prices: Iterable[Price] = (),
        shard_size: int | None = None,
    ) -> Plan:
        """``Client.plan_claude``, awaitable; nothing is staged."""
        plan = functools.partial(
            self._client.plan_claude,
            id,
            model,
            requests,
            dedupe=dedupe,
            cache=cache,
            cache_ttl=cache_ttl,
            count_tokens=count_tokens,
            prices=prices,
            shard_size=shard_size,
        )
        return await self._pool.call(f"plan of id {id!r}", plan)

    async def submit_gemini(
        self,
        id: str,
        model: str,
        requests: Iterable[GeminiRequest],
        *,
        dedupe: bool = False,
        cache: bool = False,
        cache_ttl: timedelta | None = None,
    ) -> Job:
        """``Client.submit_gemini``, awaitable; ``requests`` is read in the call's thread."""
        submit = functools.partial(
            self._client.submit_gemini,
            id,
            model,
            requests,
            dedupe=dedupe,
            cache=cache,
            cache_ttl=cache_ttl,
        )
        return await self._pool.call(f"submit of id {id!r}", submit)

    async def plan_gemini(
        self,
        id: str,
        model: str,
        requests: Iterable[GeminiRequest],
        *,
        dedupe: bool = False,
        cache: bool = False,
        cache_ttl: timedelta | None = None,
        count_tokens: bool = False,
        prices: Iterable[Price] = (),
        shard_size: int | None = None,
    ) -> Plan:
        """``Client.plan_gemini``, awaitable; nothing is staged."""
        plan = functools.partial(
            self._client.plan_gemini,
            id,
            model,
            requests,
            dedupe=dedupe,
            cache=cache,
            cache_ttl=cache_ttl,
            count_tokens=count_tokens,
            prices=prices,
            shard_size=shard_size,
        )
        return await self._pool.call(f"plan of id {id!r}", plan)

    async def find(self, id: str) -> Job | None:
        """``Client.find``, awaitable."""
        return await self._pool.call(f"find of id {id!r}", functools.partial(self._client.find, id))

    async def status(self, job: Job) -> Status:
        """``Client.status``, awaitable."""
        status = functools.partial(self._client.status, job)
        return await self._pool.call(f"status of {_name(job)}", status)

    def results(self, job: Job) -> ResultStream[Result]:
        """``Client.results`` as an async iterator: ``async for result in ...``.

        A bad ``job`` raises here, before anything is read.
        """
        return ResultStream(f"results of {_name(job)}", self._client.results(job))

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
        deadline rules (``vertexbatch._schedule.Schedule``); ``sleep``, if given, is awaited.

        Raises:
            InvalidRequestError: the deadline is not a timezone-aware ``datetime``, or the
                timeout, floor or ceiling is not a number of seconds that fits.
            WaitTimeout: the deadline passed, or the job outlived any Vertex job (96 h).
        """
        return await poll_async(
            self.status,
            cloud_of(self._client).tracing,
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
        requests: Iterable[ClaudeRequest],
        *,
        shard_size: int = DEFAULT_SHARD_SIZE,
        max_attempts: int = 3,
        dedupe: bool = False,
        cache: bool = False,
        cache_ttl: timedelta | None = None,
    ) -> AsyncRun:
        """``Client.run_claude``, awaitable."""
        start = functools.partial(
            self._client.run_claude,
            id,
            model,
            requests,
            shard_size=shard_size,
            max_attempts=max_attempts,
            dedupe=dedupe,
            cache=cache,
            cache_ttl=cache_ttl,
        )
        return AsyncRun(await self._pool.call(f"start of run {id!r}", start), self._pool)

    async def run_gemini(
        self,
        id: str,
        model: str,
        requests: Iterable[GeminiRequest],
        *,
        shard_size: int = DEFAULT_SHARD_SIZE,
        max_attempts: int = 3,
        dedupe: bool = False,
        cache: bool = False,
        cache_ttl: timedelta | None = None,
    ) -> AsyncRun:
        """``Client.run_gemini``, awaitable."""
        start = functools.partial(
            self._client.run_gemini,
            id,
            model,
            requests,
            shard_size=shard_size,
            max_attempts=max_attempts,
            dedupe=dedupe,
            cache=cache,
            cache_ttl=cache_ttl,
        )
        return AsyncRun(await self._pool.call(f"start of run {id!r}", start), self._pool)

    async def open_run(self, id: str) -> AsyncRun:
        """``Client.open_run``, awaitable."""
        opened = functools.partial(self._client.open_run, id)
        return AsyncRun(await self._pool.call(f"opening of run {id!r}", opened), self._pool)


def _name(job: object) -> str:
    """How a log line names a job argument (a bad one is refused by the client's method)."""
    return f"job {job.name}" if isinstance(job, Job) else "a job"
