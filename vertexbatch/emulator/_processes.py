"""The server processes the local stack starts (fake-gcs-server, bqemulator): stopped with the
stack, and stopped too when the process that started them dies without stopping them.

A stack that stops normally stops its servers (``terminate``). One that cannot, because its
process was killed (SIGKILL: ``kill -9``, a CI job's timeout, the OOM killer), used to leave
them running, holding their ports. So each server gets a ``Watchdog``: a small interpreter that
reads a pipe only the stack's process holds the write end of. The stack writes a byte before it
stops the server itself; if the pipe ends with no byte, every holder of that end is gone, and
the watchdog stops the server (SIGTERM, then SIGKILL after 5 seconds).

The watchdog names the server by a pidfd the stack opened right after starting it, before it
could have reaped it, never by its pid, which may be another process's by then. Where there is
no pidfd (not Linux), there is no watchdog: a killed stack leaves its servers running, as
docs/local-stack.md says.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from typing import IO, ClassVar

__all__ = ["ServerProcess", "Watchdog", "terminate"]

# Run with ``-I -S``: no site, no environment, nothing imported but these modules.
_WATCH = """\
import select, signal, sys
for name in ("SIGINT", "SIGHUP"):  # a terminal's signals are the stack's to act on
    signal.signal(getattr(signal, name), signal.SIG_IGN)
server = int(sys.argv[1])
if sys.stdin.buffer.read(1):
    sys.exit(0)  # the stack stops the server itself
try:
    signal.pidfd_send_signal(server, signal.SIGTERM)
    if not select.select([server], [], [], 5)[0]:  # a pidfd reads ready once its process ends
        signal.pidfd_send_signal(server, signal.SIGKILL)
except ProcessLookupError:
    pass
"""


class Watchdog:
    """Stops ``process`` if the process that started it dies first; ``release`` before stopping
    it normally. Nothing at all where there is no pidfd."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._write: int | None = None
        self._watcher: subprocess.Popen[bytes] | None = None
        try:
            server = os.pidfd_open(process.pid)  # not reaped yet: this pid is still the server's
        except (AttributeError, OSError):  # not Linux, or a kernel before 5.3
            return
        read, write = os.pipe()  # neither end inherited by what is started later (PEP 446)
        try:
            self._watcher = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WATCH, str(server)],
                stdin=read,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(server,),
            )
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
            os.close(server)
        self._write = write

    def release(self) -> None:
        """Tell the watchdog the stack stops the server itself (it exits at once); safe to call
        twice."""
        write, self._write = self._write, None
        if write is not None:
            with contextlib.suppress(OSError):  # it is gone already: nothing to tell it
                os.write(write, b"x")
            os.close(write)

    def reap(self) -> None:
        """Wait for the released watchdog to exit (its interpreter may still be starting)."""
        if self._watcher is not None:
            try:
                self._watcher.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._watcher.kill()
                self._watcher.wait()


def terminate(
    process: subprocess.Popen[bytes],
    log: IO[bytes],
    *,
    timeout: float,
    watchdog: Watchdog | None = None,
) -> None:
    """SIGTERM the process, kill it if it outlives ``timeout`` seconds, and close its log; its
    ``watchdog`` released first and reaped last (both wait at once). Safe to call twice."""
    if watchdog is not None:
        watchdog.release()
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    log.close()
    if watchdog is not None:
        watchdog.reap()


class ServerProcess:
    """A server process the stack started, with its log: ``watch`` it, then ``stop`` it
    (SIGTERM, SIGKILL past ``STOP_TIMEOUT`` seconds, its log closed; safe to call twice)."""

    STOP_TIMEOUT: ClassVar[float] = 5.0

    def __init__(self, process: subprocess.Popen[bytes], log: IO[bytes]) -> None:
        self.process = process
        self._log = log
        self._watchdog: Watchdog | None = None
        self._lock = threading.Lock()

    def watch(self) -> None:
        """Have the server stopped if this process dies without stopping it (``Watchdog``)."""
        self._watchdog = Watchdog(self.process)

    def stop(self) -> None:
        """Terminate the process and wait for it; safe to call twice."""
        with self._lock:
            terminate(self.process, self._log, timeout=self.STOP_TIMEOUT, watchdog=self._watchdog)
