"""The SDK half of LocalStack: the Google clients, configured for the stack.

`jobs_client()` and `storage_client()` are the clients the project's tests use;
`aiplatform_init()` configures the high-level google.cloud.aiplatform (and vertexai, which
shares its configuration) and `genai_client()` builds a google.genai.Client, so that code
driving Vertex through the SDKs needs no recipe (docs/testing.md has one for each anyway).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from google.auth.credentials import AnonymousCredentials
from google.cloud import storage  # type: ignore[attr-defined,unused-ignore]

if TYPE_CHECKING:
    from google import genai
    from google.cloud.aiplatform_v1 import JobServiceClient

    from vertexbatch.emulator._jobs import JobStore

# Read by google-cloud-storage, which aiplatform's `iter_outputs()` builds its client with.
STORAGE_EMULATOR_HOST = "STORAGE_EMULATOR_HOST"

__all__ = ["StackSdk"]


class StackSdk:
    """LocalStack's client factories; the endpoints are LocalStack's (started) own."""

    project: str
    location: str

    def _running(self) -> tuple[Any, Any, JobStore, Any]:
        raise NotImplementedError  # LocalStack's

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

    @contextlib.contextmanager
    def aiplatform_init(self, **kwargs: Any) -> Iterator[ModuleType]:
        """Configure google.cloud.aiplatform (and vertexai) for the stack, inside a with block.

        Calls `aiplatform.init(project=, location=, api_endpoint=<the http:// endpoint>,
        api_transport="rest", credentials=AnonymousCredentials(), **kwargs)` (gRPC or an
        https endpoint would try TLS against the plaintext server) and sets
        `os.environ["STORAGE_EMULATOR_HOST"]`, which `BatchPredictionJob.iter_outputs()` needs.
        On exit both are restored: aiplatform's global configuration and the variable (removed
        if it was unset). Yields the `google.cloud.aiplatform` module. Not thread-safe, as
        `aiplatform.init` and `os.environ` are process-wide.
        """
        from google.cloud import aiplatform
        from google.cloud.aiplatform import initializer

        config = initializer.global_config
        saved = dict(vars(config))
        previous = os.environ.get(STORAGE_EMULATOR_HOST)
        os.environ[STORAGE_EMULATOR_HOST] = self.storage_endpoint
        try:
            aiplatform.init(
                **{
                    "project": self.project,
                    "location": self.location,
                    "api_endpoint": self.vertex_endpoint,
                    "api_transport": "rest",
                    "credentials": AnonymousCredentials(),  # type: ignore[no-untyped-call]
                    **kwargs,
                }
            )
            yield aiplatform
        finally:
            vars(config).clear()
            vars(config).update(saved)
            if previous is None:
                os.environ.pop(STORAGE_EMULATOR_HOST, None)
            else:
                os.environ[STORAGE_EMULATOR_HOST] = previous

    def genai_client(self, api_version: str = "v1") -> genai.Client:
        """A google.genai.Client in Vertex mode at the stack (touches no environment).

        google-genai cannot be pointed at the stack by variables alone: this passes the base
        URL (`http_options`), the project and location (named, so they stay in the path), and
        a token credential, since genai refuses AnonymousCredentials; the stack checks no token.
        `api_version` is "v1" or "v1beta1".
        """
        from google import genai
        from google.genai import types
        from google.oauth2.credentials import Credentials

        return genai.Client(
            vertexai=True,
            project=self.project,
            location=self.location,
            credentials=Credentials(token="local-stack"),  # type: ignore[no-untyped-call]
            http_options=types.HttpOptions(base_url=self.vertex_endpoint, api_version=api_version),
        )

    def use_job_ids(self, *ids: str) -> None:
        """The next jobs created get these ids, in order: a job standing in for a fixed id that
        a test suite names (google-genai's own tests get, cancel and delete fixed ids).

        Raises:
            ValueError: an id is not a number, or a job has it already.
        """
        self._running()[2].use_job_ids(list(ids))
