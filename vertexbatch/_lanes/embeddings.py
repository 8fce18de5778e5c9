"""The embeddings lane's ``Client`` methods: ``submit_embeddings``, ``plan_embeddings``,
``run_embeddings`` (a mixin the ``Client`` inherits; docs/embeddings.md).

Each is the Claude and Gemini method's twin over ``_operations`` with the table's
``embeddings`` row, after what only this lane refuses, before any cloud call: a BigQuery source
or sink (Google's page: JSONL in Cloud Storage only), and ``task_type`` / ``title`` for a model
that ignores them in a row's config (``gemini-embedding-2``: ``_requests.embedding_line``),
checked request by request as the requests are read (a generator stays streamed). The lane
serves both embedding families: a request for a text-embedding model (``text-embedding-*``,
``text-multilingual-embedding-*``) is marked as it is taken, and its line is that family's
instance (``_requests.embedding_text``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Unpack

from .._bigquery.source import EMBEDDINGS_NO_BIGQUERY, BigQuerySource
from .._errors import InvalidRequestError
from .._observe.traces import Tracing, traced
from .._operations import plan_with, run_with, submit
from .._plans.estimate import Plan
from .._requests.embedding_line import check_for_model
from .._requests.embedding_text import is_text_embedding, text_requests
from .._runs.run import Run
from .._submission.options import PlanKeywords, RunKeywords, SubmitKeywords, SubmitOptions
from .._values import EmbeddingRequest, Job

if TYPE_CHECKING:
    from .._cloud import Cloud

__all__ = ["EmbeddingRequests", "EmbeddingsLane", "embedding_requests"]

EmbeddingRequests = Iterable[EmbeddingRequest]


def _tracing_of(client: EmbeddingsLane) -> Tracing:
    return client._cloud.tracing


def _checked(model: str, requests: Iterable[Any]) -> Iterator[Any]:
    for request in requests:
        if isinstance(request, EmbeddingRequest):
            check_for_model(model, request)
        yield request


def _marked(model: str, requests: Iterable[Any]) -> Iterable[Any]:
    """The requests as the model's family writes them (a text-embedding model's marked)."""
    return text_requests(requests) if is_text_embedding(model) else requests


def embedding_requests(model: str, requests: object, options: Mapping[str, object]) -> Any:
    """``requests`` as a submission of the embeddings lane reads them: refused when a BigQuery
    source or sink is named, each request checked for ``model`` as it is taken (and, for a
    text-embedding model, marked for its rows).

    Raises:
        InvalidRequestError: a ``BigQuerySource`` or a ``dest=`` (BigQuery is refused for
            embeddings, saying why).
    """
    if isinstance(requests, BigQuerySource):
        raise InvalidRequestError(EMBEDDINGS_NO_BIGQUERY, field="requests")
    if options.get("dest"):
        raise InvalidRequestError(EMBEDDINGS_NO_BIGQUERY, field="dest")
    if isinstance(requests, str | bytes | Mapping) or not isinstance(requests, Iterable):
        return requests  # refused by the submission, naming what it is
    if not isinstance(model, str):
        return requests  # refused by the model check
    return _marked(model, _checked(model, requests))


class EmbeddingsLane:
    """The embeddings lane's methods of ``Client`` (``self._cloud`` is the client's)."""

    if TYPE_CHECKING:

        @property
        def _cloud(self) -> Cloud: ...

    @traced("submit", _tracing_of)
    def submit_embeddings(
        self,
        id: str,
        model: str,
        requests: EmbeddingRequests,
        **options: Unpack[SubmitKeywords],
    ) -> Job:
        """Submit embedding requests under ``id``; see ``submit_claude`` (``schema=`` and a
        BigQuery source or ``dest=`` are refused: docs/embeddings.md).

        Raises:
            InvalidRequestError: a bad id, model, key or request, a field the model ignores,
                BigQuery named, or the id already claimed for other rows.
        """
        taken = embedding_requests(model, requests, options)  # BigQuery refused first
        given = SubmitOptions.of("submit_embeddings", options)
        return submit(self._cloud, id, model, "embeddings", taken, given)

    @traced("plan", _tracing_of)
    def plan_embeddings(
        self,
        id: str,
        model: str,
        requests: EmbeddingRequests,
        **options: Unpack[PlanKeywords],
    ) -> Plan:
        """What ``submit_embeddings`` would do; see ``plan_claude`` (``count_tokens=True`` is
        refused: no count-tokens call is wired for embedding models)."""
        if options.get("count_tokens"):
            raise InvalidRequestError(
                "count_tokens does not apply to the embeddings lane (no count-tokens call is "
                "wired for embedding models); plan without count_tokens=True",
                field="count_tokens",
            )
        taken = embedding_requests(model, requests, options)
        return plan_with(self._cloud, "plan_embeddings", id, model, "embeddings", taken, options)

    @traced("run.start", _tracing_of)
    def run_embeddings(
        self,
        id: str,
        model: str,
        requests: EmbeddingRequests,
        **options: Unpack[RunKeywords],
    ) -> Run:
        """Start (or rejoin) a run of embedding requests; see ``run_claude`` (the online
        fallback does not apply: a run past its deadline refuses it)."""
        taken = embedding_requests(model, requests, options)
        return run_with(self._cloud, "run_embeddings", id, model, "embeddings", taken, options)
