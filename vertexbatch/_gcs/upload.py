"""Create-only uploads to GCS: one request up to 8 MiB, past that GCS's resumable protocol.

The resumable protocol is spoken here, over the storage client's own authorized session, rather
than through google-cloud-storage's ``BlobWriter``, for memory: the writer copies a chunk into
its buffer and again into the request's body, so with the chunk being built that is three
chunks held at the peak. Here the bytes written are appended to one bytearray, which is handed
over whole as a chunk's request body (no copy, one MD5 call, one buffer to send): two chunks at
the peak, so chunks are 16 MiB in less memory than three of 10 MiB.
Bigger chunks are fewer requests, and fake-gcs-server checksums the whole object again on each
one (100 MB took 1.2 to 1.5 s in 10 MiB chunks, about 1.0 s in 16 MiB, on this machine).

The protocol itself (sessions, chunks, resuming after a lost answer) is ``_resumable``'s. A 412
(at the start or the end) means the object exists: nothing is written and ``finish`` says so.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING

from google.api_core import exceptions as api_exceptions

from .._retry import RetryPolicy
from .resumable import Chunk, Session, after, check_offset

if TYPE_CHECKING:
    import google.cloud.storage as storage

__all__ = ["CHUNK", "SINGLE_REQUEST_LIMIT", "SMALL_CHUNK", "CreateOnlyUpload"]

logger = logging.getLogger("vertexbatch")

# Objects up to this size go in one (multipart) request: the storage client's own limit for
# multipart uploads, and fake-gcs-server enforces create-only on those (not on resumable ones).
SINGLE_REQUEST_LIMIT = 8 * 1024 * 1024
# Resumable chunks: a multiple of 256 KiB, as the protocol requires. Two are held at the peak
# (one in flight, one being built; a bytearray keeps up to a tenth more as slack): staging
# 60,000 requests peaks at 32 MB of Python memory, under integration_tests/test_memory.py's
# bound of 48 MB. fake-gcs-server's answer to a chunk
# takes longer the larger the object already is (docs/performance.md; the input is staged in
# parts since; this path carries the objects that are not, such as cached and online answers).
CHUNK = 16 * 1024 * 1024
# Smaller chunks for an object that is a few MB at most (a key map: ~85 bytes a request): sent
# while the lines are built, so little is left to send once they are.
SMALL_CHUNK = 4 * 1024 * 1024
# Every chunk but the last is a multiple of this (the protocol's rule).
_QUANTUM = 256 * 1024
# While a chunk is being sent, the thread writing lets go of the interpreter lock every this
# many bytes: the sending thread needs it after each socket call, and would otherwise wait for
# the switch interval (5 ms) each time while lines are built, which holds the server up too.
_YIELD_EVERY = 64 * 1024


def _let_sender_run() -> None:
    """Let go of the interpreter lock, so a thread waiting for it (the sending one) takes it."""
    time.sleep(0)


class CreateOnlyUpload:
    """Streams bytes into a new object; finalises it only on ``finish``, and never overwrites.

    If the object already exists the bytes are dropped and ``finish`` returns ``False``. Past
    one request's size, chunks are sent by one background thread while the caller builds the
    next (at most one in flight), so serialising lines and uploading overlap.
    """

    def __init__(
        self,
        blob: storage.Blob,
        content_type: str,
        policy: RetryPolicy,
        custom_time: datetime | None = None,
        chunk: int | None = None,
        *,
        single_request_limit: int = SINGLE_REQUEST_LIMIT,
        let_sender_run: Callable[[], None] = _let_sender_run,
    ) -> None:
        # ``single_request_limit`` and ``let_sender_run`` are the module's by default; tests
        # pass a small limit, and a hook that counts the times the writer lets go.
        self._blob = blob
        self._single_request_limit = single_request_limit
        self._let_sender_run = let_sender_run
        self._chunk = CHUNK if chunk is None else chunk
        if self._chunk <= 0 or self._chunk % _QUANTUM:
            raise ValueError(f"an upload chunk is a positive multiple of 256 KiB, not {chunk}")
        self._handed = 0  # bytes handed to chunks: the total states them, not GCS's count
        self._done = False  # finished (created, or found to exist): nothing left to abort
        self._ended: str | None = None  # "finished" or "abandoned": no more writes
        # The MD5 of every byte written, taken by the sending thread chunk by chunk (hashlib lets
        # go of the GIL on large buffers): off the thread that builds the lines.
        self._md5 = hashlib.md5(usedforsecurity=False)
        self._pending_hashed = False  # the bytes pending are in the digest already
        self._digest_taken = False
        self._content_type = content_type
        self._policy = policy
        self._custom_time = custom_time
        # The bytes not yet handed to a chunk, appended in place (a growing bytearray is
        # extended without copying what it holds); a whole chunk is handed over as it is.
        self._pending = bytearray()
        self._unyielded = 0
        self._session: Session | None = None
        self._sender: ThreadPoolExecutor | None = None
        self._in_flight: Future[None] | None = None
        self.exists = False

    def write(self, data: bytes) -> None:
        if self._digest_taken:
            raise RuntimeError("write after md5_hex(): the digest would miss these bytes")
        self._check_open("write to")
        if self.exists:
            self._md5.update(data)  # the digest still counts: it tells whose object it is
            return
        self._pending += data
        self._unyielded += len(data)
        if self._unyielded >= _YIELD_EVERY:
            self._unyielded = 0
            if self._in_flight is not None and not self._in_flight.done():
                self._let_sender_run()
        if len(self._pending) >= self._chunk and (
            self._session is not None or len(self._pending) > self._single_request_limit
        ):
            # Past one request's size, whole chunks go; the rest waits for more or for finish.
            self._send_whole_chunks()

    def _send_whole_chunks(self) -> None:
        chunk = self._chunk
        while len(self._pending) >= chunk and not self.exists:
            self._settle()  # before the split: a drop hashes all that is pending, in order
            if self.exists:
                break
            head = self._pending
            self._pending = head[chunk:]  # what is past the chunk: usually part of one line
            del head[chunk:]
            self._handed += chunk
            if self._sender is None:
                self._sender = ThreadPoolExecutor(1, thread_name_prefix="vertexbatch-upload")
            self._in_flight = self._sender.submit(self._upload, memoryview(head), None)
        if self.exists:
            self._pending = bytearray()

    def _upload(self, chunk: Chunk, total: int | None, hashed: bool = False) -> None:
        """Send one chunk under the retry policy, resuming where GCS says it stopped."""
        if not hashed:
            self._md5.update(chunk)  # one call: the interpreter lock is let go once
        name = self._blob.name
        if self._session is None:
            self._session = self._policy.call(
                f"start upload of {name}",
                lambda: Session(self._blob, self._content_type, self._custom_time),
            )
        session = self._session
        if total is not None:  # the last chunk: every byte is hashed by now
            session.md5 = base64.b64encode(self._md5.digest()).decode("ascii")
        start = session.sent
        failed = False

        def attempt() -> None:
            nonlocal failed
            if failed and session.resume(total):
                return  # the last chunk's answer was lost: the object is complete
            failed = True
            check_offset(name, session.sent - start, len(chunk))
            rest = after(chunk, session.sent - start)
            if len(rest) or total is not None:  # a chunk GCS holds whole is not sent again
                session.send(rest, total)

        self._policy.call(f"upload {name}", attempt)

    def _settle(self) -> None:
        """Wait for the chunk in flight; a 412 means the object exists. Any other failure ends
        the upload before it is raised (its session cancelled, its thread ended), whoever
        called: a caller that does not abort leaves nothing behind."""
        if self._in_flight is None:
            return
        in_flight, self._in_flight = self._in_flight, None
        try:
            in_flight.result()
        except api_exceptions.PreconditionFailed:
            self._drop()
        except BaseException:
            self.abort()
            raise

    def _drop(self) -> None:
        self.exists = True
        self._hash_pending()
        self._pending_hashed = False  # nothing is pending now
        self._pending = bytearray()
        self._stop_sender()

    def _stop_sender(self) -> None:
        if self._sender is not None:
            self._sender.shutdown()
            self._sender = None

    def _hash_pending(self) -> None:
        if not self._pending_hashed:
            self._md5.update(self._pending)
            self._pending_hashed = True

    def md5_hex(self) -> str:
        """The MD5 (hex) of every byte written; call after the last write."""
        self._settle()  # the chunk in flight is hashed before it is sent
        self._hash_pending()
        self._digest_taken = True
        return self._md5.hexdigest()

    def finish(self) -> bool:
        """Finalise the object; ``True`` if this call created it, ``False`` if it existed.

        Once called, the upload takes no more writes; one that fails is abandoned (its session
        cancelled) before the error is raised.
        """
        self._check_open("finish")
        self._ended = "finished"
        try:
            self._settle()
            if self.exists:
                self._done = True
                return False
            self._hash_pending()
            last = self._pending
            if self._session is None and len(last) <= self._single_request_limit:
                return self._one_request()
            # The last chunk (any size, even none) states the total of the bytes written.
            self._pending = bytearray()
            self._upload(memoryview(last), self._handed + len(last), hashed=True)
            self._done = True
            return True
        except api_exceptions.PreconditionFailed:
            self._drop()
            self._done = True
            return False
        except BaseException:
            self.abort()
            raise
        finally:
            self._stop_sender()

    def _one_request(self) -> bool:
        self._done = True  # created, or raised: a one-request upload leaves no session
        data = bytes(self._pending)
        self._pending = bytearray()
        if self._custom_time is not None:
            self._blob.custom_time = self._custom_time
        self._policy.call(
            f"upload {self._blob.name}",
            lambda: self._blob.upload_from_string(
                data, content_type=self._content_type, if_generation_match=0, retry=None
            ),
        )
        return True

    def _check_open(self, what: str) -> None:
        if self._ended is not None:
            raise RuntimeError(
                f"{what} the upload of {self._blob.name} after it was {self._ended}: "
                "start a new upload"
            )

    def abort(self) -> None:
        """Abandon the upload; nothing is created. Once finished, nothing is left to abort."""
        if self._done:
            return
        self._ended = "abandoned"
        self._pending = bytearray()
        if self._in_flight is not None:
            self._in_flight.cancel()
            with contextlib.suppress(Exception):  # the caller is already handling an error
                self._in_flight.result()
            self._in_flight = None
        self._stop_sender()
        session, self._session = self._session, None
        if session is not None:
            try:
                session.cancel()
            except Exception as exc:  # an unfinished session creates nothing: say so, go on
                logger.warning(
                    "could not cancel the upload session of %s (%s): it expires unfinished",
                    self._blob.name,
                    type(exc).__name__,
                )
