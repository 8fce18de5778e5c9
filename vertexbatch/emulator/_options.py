"""Stack and job options: how fast jobs run, and how their output rows are shaped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ClaudeErrorShape",
    "ClaudeSuccessShape",
    "GeminiErrorShape",
    "JobOptions",
    "QueuedAt",
    "RequestEcho",
    "Timing",
]

ClaudeSuccessShape = Literal["object", "string", "body"]
ClaudeErrorShape = Literal["status_string", "status_object", "status_text", "error_envelope"]
GeminiErrorShape = Literal["status_string", "status_object", "status_text"]

CLAUDE_SUCCESS_SHAPES: tuple[str, ...] = ("object", "string", "body")
CLAUDE_ERROR_SHAPES: tuple[str, ...] = (
    "status_string",
    "status_object",
    "status_text",
    "error_envelope",
)
GEMINI_ERROR_SHAPES: tuple[str, ...] = ("status_string", "status_object", "status_text")
RequestEcho = Literal["object", "string"]
EmbeddingResponse = Literal["embedding", "embeddings"]
ChatResponse = Literal["object", "batch_body"]
QueuedAt = Literal["create", "after_pending"]
QUEUED_AT: tuple[str, ...] = ("create", "after_pending")
REQUEST_ECHOES: tuple[str, ...] = ("object", "string")


@dataclass(frozen=True, slots=True)
class Timing:
    """How a job moves through its states.

    Args:
        pending_seconds: time a job stays PENDING before it runs.
        row_seconds: time each row takes while RUNNING.
        expire_seconds: a job not terminal this long after creation ends JOB_STATE_EXPIRED,
            keeping the rows done so far. None: never.
        incremental_every: while RUNNING, write `incremental_predictions/predictions_<k>.jsonl`
            after every N rows. 0: never.
        queued_seconds: time a job spends JOB_STATE_QUEUED. 0 (the default): never QUEUED, as
            the reference's live captures show a normal run (create answers PENDING, then
            RUNNING; QUEUED was seen only before a failure).
        queued_at: where that QUEUED spell sits: "create" (the job is created QUEUED, then
            PENDING: the order issue 12 describes) or "after_pending" (PENDING, then QUEUED,
            then RUNNING: the reference checklist's "PENDING → (QUEUED) → RUNNING").
        delete_seconds: how long a delete's long-running operation takes: its Operation is
            `done` only that long after the delete (0, the default: done at once), so a
            client's polling path (`operation.result()`, `get_operation`, `wait_operation`)
            runs. The job itself is gone at once.
    """

    pending_seconds: float = 0.0
    row_seconds: float = 0.0
    expire_seconds: float | None = None
    incremental_every: int = 0
    queued_seconds: float = 0.0
    queued_at: QueuedAt = "create"
    delete_seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.pending_seconds < 0 or self.row_seconds < 0 or self.queued_seconds < 0:
            raise ValueError("pending_seconds, row_seconds and queued_seconds must be >= 0")
        if self.queued_at not in QUEUED_AT:
            raise ValueError(f"queued_at must be one of {QUEUED_AT}")
        if self.expire_seconds is not None and self.expire_seconds < 0:
            raise ValueError("expire_seconds must be >= 0 or None")
        if self.incremental_every < 0:
            raise ValueError("incremental_every must be >= 0")
        if self.delete_seconds < 0:
            raise ValueError("delete_seconds must be >= 0")


@dataclass(frozen=True, slots=True)
class JobOptions:
    """How a job's output rows look (the parts of the wire format that are unconfirmed or optional).

    Args:
        echo_labels: keep `labels` in the echoed Gemini `request`.
        claude_success_shape: "object" (`"response": {Message}`), "string" (the Message as a
            JSON string) or "body" (`"response": {"body": {Message}}`).
        claude_error_shape: "status_string" (`"status": "Too Many Requests: {json}"`),
            "status_object" (`"status": {"code", "message"}`), "status_text" (a plain sentence
            with no JSON and no code, e.g. `"The request timed out."`) or "error_envelope"
            (an Anthropic error object in `response` and a short `status`).
        shuffle: write rows in a seeded shuffled order, never input order.
        gemini_error_shape: "status_string", "status_object" or "status_text", as for Claude.
        echo_siblings: keep the input line's sibling keys (Claude's `custom_id`, any other key
            beside `request`) in its output row. False: rows carry no id of their own.
        request_echo: "object" (`"request": {...}`) or "string" (the echoed request as a JSON
            string).
        gemini_echo_siblings: echo_siblings for Gemini rows alone. None: as echo_siblings.
            The two providers' batch services are apart: a probe report may show them differ.
        gemini_request_echo: request_echo for Gemini rows alone. None: as request_echo.
        partially_succeeded: a job with a failed row ends JOB_STATE_PARTIALLY_SUCCEEDED
            instead of JOB_STATE_SUCCEEDED (its output is the same).
        output_time_offset: seconds from the job's createTime to the time that names its output
            directory (`prediction-model-<time>`). Real Vertex names it by a moment about two
            seconds before createTime (reference §3.1), so a client must read
            `outputInfo.gcsOutputDirectory`, never build the path. 0: createTime itself.
        bigquery_table_name: the output table's name when a BigQuery destination names only a
            dataset, formatted with `create_time` (UNCONFIRMED for LLM batch; the default is
            the OutputInfo reference's `predictions_<timestamp>`). Read it from
            `outputInfo.bigqueryOutputTable`, never build it.
        claude_bigquery_columns: what a Claude BigQuery input's columns other than `custom_id`
            and `request` become: "ignore" (the English page: "ignored by the batch job") or
            "pass" (other language versions: "passed directly to the output table").
        check_fields: refuse a line whose request has a field the installed SDK's request types
            do not name, as the provider does (Claude: `invalid_request_error`, "temprature:
            Extra inputs are not permitted"; Gemini: 400 `Invalid JSON payload received.
            Unknown name ...`). False: take any field (a parameter the provider takes that the
            installed SDK does not model yet; what `check_fields=False` stages).
        embedding_response: how a Gemini embedding row holds its vector (UNCONFIRMED: Google
            shows input rows only): "embedding" (`{"embedding": {"values"}, "usageMetadata"}`,
            what vertexbatch's reader assumes) or "embeddings" (google-genai's
            EmbedContentResponse form, `{"embeddings": [{"values", "statistics"}]}`).
        chat_response: how an open model's row holds its answer (UNCONFIRMED): "object" (the
            OpenAI chat completion in `response`, what the reader assumes) or "batch_body"
            (OpenAI's Batch API output form, `{"status_code": 200, "body": {completion}}`).
        max_input_uris: refuse (400 at create) a job whose `gcsSource.uris` lists more than
            this many input files, as a provider that reads only one would have to; 0: any
            number (Vertex's `GcsSource.uris` is a list). A probe report that shows a provider
            refusing two parts is reproduced with 1.
    """

    echo_labels: bool = True
    claude_success_shape: ClaudeSuccessShape = "object"
    claude_error_shape: ClaudeErrorShape = "status_string"
    shuffle: bool = True
    gemini_error_shape: GeminiErrorShape = "status_string"
    echo_siblings: bool = True
    request_echo: RequestEcho = "object"
    partially_succeeded: bool = False
    output_time_offset: float = -1.886
    gemini_echo_siblings: bool | None = None
    gemini_request_echo: RequestEcho | None = None
    bigquery_table_name: str = "predictions_{create_time:%Y_%m_%dT%H_%M_%S_%f}Z"
    claude_bigquery_columns: Literal["ignore", "pass"] = "ignore"
    check_fields: bool = True
    max_input_uris: int = 0
    embedding_response: EmbeddingResponse = "embedding"
    chat_response: ChatResponse = "object"

    def __post_init__(self) -> None:
        if self.embedding_response not in ("embedding", "embeddings"):
            raise ValueError('embedding_response must be "embedding" or "embeddings"')
        if self.chat_response not in ("object", "batch_body"):
            raise ValueError('chat_response must be "object" or "batch_body"')
        if type(self.max_input_uris) is not int or self.max_input_uris < 0:
            raise ValueError("max_input_uris must be a whole number, 0 for any number")
        if self.claude_success_shape not in CLAUDE_SUCCESS_SHAPES:
            raise ValueError(f"claude_success_shape must be one of {CLAUDE_SUCCESS_SHAPES}")
        if self.claude_error_shape not in CLAUDE_ERROR_SHAPES:
            raise ValueError(f"claude_error_shape must be one of {CLAUDE_ERROR_SHAPES}")
        if self.gemini_error_shape not in GEMINI_ERROR_SHAPES:
            raise ValueError(f"gemini_error_shape must be one of {GEMINI_ERROR_SHAPES}")
        if self.request_echo not in REQUEST_ECHOES:
            raise ValueError(f"request_echo must be one of {REQUEST_ECHOES}")
        if self.gemini_request_echo is not None and self.gemini_request_echo not in REQUEST_ECHOES:
            raise ValueError(f"gemini_request_echo must be None or one of {REQUEST_ECHOES}")
        if self.claude_bigquery_columns not in ("ignore", "pass"):
            raise ValueError('claude_bigquery_columns must be "ignore" or "pass"')

    def siblings_echoed(self, provider: str) -> bool:
        """Whether rows of this provider ("anthropic", "google") keep their sibling keys."""
        if provider == "google" and self.gemini_echo_siblings is not None:
            return self.gemini_echo_siblings
        return self.echo_siblings

    def echo_of_request(self, provider: str) -> RequestEcho:
        """How rows of this provider echo the request: "object" or "string"."""
        if provider == "google" and self.gemini_request_echo is not None:
            return self.gemini_request_echo
        return self.request_echo
