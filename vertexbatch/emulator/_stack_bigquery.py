"""The BigQuery half of LocalStack: its server's endpoints, its variables and the real clients.

`LocalStack(bigquery=True)` starts a bqemulator beside fake-gcs-server (`_bigquery.py`);
without it, or without the `bigquery-local` extra, these methods raise RuntimeError saying
which, and the Vertex service answers a BigQuery create with a 400 saying the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vertexbatch.emulator._bigquery import MISSING_EXTRA, BigQueryServer, missing_modules
from vertexbatch.emulator._bq_run import NO_BIGQUERY

if TYPE_CHECKING:
    from google.cloud import bigquery, bigquery_storage_v1

__all__ = ["BIGQUERY_HOST", "BIGQUERY_STORAGE_HOST", "StackBigQuery"]

# Read by google-cloud-bigquery (`google.cloud.bigquery._helpers._get_bigquery_host`): the REST
# endpoint, scheme included. It does not switch credentials: pass AnonymousCredentials.
BIGQUERY_HOST = "BIGQUERY_EMULATOR_HOST"
# Read by no Google client (the Storage clients honour no emulator variable): the stack's own
# name for its Storage Read/Write gRPC endpoint, `127.0.0.1:PORT`, plaintext.
BIGQUERY_STORAGE_HOST = "VERTEXBATCH_BIGQUERY_STORAGE_HOST"


class StackBigQuery:
    """LocalStack's BigQuery methods; `_bigquery_server` is the running server or None."""

    _bigquery_server: BigQueryServer | None
    project: str

    def _bigquery(self) -> BigQueryServer:
        if self._bigquery_server is None:
            message = MISSING_EXTRA if missing_modules() else NO_BIGQUERY
            raise RuntimeError(message)
        return self._bigquery_server

    @property
    def bigquery_endpoint(self) -> str:
        """bqemulator's REST API, `http://127.0.0.1:PORT` (the value of BIGQUERY_EMULATOR_HOST)."""
        return self._bigquery().rest_url

    @property
    def bigquery_grpc_target(self) -> str:
        """bqemulator's Storage Read/Write gRPC API, `127.0.0.1:PORT` (plaintext)."""
        return self._bigquery().grpc_target

    @property
    def bigquery_pid(self) -> int:
        """The bqemulator process id (tests check it is gone after stop)."""
        return self._bigquery().process.pid

    def bigquery_client(self, project: str | None = None) -> bigquery.Client:
        """A `google.cloud.bigquery.Client` on the stack's BigQuery, anonymous (default project:
        the stack's; any project id works, each with its own datasets)."""
        return self._bigquery().client(project or self.project)

    def bigquery_read_client(self) -> bigquery_storage_v1.BigQueryReadClient:
        """A Storage Read API client on the stack's BigQuery (insecure channel, no size caps)."""
        return self._bigquery().read_client()

    def bigquery_write_client(self) -> bigquery_storage_v1.BigQueryWriteClient:
        """A Storage Write API client on the stack's BigQuery (insecure channel, no size caps)."""
        return self._bigquery().write_client()

    def bigquery_environment(self) -> dict[str, str]:
        """BIGQUERY_EMULATOR_HOST and VERTEXBATCH_BIGQUERY_STORAGE_HOST; {} without BigQuery."""
        server = self._bigquery_server
        if server is None:
            return {}
        return {BIGQUERY_HOST: server.rest_url, BIGQUERY_STORAGE_HOST: server.grpc_target}
