"""An object staged as parts: bounded pieces of whole lines, each created in one request.

Part 0 is ``STEM.jsonl`` (so an input that fits in one part is laid out as it always was), every
later part ``STEM-NNNNN-<its MD5>.jsonl``: named by its own bytes, so two submitters of other rows
never write the same later part, and one left by a crash never blocks a retry. Part 0 is the one
name other rows can meet: there it exists with other bytes, and the caller refuses them.

Part 0 is created last: its bytes are held until ``finish``, after every line was written (read
and checked by the caller) and every later part created. Rows refused as they stream, or a
crash, leave only later parts (named by their bytes: harmless, and adopted by a retry of the
same rows), never part 0, so no part is ever deleted: one another submitter of the same lines
adopted stays whole (docs/guarantees.md, "Staged parts").

A part is cut before the line that would take it past ``part_size`` (a longer line is a part of
its own), so the same lines always make the same parts. Later parts go up from a small pool
while the next is built, at most ``in_flight`` at once: memory is about ``in_flight + 2`` parts
(part 0 held, one being built; a part is appended to one buffer and sent as it is, never
copied: ``upload.create_in_one_request``). A part that exists with the same MD5 is adopted
(a retry, or a lost answer); one that exists with other bytes is a conflict, after which
nothing more is uploaded (part 0 not at all) but the bytes are still hashed, so the caller can
name both digests.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

__all__ = [
    "IN_FLIGHT",
    "PART_SIZE",
    "PartConflict",
    "PartFolder",
    "PartStore",
    "PartedUpload",
    "parse_part_md5s",
    "part_leaf",
    "part_leaves",
]

# Each part is one request: the storage client's multipart limit (8 MiB), where fake-gcs-server
# enforces create-only (it does not on resumable uploads). 1 GB is 120 parts.
PART_SIZE = 8 * 1024 * 1024
IN_FLIGHT = 2  # parts uploading at once while the next is built

_MD5 = re.compile(r"[0-9a-f]{32}")


def part_leaf(stem: str, index: int, md5: str) -> str:
    """The name (in the id's folder) of part ``index`` of ``stem``, whose MD5 is ``md5``."""
    return f"{stem}.jsonl" if index == 0 else f"{stem}-{index:05d}-{md5}.jsonl"


def part_leaves(stem: str, md5s: tuple[str, ...]) -> list[str]:
    """The names of every part, in order; no MD5s (a manifest of one part): ``STEM.jsonl``."""
    return [part_leaf(stem, index, md5) for index, md5 in enumerate(md5s)] or [f"{stem}.jsonl"]


def parse_part_md5s(value: Any) -> tuple[str, ...] | None:
    """A manifest's list of part MD5s (two or more hex MD5s), ``None`` if it is not one."""
    if not isinstance(value, list) or len(value) < 2:
        return None
    if not all(isinstance(md5, str) and _MD5.fullmatch(md5) for md5 in value):
        return None
    return tuple(value)


class PartConflict(Exception):
    """Part ``index`` exists with other bytes (MD5 ``existing``)."""

    def __init__(self, index: int, existing: str) -> None:
        super().__init__(f"part {index} exists with MD5 {existing}")
        self.index = index
        self.existing = existing


class PartStore(Protocol):
    """What a parted upload needs of ``staging.Staging``: create an object create-only (its
    generation, 0 if it exists) and read an existing one's MD5."""

    def create_bytes(self, name: str, data: bytearray, content_type: str, md5: str) -> int: ...

    def md5(self, name: str) -> str | None: ...


class PartFolder(Protocol):
    """What a parted upload needs of ``staging.Folder``: the object name of a leaf in it."""

    def name(self, leaf: str) -> str: ...


class PartedUpload:
    """Writes whole lines as parts of ``stem`` in ``folder``; ``finish`` creates part 0 (last)
    and gives the parts' MD5s.

    ``conflict`` is set (and nothing more uploaded) once a part is found with other bytes.
    """

    def __init__(
        self,
        staging: PartStore,
        folder: PartFolder,
        stem: str,
        content_type: str,
        *,
        part_size: int = PART_SIZE,
        in_flight: int = IN_FLIGHT,
    ) -> None:
        if part_size <= 0 or in_flight <= 0:
            raise ValueError(f"a part size and a pool are positive, not {part_size}, {in_flight}")
        self._staging = staging
        self._folder = folder
        self._stem = stem
        self._content_type = content_type
        self._part_size = part_size
        self._in_flight = in_flight
        # The part being built: whole lines appended in place, handed over whole (no copy).
        self._pending = bytearray()
        self._first: bytearray | None = None  # part 0, held until ``finish`` creates it last
        self._md5s: list[str] = []  # of every part cut so far, in order
        self._whole = hashlib.md5(usedforsecurity=False)
        # One thread hashes the whole in order; ``in_flight`` threads send parts.
        self._hasher = ThreadPoolExecutor(1, thread_name_prefix="vertexbatch-hash")
        self._pool = ThreadPoolExecutor(in_flight, thread_name_prefix="vertexbatch-part")
        self._hashing: deque[Future[None]] = deque()
        self._sending: deque[Future[str]] = deque()
        self._flushed = False  # every later part sent: part 0 is all that is left
        self._ended = False
        self.conflict: PartConflict | None = None
        self._created: list[str] = []  # the names of the parts this upload created

    def write(self, data: bytes) -> None:
        """Add whole lines (a line never spans two parts)."""
        if self._ended or self._flushed:
            raise RuntimeError(f"write to the parts of {self._stem} after they were finished")
        if self._pending and len(self._pending) + len(data) > self._part_size:
            self._cut()
        self._pending += data

    def _cut(self) -> None:
        part, self._pending = self._pending, bytearray()
        self._md5s.append("")
        index = len(self._md5s) - 1
        while len(self._hashing) >= self._in_flight + 1:
            self._hashing.popleft().result()
        self._hashing.append(self._hasher.submit(self._whole.update, part))  # part 0 first
        if index == 0:  # held: created last, once every line is in (``finish``)
            self._first = part
            return
        self._collect(self._in_flight - 1)  # at most in_flight parts held by the pool
        if self.conflict is None:
            self._sending.append(self._pool.submit(self._send, index, part))
        else:  # still counted: only its MD5, for the manifest of the rows
            self._md5s[index] = hashlib.md5(part, usedforsecurity=False).hexdigest()

    def _collect(self, keep: int) -> None:
        """Wait until at most ``keep`` parts are being sent; a conflict stops the rest."""
        while len(self._sending) > keep:
            try:
                self._sending.popleft().result()
            except PartConflict as exc:
                if self.conflict is None or exc.index < self.conflict.index:
                    self.conflict = exc

    def _send(self, index: int, part: bytearray) -> str:
        md5 = hashlib.md5(part, usedforsecurity=False).hexdigest()
        self._md5s[index] = md5
        name = self._folder.name(part_leaf(self._stem, index, md5))
        generation = self._staging.create_bytes(name, part, self._content_type, md5)
        if generation:
            self._created.append(name)
            return md5
        existing = self._staging.md5(name)
        if existing == md5:  # a retry's, or a lost answer: the same bytes, adopted
            return md5
        raise PartConflict(index, existing or "unknown")

    def md5s(self) -> tuple[str, ...]:
        """The MD5 of each part, in order (after ``finish``)."""
        return tuple(self._md5s)

    def md5_hex(self) -> str:
        """The MD5 (hex) of every byte written, all parts in order (after ``finish``)."""
        return self._whole.hexdigest()

    def flush(self) -> None:
        """Cut the last part and wait until every later part is written; part 0 is not yet
        (``finish``). No line can be written after. Any failure ends the upload before it is
        raised; the later parts written stay (a retry of the same rows adopts them)."""
        if self._ended:
            raise RuntimeError(f"finish the parts of {self._stem} twice")
        if self._flushed:
            return
        try:
            if self._pending or not self._md5s:
                self._cut()
            self._flushed = True
            self._collect(0)
            for hashing in self._hashing:
                hashing.result()
        except BaseException:
            self.abort()
            raise

    def finish(self) -> tuple[str, ...]:
        """Write every later part (``flush``), then create part 0, last: the parts' MD5s, in
        order.

        Check ``conflict`` after: a part found with other bytes (part 0 is then not written).
        Any other failure ends the upload before it is raised.
        """
        self.flush()
        first, self._first = self._first, None
        assert first is not None  # the first cut holds it
        try:
            if self.conflict is None:
                try:
                    self._send(0, first)
                except PartConflict as exc:
                    self.conflict = exc
            else:  # a later part conflicted: the rows are refused, part 0 is not written
                self._md5s[0] = hashlib.md5(first, usedforsecurity=False).hexdigest()
        except BaseException:
            self.abort()
            raise
        self._ended = True
        self._shutdown()
        return self.md5s()

    @property
    def created(self) -> int:
        """How many parts this upload created (the rest were there already)."""
        return len(self._created)

    def abort(self) -> None:
        """Stop: parts not yet sent never are (part 0 among them), those in flight are waited
        for. The later parts already written stay, whole: named by their bytes, they block no
        one, and a retry of the same rows adopts them. No part is ever deleted (another
        submitter of the same lines may have adopted it)."""
        self._ended = True
        self._pending = bytearray()
        self._first = None
        futures: list[Future[Any]] = [*self._sending, *self._hashing]
        for future in futures:
            future.cancel()
        for future in futures:
            with contextlib.suppress(BaseException):  # the caller is handling an error already
                future.result()
        self._sending.clear()
        self._hashing.clear()
        self._shutdown()

    def _shutdown(self) -> None:
        self._pool.shutdown(wait=True)
        self._hasher.shutdown(wait=True)
