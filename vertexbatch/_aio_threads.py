"""The blocking core run off the event loop: a client's thread pool (``Pool``, each call with
the caller's context copied in, so spans nest) and ``ResultStream``, a blocking iterator walked
by a producer thread and handed to the loop in chunks through a bounded number of slots, so
neither side holds the whole file.

Cancelling the task that awaits a call cannot stop its thread: a call still queued never
starts, and a call under way runs on to its end; a cancelled call says so in the log, and its
outcome (its job, or the type of its error) is logged when its thread ends.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Generic, TypeVar

from ._lifecycle import closed_error
from ._values import Job

__all__ = ["CHUNK", "FIRST_CHUNK", "SLOTS", "WORKERS", "Pool", "ResultStream"]

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


class Pool:
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
