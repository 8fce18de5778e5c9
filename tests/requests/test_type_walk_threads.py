"""One type walk shared by threads: a record being resolved is never seen half-filled.

The emulator answers requests on many threads and ``client.aio`` checks requests on worker
threads, all through one ``Compiler`` per SDK type. A thread that found a record marked resolved
while another was still filling its fields took a known field for an unknown one: a valid
request refused with a 400 (seen as a rare failure of an online fallback on the local stack).
"""

from __future__ import annotations

import threading
from typing import Any

from vertexbatch._requests.type_walk import Compiler, Unknown, Walk


class _Info:
    """A field's info as pydantic gives it: enough for ``Compiler.resolve``."""

    annotation: Any = int
    alias = None

    def is_required(self) -> bool:
        return False


class _Slow(type):
    """A type whose fields are read while a test holds them, so another thread can look in."""

    reading = threading.Event()
    release = threading.Event()

    @property
    def model_fields(cls) -> dict[str, _Info]:
        cls.reading.set()
        assert cls.release.wait(timeout=60), "the test never released the fields"
        return {"temperature": _Info(), "top_k": _Info()}


class SlowParams(metaclass=_Slow):
    pass


def test_a_thread_waits_for_the_record_another_thread_is_resolving() -> None:
    compiler = Compiler()
    record = compiler.record(SlowParams)
    first = threading.Thread(target=compiler.resolve, args=(record,))
    first.start()
    assert _Slow.reading.wait(timeout=60)  # the first thread is inside, filling the fields
    found: list[Unknown | None] = []
    second = threading.Thread(
        target=lambda: found.append(Walk(compiler, tags=False).find({"temperature": 0.2}, record))
    )
    second.start()
    # The second thread must wait for the fields, not read them half-filled. Joined with a
    # bound only so that a broken lock fails here rather than hanging: the verdict is below.
    second.join(timeout=2)
    _Slow.release.set()
    first.join()
    second.join()
    assert found == [None], "a known field was taken for unknown while its record was resolving"
    assert set(record.fields) == {"temperature", "top_k"}
