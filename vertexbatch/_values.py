"""Value types: requests in, jobs and results out. All frozen; none does I/O.

The requests (``ClaudeRequest``, ``GeminiRequest``, ``ChatRequest``, and ``Provider``, a
provider's name), ``Job``, ``Status``, ``Result``, ``Usage``, ``Refusal``, ``ToolCall``. A
result's next turn in a conversation is built by ``_turns``; a row's ``Result`` fast by
``_rows.build``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar, get_args

from ._errors import (
    ExhaustedError,
    InvalidRequestError,
    LineError,
    MissingError,
    RefusedError,
    ResultError,
    SchemaError,
    TruncatedError,
)
from ._turns import assistant_turn, tool_results

if TYPE_CHECKING:
    # Annotations only: google-genai's types take a third of a second to import, and only
    # building a Gemini line from them needs them (``_requests.lines`` imports them then).
    from google.genai import types as genai_types
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")

__all__ = [
    "ChatRequest",
    "ClaudeRequest",
    "EmbeddingRequest",
    "GeminiRequest",
    "Job",
    "PROVIDER_NAMES",
    "Outcome",
    "Provider",
    "Refusal",
    "Result",
    "Status",
    "ToolCall",
    "Usage",
]

Provider = Literal["anthropic", "google", "embeddings", "openmaas"]
PROVIDER_NAMES: Final[tuple[Provider, ...]] = get_args(Provider)
"""The providers' names, as ``_providers.PROVIDERS`` orders its rows (tests/test_providers.py)."""
Outcome = Literal["ok", "refused", "truncated", "retryable", "failed", "missing", "exhausted"]


@dataclass(frozen=True, slots=True)
class ClaudeRequest:
    """One Claude request: the caller's key and Anthropic Messages parameters.

    ``params`` is what ``anthropic.Anthropic().messages.create`` takes (``max_tokens``,
    ``messages``, ``system``, ``tools``, ...), as JSON data. ``model`` and ``stream`` are
    refused: the job carries the model, and batch prediction does not stream.
    ``anthropic_version`` is set for Vertex batch unless given. The repr shows the key only:
    request content stays out of logs and tracebacks.
    """

    key: str
    params: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class GeminiRequest:
    """One Gemini request: the caller's key, contents and an optional config.

    ``contents`` and ``config`` take google-genai types or the dict forms google-genai accepts
    (``ContentDict``, ``GenerateContentConfigDict``); a plain string is one user turn. Config
    fields only the google-genai client uses (``http_options``, ``automatic_function_calling``,
    ...) are refused: they have no effect in batch. The repr shows the key only.
    """

    key: str
    contents: genai_types.ContentListUnion | genai_types.ContentListUnionDict = field(repr=False)
    config: genai_types.GenerateContentConfig | genai_types.GenerateContentConfigDict | None = (
        field(default=None, repr=False)
    )


@dataclass(frozen=True, slots=True)
class EmbeddingRequest:
    """One text to embed: the caller's key, the text, and what the embedding is for.

    ``task_type`` (``RETRIEVAL_DOCUMENT``, ``RETRIEVAL_QUERY``, ``SEMANTIC_SIMILARITY``, ...),
    ``title`` (a document's title, for ``RETRIEVAL_DOCUMENT``) and ``dimensions`` (the output
    dimensionality) are written in a Gemini embedding row's ``embed_content_config``; a model
    that ignores them there (``gemini-embedding-2``) refuses them before staging. For a
    text-embedding model (``text-embedding-005``, ...) ``task_type`` and ``title`` are fields of
    its instance row and ``dimensions`` is refused (docs/embeddings.md). The repr shows the key
    only.
    """

    key: str
    text: str = field(repr=False)
    task_type: str | None = field(default=None, kw_only=True)
    title: str | None = field(default=None, kw_only=True, repr=False)
    dimensions: int | None = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One request to an open model served on Vertex as a managed API (Llama, Qwen, DeepSeek,
    gpt-oss, ...): the caller's key and an OpenAI chat-completions body.

    ``body`` is what ``openai.OpenAI().chat.completions.create`` takes (``messages``,
    ``max_tokens``, ``temperature``, ``response_format``, ...), as JSON data. ``model`` may be
    left out (the job carries it) or equal the job's model; ``stream`` is refused: batch
    prediction does not stream. The repr shows the key only.
    """

    key: str
    body: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class Job:
    """Everything ``status``, ``results`` and ``cancel`` need; safe to persist as JSON.

    Attributes:
        id: the caller's submission id.
        name: the Vertex resource name, ``projects/P/locations/L/batchPredictionJobs/N``.
        provider: ``"anthropic"``, ``"google"``, ``"embeddings"`` or ``"openmaas"`` (the
            provider table's keys).
        model: the bare Vertex model id (``claude-sonnet-4-5``, ``gemini-2.5-flash``).
        input_uri: ``gs://`` URI of the staged input JSONL (its first part, for an input
            staged in parts: the manifest beside it lists every part).
        output_prefix: ``gs://`` prefix Vertex writes under, for a GCS sink; ``""`` for a
            BigQuery sink (a ``Job`` made with both keeps ``dest`` and drops the prefix).
        keys: how many keys the job holds.
        dest: a BigQuery sink, as given at submit (``dest=``): ``bq://PROJECT.DATASET``, or
            ``bq://PROJECT.DATASET.TABLE`` when a table was named; the same after ``submit``,
            ``find`` and a JSON round trip. ``""`` for a GCS sink. The table Vertex writes is
            ``Status.output_table``. A dict of a job from before sinks (no ``dest``) rebuilds
            as a GCS-sink job.
    """

    id: str
    name: str
    provider: Provider
    model: str
    input_uri: str
    output_prefix: str
    keys: int
    dest: str = ""

    def __post_init__(self) -> None:
        # One meaning for every Job, however made (older JSON named the GCS folder's output/
        # for a sink job too): Vertex writes a sink job's answers in BigQuery only.
        if self.dest and self.output_prefix:
            object.__setattr__(self, "output_prefix", "")

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict; ``Job.from_dict`` rebuilds the same value."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Job:
        """Rebuild a job from ``to_dict`` output.

        Raises:
            InvalidRequestError: a field is missing or of the wrong type.
        """
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name == "dest" and f.name not in data:
                continue  # written by a vertexbatch before BigQuery sinks: a GCS sink
            if f.name not in data:
                raise InvalidRequestError(f"Job dict lacks field {f.name!r}", field=f.name)
            value = data[f.name]
            expected = int if f.name == "keys" else str
            if not isinstance(value, expected) or isinstance(value, bool):
                raise InvalidRequestError(
                    f"Job field {f.name!r} must be {expected.__name__}, got {type(value).__name__}",
                    field=f.name,
                )
            values[f.name] = value
        if values["provider"] not in PROVIDER_NAMES:
            raise InvalidRequestError(
                f"Job field 'provider' must be one of {', '.join(PROVIDER_NAMES)}, got "
                f"{values['provider']!r}",
                field="provider",
            )
        return cls(**values)


@dataclass(frozen=True, slots=True)
class Status:
    """Where a job stands.

    Attributes:
        state: the Vertex state name, e.g. ``JOB_STATE_RUNNING``.
        terminal: the job will make no further progress on its own (SUCCEEDED, PARTIALLY_SUCCEEDED,
            FAILED, CANCELLED, EXPIRED, PAUSED).
        succeeded / failed / incomplete: Vertex's row counts; -1 when Vertex does not say yet.
        error_code / error_message: the job's error when it failed, was cancelled or expired.
        created: when Vertex created the job (timezone-aware), if it said.
        output_table: a BigQuery-sink job's output table, ``bq://PROJECT.DATASET.TABLE``, once
            Vertex names it (with a dataset as ``Job.dest``, a table per job); ``""`` before,
            and for a GCS sink.
    """

    state: str
    terminal: bool
    succeeded: int = -1
    failed: int = -1
    incomplete: int = -1
    error_code: int = 0
    error_message: str = ""
    created: datetime | None = None
    output_table: str = ""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one answer, with the meaning the online clients record.

    ``input`` includes cached tokens for Gemini (Claude reports cache reads and writes apart);
    ``output`` includes thinking tokens.
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0


def sized(text: str) -> str:
    """How a repr shows response text: its size, never the text (which may be private)."""
    return f"<{len(text)} chars>"


@dataclass(frozen=True, slots=True, repr=False)
class Refusal:
    """Why a request was refused: the provider's category (or block/finish reason) and detail.

    Its repr shows the category and the detail's size, never the detail's text.
    """

    category: str
    detail: str = ""

    def __repr__(self) -> str:
        return f"Refusal(category={self.category!r}, detail={sized(self.detail)})"


@dataclass(frozen=True, slots=True, repr=False)
class ToolCall:
    """One tool call of an answer: a Claude ``tool_use`` block or a Gemini ``functionCall`` part.

    Attributes:
        name: the tool's (function's) name.
        arguments: its arguments as parsed JSON (Claude's ``input``, Gemini's ``args``).
        id: the provider's id of the call (Claude's ``id``; Gemini's ``id`` when it gives one,
            else ``""``), to answer it with a ``tool_result`` / ``functionResponse``.
        signature: Gemini's ``thoughtSignature`` on the call's part, which a Gemini 3 follow-up
            must send back with it; ``None`` without one (Gemini gives it on the first call of
            a turn) and for Claude, whose signatures are on the ``thinking`` blocks before the
            ``tool_use`` (``Result.assistant_turn`` keeps both: docs/agents.md).

    Its repr shows the name and id, never the arguments.
    """

    name: str
    arguments: Any = None
    id: str = ""
    signature: str | None = None

    def __repr__(self) -> str:
        return f"ToolCall(name={self.name!r}, id={self.id!r})"


@dataclass(frozen=True, slots=True, repr=False)
class Result:
    """The outcome of one key.

    Its repr shows the key, the outcome and sizes and kinds, never response text: ``text`` and
    a refusal's detail appear as their lengths, ``response`` not at all.

    Attributes:
        key: the caller's key.
        text: the answer text; the partial text on a truncation; ``""`` otherwise.
        usage: token counts, zero when the line had none.
        stop: the provider's stop or finish reason, verbatim (``end_turn``, ``STOP``, ...).
        refusal: set when ``error`` is a ``RefusedError``.
        error: ``None`` for a usable answer, else the outcome (see ``vertexbatch.ResultError``).
        response: the provider's raw response dict, for tool calls, citations and the like, and
            for the parts of a Gemini answer that are not text (an image, a file, code): an
            answer of only such parts is an answer, its ``text`` ``""``.
        shared: the key's request was staged once for several keys (``dedupe=True``) and this
            is the answer of that one line under another of its keys: its ``usage`` was paid
            once, by the line, and metrics count it once.
        cached: the answer came from the answer cache (``cache=True``), not from this
            submission's job: nothing was paid for it, and metrics record no tokens for it.
        tool_calls: the answer's tool calls in order (``ToolCall``); an answer that is only
            tool calls is an answer.
        parsed: with ``schema=``, the answer validated against the schema, as JSON data, or
            as an instance of the class a results pass was given (``results(job,
            schema=Model)``; ``parsed_as(Model)`` builds one from JSON data); ``None``
            otherwise, or when the answer is only tool calls. An answer that breaks the schema
            (or that the class refuses) is a ``SchemaError``.
        tier: the price tier the answer was billed at: ``"batch"`` for a batch job's row (the
            default); for a run's online fallback answer, the tier Vertex says served it
            (``usageMetadata.trafficType``: ``"standard"``, ``"flex"``, ``"priority"``,
            ``"provisioned"``), else the run's ``fallback_tier`` (docs/cost.md, "Tiers of the
            online fallback").
        embedding: an embedding answer's vector, as float32 (``array("f")``: 4 bytes a value,
            a sequence of floats; ``list(result.embedding)`` for a list); ``None`` for every
            other answer and for a failure.
    """

    key: str
    text: str = ""
    usage: Usage = field(default_factory=Usage)
    stop: str = ""
    refusal: Refusal | None = None
    error: ResultError | None = None
    response: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    shared: bool = False
    cached: bool = False
    tool_calls: tuple[ToolCall, ...] = ()
    parsed: Any = field(default=None, repr=False, compare=False)
    tier: str = "batch"
    embedding: Sequence[float] | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        error = "None" if self.error is None else type(self.error).__name__
        parsed = "None" if self.parsed is None else f"<{type(self.parsed).__name__}>"
        return (
            f"Result(key={self.key!r}, outcome={self.outcome!r}, text={sized(self.text)}, "
            f"usage={self.usage!r}, stop={self.stop!r}, refusal={self.refusal!r}, "
            f"error={error}, shared={self.shared}, cached={self.cached}, "
            f"tool_calls={len(self.tool_calls)}, parsed={parsed})"
        )

    def parsed_as(self, model: type[M]) -> M:
        """``parsed`` as an instance of the pydantic ``model`` (the class given as ``schema=``).

        A results pass given only the ``Job`` (a Cloud Scheduler function, say) has the
        stored JSON schema and not the class, so its results carry JSON data; one given
        ``schema=Model`` builds ``parsed`` with this method, and ``parsed_as`` of an instance
        gives it back.

        Raises:
            SchemaError: the result has no parsed answer, or ``model`` refuses it (a validator
                the JSON schema cannot state); the message never quotes the answer.
        """
        if self.parsed is None:
            raise SchemaError(
                "result has no parsed answer", key=self.key, status="NO_PARSED", rule="parsed"
            )
        import pydantic

        try:
            return model.model_validate(self.parsed)
        except pydantic.ValidationError as exc:
            rule = str(exc.errors(include_url=False, include_input=False)[0]["type"])
        # Raised outside the except block: pydantic's error quotes the value it refused.
        raise SchemaError(
            f"answer is refused by {model.__name__} ({rule})", key=self.key, rule=rule
        )

    def assistant_turn(self) -> dict[str, Any]:
        """The answer as the provider's own request message, a copy to append to the next
        request: Claude's ``assistant`` message with every content block (``thinking`` and
        ``redacted_thinking`` with their ``signature``, ``text``, ``tool_use``), Gemini's
        ``model`` content with every part of the first candidate (thoughts, ``functionCall``
        with its ``thoughtSignature``). docs/agents.md has the rules it keeps.

        Raises:
            InvalidRequestError: the result is no answer (``ok`` is False): no turn to continue.
        """
        return assistant_turn(self.key, self.outcome, self.response)

    def tool_results(self, outputs: Sequence[Any]) -> dict[str, Any]:
        """The ``user`` message answering ``tool_calls``, one output per call in their order:
        Claude's ``tool_result`` blocks, Gemini's ``functionResponse`` parts (docs/agents.md).

        Raises:
            InvalidRequestError: not one output per call, or no turn to continue.
        """
        calls = [(call.name, call.id) for call in self.tool_calls]
        return tool_results(self.key, self.outcome, self.response, calls, outputs)

    @property
    def ok(self) -> bool:
        """Whether the key got a usable answer."""
        return self.error is None

    @property
    def outcome(self) -> Outcome:
        """One word for what happened: what a caller sorts results by."""
        error = self.error
        if error is None:
            return "ok"
        if isinstance(error, RefusedError):
            return "refused"
        if isinstance(error, TruncatedError):
            return "truncated"
        if isinstance(error, MissingError):
            return "missing"
        if isinstance(error, ExhaustedError):
            return "exhausted"
        if isinstance(error, LineError) and error.transient:
            return "retryable"
        return "failed"
