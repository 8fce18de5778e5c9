"""vertexbatch: Vertex AI batch prediction for Claude and Gemini.

Submission is idempotent by a caller-chosen id; results come back keyed by the caller's keys,
each as exactly one outcome. See ``Client``.
"""

import typing as _typing
from inspect import isfunction as _isfunction

from ._aio import AsyncClient, AsyncRun
from ._bigquery.source import BigQuerySource
from ._catalogue import UncataloguedModelWarning
from ._client import Client
from ._errors import (
    BucketNotFoundError,
    ExhaustedError,
    InvalidRequestError,
    JobError,
    LineError,
    MissingError,
    RefusedError,
    ResultError,
    SchemaError,
    TruncatedError,
    VertexBatchError,
)
from ._functions import list_request_files, wait
from ._observe.progress import Progress
from ._plans.estimate import Plan
from ._plans.prices import PRICES, Price, PriceBand
from ._plans.spend import Spend, SpendMeter
from ._retry import RetryPolicy, is_retryable
from ._runs.ledger import Shard
from ._runs.run import KeyResult, Run
from ._runs.start_task import table_share
from ._runs.step import RunSummary
from ._runs.tasks import Task
from ._submission.canary import CanaryWarning
from ._submission.request_files import RequestFile, RequestFiles
from ._values import (
    ChatRequest,
    ClaudeRequest,
    EmbeddingRequest,
    GeminiRequest,
    Job,
    Outcome,
    Provider,
    Refusal,
    Result,
    Status,
    ToolCall,
    Usage,
)
from ._waiting.schedule import WaitTimeout

__all__ = [
    "AsyncClient",
    "AsyncRun",
    "BigQuerySource",
    "BucketNotFoundError",
    "CanaryWarning",
    "ChatRequest",
    "ClaudeRequest",
    "Client",
    "EmbeddingRequest",
    "ExhaustedError",
    "GeminiRequest",
    "InvalidRequestError",
    "Job",
    "JobError",
    "KeyResult",
    "LineError",
    "MissingError",
    "Outcome",
    "PRICES",
    "Plan",
    "Price",
    "PriceBand",
    "Progress",
    "Provider",
    "Refusal",
    "RefusedError",
    "RequestFile",
    "RequestFiles",
    "Result",
    "ResultError",
    "RetryPolicy",
    "Run",
    "RunSummary",
    "SchemaError",
    "Shard",
    "Spend",
    "SpendMeter",
    "Status",
    "Task",
    "ToolCall",
    "TruncatedError",
    "UncataloguedModelWarning",
    "Usage",
    "VertexBatchError",
    "WaitTimeout",
    "is_retryable",
    "list_request_files",
    "table_share",
    "wait",
]

# Public names report the package as their module, as httpx's do: a traceback or repr says
# vertexbatch.InvalidRequestError, the name a caller imports, not the private module it lives in.
for _name in __all__:
    _value = globals()[_name]
    if isinstance(_value, type) or _isfunction(_value):
        _value.__module__ = __name__
del _name, _value, _isfunction

# Deprecated names, kept for one release: each warns, naming its replacement.
_DEPRECATED = {"PRICES_DATE": "PRICES.date", "PRICES_SOURCE": "PRICES.source"}

if not _typing.TYPE_CHECKING:  # type checkers see the names as gone: use the replacements

    def __getattr__(name: str) -> object:
        if name in _DEPRECATED:
            import warnings

            replacement = _DEPRECATED[name]
            warnings.warn(
                f"vertexbatch.{name} is deprecated: use vertexbatch.{replacement}",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(PRICES, replacement.partition(".")[2])
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


del _typing
