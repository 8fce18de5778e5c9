"""vertexbatch: Vertex AI batch prediction for Claude and Gemini.

Submission is idempotent by a caller-chosen id; results come back keyed by the caller's keys,
each as exactly one outcome. See ``Client``.
"""

from inspect import isfunction as _isfunction

from ._aio import AsyncClient, AsyncRun
from ._bigquery.source import BigQuerySource
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
    WaitTimeout,
)
from ._observe.progress import Progress
from ._plans.estimate import Plan
from ._plans.prices import PRICES, PRICES_DATE, PRICES_SOURCE, Price
from ._retry import RetryPolicy, is_retryable
from ._runs.run import KeyResult, Run, RunSummary, Shard
from ._runs.start_task import table_share
from ._runs.tasks import Task
from ._submission.request_files import RequestFile, RequestFiles, list_request_files
from ._values import (
    ClaudeRequest,
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
from ._waiting.wait import wait

__all__ = [
    "AsyncClient",
    "AsyncRun",
    "BigQuerySource",
    "BucketNotFoundError",
    "ClaudeRequest",
    "Client",
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
    "PRICES_DATE",
    "PRICES_SOURCE",
    "Plan",
    "Price",
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
    "Status",
    "Task",
    "ToolCall",
    "TruncatedError",
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
