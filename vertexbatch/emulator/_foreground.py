"""Run a LocalStack in the foreground until SIGINT, SIGTERM or SIGHUP.

`vertexbatch emulator` and `python -m vertexbatch.emulator` call `run_foreground`. From a shell,
the one recommended way is fixed ports and an environment file, sourced where it is needed::

    vertexbatch emulator --port 9100 --gcs-port 9101 --env-file .vertexbatch.env    # shell 1
    source .vertexbatch.env                                                         # shell 2

The file appears, whole, once the stack serves, and is removed when it stops; a stack restarted
on the same ports writes the same exports, so a shell that sourced them keeps working. Its first
line names the emulator that wrote it (its pid and endpoints): another emulator given the same
file while that one still serves refuses to start (``EnvFileInUse``) rather than overwrite it; a
file left by one that is gone (killed) is replaced.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from vertexbatch.emulator._catalogue import model_option
from vertexbatch.emulator._options import Timing
from vertexbatch.emulator._stack import LocalStack

__all__ = ["EnvFileInUse", "export_lines", "run_foreground"]

# The first line of an environment file, naming the emulator that wrote it.
_HEADER = "# vertexbatch emulator, pid {pid}: Vertex {vertex}, GCS {storage}\n"
_HEADER_LINE = re.compile(r"# vertexbatch emulator, pid (\d+): Vertex (http://\S+), GCS \S+")


class EnvFileInUse(FileExistsError):
    """The environment file is another emulator's, and that emulator still serves.

    Attributes:
        path: the file.
        pid: that emulator's process id.
        vertex: the Vertex endpoint it serves, as its file says.
    """

    def __init__(self, path: Path, pid: int, vertex: str) -> None:
        super().__init__(
            f"{path} is the environment file of the vertexbatch emulator with pid {pid}, which "
            f"still serves at {vertex}: stop that one first (kill {pid}), or give this one "
            "another --env-file"
        )
        self.path = path
        self.pid = pid
        self.vertex = vertex


def export_lines(environment: Mapping[str, str]) -> str:
    """The environment as shell ``export NAME=value`` lines (values quoted where needed)."""
    return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in environment.items())


def run_foreground(
    *,
    bucket: str = "vertexbatch-local",
    timing: Timing | None = None,
    out: TextIO | None = None,
    stop: threading.Event | None = None,
    port: int = 0,
    gcs_port: int = 0,
    env_file: str | os.PathLike[str] | None = None,
    err: TextIO | None = None,
    probe_report: str | os.PathLike[str] | None = None,
    bigquery: bool = False,
    locations: Iterable[str] = (),
    state_dir: str | os.PathLike[str] | None = None,
    models: Iterable[str] = (),
) -> None:
    """Start a stack, create `bucket`, print the shell environment that points code at it, block.

    Prints `export` lines for STORAGE_EMULATOR_HOST, VERTEXBATCH_VERTEX_ENDPOINT,
    GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION and VERTEXBATCH_BUCKET to `out` (default
    stdout) and, with `env_file`, writes them to that file too; a line on `err` (default
    stderr) says how to stop it. Then waits for SIGINT, SIGTERM or SIGHUP (when called from the
    main thread) or until `stop` is set, and stops both servers, freeing their ports.

    Args:
        port: the Vertex service's port (0: a free one).
        gcs_port: fake-gcs-server's port (0: a free one).
        env_file: written atomically once the stack serves (a file left by an earlier stack is
            removed first, so it never names a stack that is not there); removed on stop. The
            file of another emulator that still serves is never touched: refused.
        probe_report: a `vertexbatch probe` report: the stack behaves as it says
            (`LocalStack.from_probe_report`), paced by `timing`.
        bigquery: start the stack's BigQuery too (`LocalStack(bigquery=True)`); the exports
            then add BIGQUERY_EMULATOR_HOST and VERTEXBATCH_BIGQUERY_STORAGE_HOST.
        locations: locations served besides `DEFAULT_LOCATIONS` (`LocalStack(locations=)`).
        state_dir: keep jobs and GCS objects there across restarts (`LocalStack(state_dir=)`);
            None: in memory, gone when the stack stops.
        models: models served besides the default catalogue, each `PUBLISHER/MODEL`
            (`LocalStack.add_model`).

    Raises:
        OSError: a fixed port is in use (``errno.EADDRINUSE``), or the report cannot be read.
        FileExistsError: ``env_file`` is the file of another emulator that still serves
            (``EnvFileInUse``: its ``pid``); nothing was started.
        ValueError: the report is not a probe report, or a model is not `PUBLISHER/MODEL`
            (the message starts with "model ").
        RuntimeError: BigQuery was asked for and the `bigquery-local` extra is missing.
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    stop = threading.Event() if stop is None else stop
    path = Path(env_file) if env_file is not None else None

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is not None:
                previous[signum] = signal.signal(signum, on_signal)
    added = [model_option(text) for text in models]  # refused before anything starts
    written = ""
    try:
        if path is not None:
            _refuse_if_live(path)  # before anything starts: a live emulator's file is left alone
            path.unlink(missing_ok=True)
        pacing = timing or Timing(row_seconds=0.05)
        options: dict[str, Any] = {
            "port": port,
            "gcs_port": gcs_port,
            "bigquery": bigquery,
            "locations": tuple(locations),
            "state_dir": state_dir,
        }
        if probe_report is not None:
            local = LocalStack.from_probe_report(probe_report, timing=pacing, **options)
        else:
            local = LocalStack(timing=pacing, **options)
        for publisher, model in added:
            local.add_model(publisher, model)
        with local as stack:
            stack.create_bucket(bucket)
            exports = export_lines(stack.environment(bucket))
            if path is not None:
                head = _HEADER.format(
                    pid=os.getpid(), vertex=stack.vertex_endpoint, storage=stack.storage_endpoint
                )
                _refuse_if_live(path)  # one may have started meanwhile, while this one did
                written = head + exports
                _write_whole(path, written)
            out.write(exports)
            out.flush()
            where = f"; its environment is in {path} (source it)" if path is not None else ""
            err.write(f"vertexbatch: local stack serving until Ctrl-C or SIGTERM{where}\n")
            err.flush()
            # Woken often: a signal another thread takes (a connection's, say) sets no flag in
            # a wait without a timeout, and the main thread would never run the handler.
            while not stop.wait(0.2):
                pass
    finally:
        if path is not None and written:
            _remove_if(path, written)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _refuse_if_live(path: Path) -> None:
    """Raise ``EnvFileInUse`` if ``path`` names an emulator that still serves: its process is
    alive and its Vertex endpoint takes connections (either alone could be a pid reused, or
    another server on a port freed since). A file that is not there, not an emulator's, or
    names one that is gone is not in use."""
    try:
        first = path.read_text().partition("\n")[0]
    except (FileNotFoundError, UnicodeDecodeError):
        return
    found = _HEADER_LINE.fullmatch(first)
    if found is None:
        return
    pid, vertex = int(found.group(1)), found.group(2)
    if _alive(pid) and _serving(vertex):
        raise EnvFileInUse(path, pid, vertex)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (on Windows, where signal 0 would end it: assumed)."""
    if os.name == "nt":  # pragma: no cover - the endpoint check decides there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def _serving(url: str) -> bool:
    """Whether something accepts connections at ``http://host:port``."""
    host, _, port = url.removeprefix("http://").rstrip("/").rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1.0):
            return True
    except (OSError, ValueError):
        return False


def _write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader sees no file or the whole of it."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _remove_if(path: Path, text: str) -> None:
    """Remove ``path`` if it still holds ``text`` (another stack may have written it since)."""
    with contextlib.suppress(OSError):
        if path.read_text() == text:
            path.unlink()
