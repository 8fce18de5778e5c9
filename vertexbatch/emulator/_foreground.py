"""Run a LocalStack in the foreground until SIGINT or SIGTERM (`python -m vertexbatch.emulator`)."""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType
from typing import TextIO

from vertexbatch.emulator._options import Timing
from vertexbatch.emulator._stack import LocalStack

__all__ = ["run_foreground"]


def run_foreground(
    *,
    bucket: str = "vertexbatch-local",
    timing: Timing | None = None,
    out: TextIO | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Start a stack, create `bucket`, print the shell environment that points code at it, block.

    Prints `export` lines for STORAGE_EMULATOR_HOST, VERTEXBATCH_VERTEX_ENDPOINT,
    GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION and VERTEXBATCH_BUCKET, then waits for SIGINT or
    SIGTERM (when called from the main thread) or until `stop` is set, then stops both servers.
    """
    out = sys.stdout if out is None else out
    stop = threading.Event() if stop is None else stop

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    in_main = threading.current_thread() is threading.main_thread()
    previous = {}
    if in_main:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, on_signal)
    try:
        with LocalStack(timing=timing or Timing(row_seconds=0.05)) as stack:
            stack.create_bucket(bucket)
            out.write("".join(f"export {k}={v}\n" for k, v in stack.environment(bucket).items()))
            out.flush()
            stop.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
