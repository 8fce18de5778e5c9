"""The SDK half of LocalStack: the Google clients, configured for the stack.

`jobs_client()` and `storage_client()` are the clients the project's tests use; the recipes
for code that drives Vertex through the SDKs themselves are in docs/testing.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from google.auth.credentials import AnonymousCredentials
from google.cloud import storage  # type: ignore[attr-defined,unused-ignore]

if TYPE_CHECKING:
    from google.cloud.aiplatform_v1 import JobServiceClient

__all__ = ["StackSdk"]


class StackSdk:
    """LocalStack's client factories; the endpoints are LocalStack's (started) own."""

    project: str
    location: str

    if TYPE_CHECKING:

        @property
        def vertex_endpoint(self) -> str: ...

        @property
        def storage_endpoint(self) -> str: ...

    def jobs_client(self) -> JobServiceClient:
        """An aiplatform_v1.JobServiceClient on the REST transport, anonymous, at the stack."""
        from google.cloud import aiplatform_v1

        client: JobServiceClient = aiplatform_v1.JobServiceClient(
            transport="rest",
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": self.vertex_endpoint},
        )
        return client

    def storage_client(self) -> storage.Client:
        """A google.cloud.storage.Client on fake-gcs-server, anonymous."""
        return storage.Client(
            project=self.project,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": self.storage_endpoint},
        )
