"""The local stack's BigQuery: a bqemulator process on loopback, REST plus the Storage gRPC API.

bqemulator (the `bigquery-local` extra) is DuckDB-backed and serves the BigQuery REST API and
the Storage Read/Write gRPC API, which the real `google-cloud-bigquery` and
`google-cloud-bigquery-storage` clients reach unchanged (docs/local-stack.md, "BigQuery", has
the evaluation and its gaps). Three settings make it start and serve here:

- DuckDB's `spatial` extension is required at start-up and DuckDB downloads it from its own
  server: the extension shipped in the `duckdb-extension-spatial` wheel is linked into a private
  HOME, where DuckDB looks (`$HOME/.duckdb/extensions/VERSION/PLATFORM/`), so nothing is fetched.
- BQEMU_ENABLE_FORMAT_EXTENSIONS=false: no attempt to download the avro extension (used only by
  AVRO load and extract jobs).
- BQEMU_WRITE_API_MAX_REQUEST_BYTES raised: it also sets the gRPC send cap, which a Storage read
  page holding one row of more than 11 MiB (the default) would pass.

It runs through `_bq_pages` (`python -c LAUNCH`), which bounds a Storage Read stream's pages as
BigQuery does (at most 1,024 rows and about 10 MiB a message; bqemulator alone sends up to
65,536 rows a message).

The clients: `bigquery.Client` with the REST endpoint and anonymous credentials; the Storage
clients on an insecure gRPC channel with no message-size caps (an `api_endpoint` alone would
open TLS to a plaintext server).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from vertexbatch.emulator._bq_pages import LAUNCH
from vertexbatch.emulator._gcs import free_port

if TYPE_CHECKING:
    from google.cloud import bigquery, bigquery_storage_v1

from ._processes import ServerProcess

__all__ = [
    "MISSING_EXTRA",
    "BigQueryServer",
    "missing_modules",
    "require_bigquery",
    "start_bigquery",
]

MISSING_EXTRA = (
    "the local stack's BigQuery needs the bigquery-local extra, from a checkout of vertexbatch: "
    "pip install '.[bigquery-local]' (or 'WHEEL[bigquery-local]' for a wheel built from it)"
)
# What the stack's BigQuery imports or runs: the server, its engine and extension, the clients.
_MODULES = (
    "bqemulator",
    "duckdb",
    "duckdb_extension_spatial",
    "numpy",
    "google.cloud.bigquery",
    "google.cloud.bigquery_storage_v1",
    "pyarrow",
)
_START_ATTEMPTS = 3
_READY_TIMEOUT = 60.0
# 256 MiB: a Storage write request, or a read page of one very long row.
_MAX_MESSAGE_BYTES = 256 * 1024 * 1024
_GRPC_OPTIONS = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]


def missing_modules(find: Callable[[str], Any] = importlib.util.find_spec) -> list[str]:
    """The modules of the `bigquery-local` extra that cannot be imported (empty: all there)."""
    missing = []
    for name in _MODULES:
        try:
            found = find(name)
        except (ImportError, ValueError):  # a parent package is missing
            found = None
        if found is None:
            missing.append(name)
    return missing


def require_bigquery(find: Callable[[str], Any] = importlib.util.find_spec) -> None:
    """Raise RuntimeError with the install hint unless the `bigquery-local` extra is installed."""
    missing = missing_modules(find)
    if missing:
        raise RuntimeError(f"{MISSING_EXTRA} (missing: {', '.join(missing)})")


class BigQueryServer(ServerProcess):
    """A running bqemulator; `stop` sends SIGTERM (then SIGKILL) and reaps it."""

    STOP_TIMEOUT = 10.0

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        rest_port: int,
        grpc_port: int,
        project: str,
        log: IO[bytes],
    ) -> None:
        super().__init__(process, log)
        self.rest_port = rest_port
        self.grpc_port = grpc_port
        self.project = project

    @property
    def rest_url(self) -> str:
        """`http://127.0.0.1:PORT`, the REST API (the value of BIGQUERY_EMULATOR_HOST)."""
        return f"http://127.0.0.1:{self.rest_port}"

    @property
    def grpc_target(self) -> str:
        """`127.0.0.1:PORT`, the Storage Read/Write gRPC API (plaintext)."""
        return f"127.0.0.1:{self.grpc_port}"

    def client(self, project: str | None = None) -> bigquery.Client:
        """A `google.cloud.bigquery.Client` on the REST API, anonymous."""
        from google.api_core.client_options import ClientOptions
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import bigquery

        return bigquery.Client(
            project=project or self.project,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options=ClientOptions(api_endpoint=self.rest_url),
        )

    def read_client(self) -> bigquery_storage_v1.BigQueryReadClient:
        """A `BigQueryReadClient` (Storage Read API) on an insecure channel with no size caps."""
        import grpc
        from google.cloud import bigquery_storage_v1
        from google.cloud.bigquery_storage_v1.services.big_query_read.transports import (
            BigQueryReadGrpcTransport,
        )

        channel = grpc.insecure_channel(self.grpc_target, options=_GRPC_OPTIONS)
        return bigquery_storage_v1.BigQueryReadClient(  # type: ignore[no-untyped-call]
            transport=BigQueryReadGrpcTransport(channel=channel)
        )

    def write_client(self) -> bigquery_storage_v1.BigQueryWriteClient:
        """A `BigQueryWriteClient` (Storage Write API) on an insecure channel with no caps."""
        import grpc
        from google.cloud import bigquery_storage_v1
        from google.cloud.bigquery_storage_v1.services.big_query_write.transports import (
            BigQueryWriteGrpcTransport,
        )

        channel = grpc.insecure_channel(self.grpc_target, options=_GRPC_OPTIONS)
        return bigquery_storage_v1.BigQueryWriteClient(  # type: ignore[no-untyped-call]
            transport=BigQueryWriteGrpcTransport(channel=channel)
        )


def _duckdb_home(home: Path) -> Path:
    """A HOME whose DuckDB extension directory holds the wheel's spatial extension (linked)."""
    import duckdb
    import duckdb_extension_spatial

    package = Path(next(iter(duckdb_extension_spatial.__path__)))
    shipped = next(package.glob("extensions/v*/spatial.duckdb_extension"))
    platform = duckdb.execute("PRAGMA platform").fetchone()
    assert platform is not None
    target = home / ".duckdb" / "extensions" / shipped.parent.name / str(platform[0])
    target.mkdir(parents=True, exist_ok=True)
    link = target / shipped.name
    if not link.exists():
        link.symlink_to(shipped)
    return home


def _ready(server: BigQueryServer, deadline: float) -> bool:
    """Wait for REST `/readyz`, then for the gRPC port (it binds after REST answers)."""
    import grpc

    pause = threading.Event()
    while True:
        if server.process.poll() is not None or time.monotonic() > deadline:
            return False
        try:
            with urllib.request.urlopen(f"{server.rest_url}/readyz", timeout=1) as response:
                if response.status == 200:
                    break
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        pause.wait(0.02)
    channel = grpc.insecure_channel(server.grpc_target)
    try:
        grpc.channel_ready_future(channel).result(timeout=max(deadline - time.monotonic(), 0.1))
    except grpc.FutureTimeoutError:
        return False
    finally:
        channel.close()
    return server.process.poll() is None


def start_bigquery(
    work_dir: Path, *, project: str, rest_port: int = 0, grpc_port: int = 0
) -> BigQueryServer:
    """Start bqemulator (in memory) on loopback ports (0: free ones), its log in work_dir.

    Raises:
        RuntimeError: the `bigquery-local` extra is missing, or the server did not become ready
            (after a few free ports, or on the fixed ones); the message has the log's tail.
    """
    require_bigquery()
    home = _duckdb_home(work_dir / "bigquery-home")
    log_path = work_dir / "bqemulator.log"
    env = dict(
        os.environ,
        HOME=str(home),
        BQEMU_ENABLE_FORMAT_EXTENSIONS="false",
        BQEMU_WRITE_API_MAX_REQUEST_BYTES=str(_MAX_MESSAGE_BYTES),
    )
    fixed = bool(rest_port or grpc_port)
    for _ in range(1 if fixed else _START_ATTEMPTS):
        rest = rest_port or free_port()
        grpc_ = grpc_port or free_port()
        log = open(log_path, "ab")  # noqa: SIM115 - closed by BigQueryServer.stop
        command = [
            sys.executable, "-c", LAUNCH, str(Path(__file__).with_name("_bq_pages.py")),
            "start",
            "--rest-host", "127.0.0.1", "--rest-port", str(rest),
            "--grpc-host", "127.0.0.1", "--grpc-port", str(grpc_),
            "--project", project, "--log-level", "warning",
        ]  # fmt: skip
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=work_dir,  # no .bqemu.toml of the caller's is read
            )
        except BaseException:
            log.close()
            raise
        server = BigQueryServer(process, rest, grpc_, project, log)
        try:
            server.watch()
            if _ready(server, time.monotonic() + _READY_TIMEOUT):
                return server
        except BaseException:
            server.stop()
            raise
        server.stop()  # lost a port race, or a slow start: try other ports
    with contextlib.suppress(OSError):
        tail = log_path.read_text(errors="replace")[-800:]
        raise RuntimeError(f"bqemulator did not start; log tail: {tail!r}")
    raise RuntimeError("bqemulator did not start")
