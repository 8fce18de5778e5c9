"""Stopping a server process the local stack started (fake-gcs-server, bqemulator)."""

from __future__ import annotations

import signal
import subprocess
from typing import IO

__all__ = ["terminate"]


def terminate(process: subprocess.Popen[bytes], log: IO[bytes], *, timeout: float) -> None:
    """SIGTERM the process, kill it if it outlives ``timeout`` seconds, and close its log; safe
    to call twice."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    log.close()
