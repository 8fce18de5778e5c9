"""The provider table: what differs between the lanes (Claude, Gemini, Gemini embeddings, open
models), one row each.

The library names a provider by its key (``Provider``: ``anthropic``, ``google``, ``embeddings``,
``openmaas``), the command and the ``Client``'s methods by its model family (``claude``, ``gemini``,
``embeddings``, ``chat``: ``--provider claude``, ``submit_claude``); the ``publisher`` column is its
models' Vertex publisher (``None``: each open model's id names its own, ``publisher/model``), and
``_rules.LANES`` says which lane owns a model id. A row holds both names and every other thing that
differs: the request type and the line builder, the id field of an output row and the reader of its
response, the output ceiling a plan assumes, where batch may run, the online calls and the price
tiers they may ask for, the count-tokens calls, and the shapes of a conversation's next turn. Code
that differs by provider asks ``PROVIDERS[provider]`` (or ``by_command(name)``); a new lane is one
row here and its tests (tests/test_providers.py).

The table sits just above what it refers to (the line builders, the output readers, the online
calls), so it imports them directly; the SDKs those calls use are imported when a call is first
made (``OnlineClients``), never by importing this. Five columns have a copy below the table,
each held to this one by tests/test_providers.py: the family rule of ``_rules.check_model``
(``_rules.FAMILIES``, below the table as tests/test_rules.py reads it), the reader
``_rows.classify.classify_row`` dispatches to (``_rows.classify.READERS``, which the results pass
calls with a ``Job.provider``), the fast path's reader of the usual answer
(``_rows.fast_path.USUAL_READERS``) the reader of a BigQuery source's request column
(``_bigquery.source.ROW_REQUESTS``) and the next turn's shapes (``_turns.TURNS``, which
``Result.assistant_turn`` reads). Code elsewhere never compares provider strings
(tests/guards/test_provider_switches.py counts the places that do).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Final

from ._bigquery.source import (
    RowRequest,
    chat_of_row,
    claude_of_row,
    embeddings_of_row,
    gemini_of_row,
)
from ._catalogue import Model, model_entry, warn_uncatalogued
from ._errors import InvalidRequestError
from ._hosts import GLOBAL
from ._requests.chat_body import check_chat_fields
from ._requests.embedding_line import EMBEDDING_ID_FIELD, check_embedding_fields, embedding_line
from ._requests.field_check import check_claude_fields, check_gemini_fields, checked_builder
from ._requests.keymap import KEY_FIELD
from ._requests.lines import StagedLine, chat_line, claude_line, gemini_line
from ._rows.chat import classify_chat_completion, read_usual_chat
from ._rows.classify import classify_claude_message, classify_gemini_response
from ._rows.embedding import read_embedding, read_usual_embedding
from ._rows.fast_path import UsualReader, read_usual_claude, read_usual_gemini
from ._rules import DEFAULT_LIMITS, LANES, Limits, check_model, owner_of, publisher_path
from ._turns import TURNS, Turns
from ._values import ChatRequest, ClaudeRequest, EmbeddingRequest, GeminiRequest, Provider, Result
from ._vertex.online import (
    Caller,
    OnlineClients,
    chat_caller,
    chat_counter,
    claude_caller,
    claude_counter,
    gemini_caller,
    gemini_counter,
)

__all__ = [
    "checked_model",
    "job_limits",
    "job_rows",
    "COMMANDS",
    "GEMINI_DEFAULT_OUTPUT",
    "GLOBAL_BATCH_SOURCE",
    "PROVIDERS",
    "ProviderRow",
    "batch_location_refusal",
    "by_command",
    "check_batch_location",
    "of_model",
    "served_in",
    "unknown_line_fields",
]

# The output ceiling a plan assumes for a Gemini request that sets no maxOutputTokens.
GEMINI_DEFAULT_OUTPUT = 65_536


def _tokens(value: object) -> int:
    """A token limit as a plan counts it: a positive int, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _claude_ceiling(body: Mapping[str, Any]) -> int:
    return _tokens(body.get("max_tokens"))


def _chat_ceiling(body: Mapping[str, Any]) -> int:
    return _tokens(body.get("max_completion_tokens") or body.get("max_tokens"))


def _gemini_ceiling(body: Mapping[str, Any]) -> int:
    config = body.get("generationConfig")
    value = config.get("maxOutputTokens") if isinstance(config, Mapping) else None
    return _tokens(GEMINI_DEFAULT_OUTPUT if value is None else value)


def _no_output(body: Mapping[str, Any]) -> int:
    """An embedding writes no output tokens: its ceiling is 0."""
    return 0


def _no_online(online: OnlineClients, model: str, concurrency: int, tier: str) -> Caller:
    raise InvalidRequestError(
        f"model {model!r}: the embeddings lane has no online fallback (vertexbatch sends "
        "embeddings in batch only); let the run's jobs answer, or embed the rest yourself",
        field="fallback_tier",
    )


def _no_counter(online: OnlineClients, model: str) -> Callable[[Mapping[str, Any]], int]:
    raise InvalidRequestError(
        f"model {model!r}: count_tokens does not apply to the embeddings lane (no count-tokens "
        "call is wired for embedding models); plan without count_tokens=True",
        field="count_tokens",
    )


@dataclass(frozen=True, slots=True)
class ProviderRow:
    """One provider: its names, its requests and lines, its output, its online calls."""

    provider: Provider  # the library's name
    command: str  # the command's name (--provider), the Client methods' suffix, the model family
    # the Vertex publisher of the lane's models; None: the model id names it as `publisher/model`
    publisher: str | None
    request: type[ClaudeRequest] | type[GeminiRequest] | type[EmbeddingRequest] | type[ChatRequest]
    fields: frozenset[str]  # the fields of one line of the command's request file
    line: Callable[..., StagedLine]  # (request, FieldTypes | None) -> the staged line
    check: Callable[[Any], None]  # (request) -> None, or InvalidRequestError: an unknown field
    id_field: str  # the field of an output row (and of an online answer's row) holding its id
    sink_id_column: str | None  # the id column a sink table is read by (_bigquery.read); None: all
    read: Callable[..., Result]  # (response, *, key) -> the Result of a response object
    usual: UsualReader  # (response, key) -> the Result of the usual answer, else None (fast path)
    of_row: RowRequest  # (key, object, bad) -> the request of a BigQuery source's row
    ceiling: Callable[[Mapping[str, Any]], int]  # a staged body's output ceiling
    ceiling_said: str  # how a plan says it assumed the ceiling
    # how a plan says what cached input costs ({rates}: the known cache rates) and why it cannot
    # count those tokens before the job (_plans.estimate.cache_said)
    cache_said: str
    global_batch: bool  # whether its batch jobs may run in "global" (check_batch_location)
    live_jobs: int  # how many of a run's jobs may be live at once unless the caller says
    # (the client's online clients, model, concurrency, price tier) -> the caller
    online: Callable[[OnlineClients, str, int, str], Caller]
    # the price tiers its online calls may ask for (``_vertex.tiers``): Flex and Priority PayGo
    # are documented for Gemini models only
    tiers: frozenset[str]
    counter: Callable[[OnlineClients, str], Callable[[Mapping[str, Any]], int]]  # count-tokens
    # the next turn's shapes: an answer as the assistant's message, tool results as the user's
    turns: Turns

    @property
    def title(self) -> str:
        """The family as prose names it: ``Claude``, ``Gemini``."""
        return self.command.title()

    def method(self, operation: str) -> str:
        """The name of the ``Client`` method of ``operation`` (``submit`` -> ``submit_claude``)."""
        return f"{operation}_{self.command}"

    def builder(self, check_fields: bool = True) -> Callable[..., StagedLine]:
        """The line builder a submission uses: ``line``, refusing an unknown field first
        unless ``check_fields`` is False (``_requests.field_check``)."""
        return checked_builder(self.line, self.check) if check_fields else self.line

    def publisher_path(self, model: str) -> str:
        """The Vertex publisher path of a model id of this provider (bare, under ``publisher``;
        ``publisher/model`` where the model id names its publisher, ``publisher`` ``None``)."""
        return publisher_path(model, self.provider)

    @property
    def prefixes(self) -> tuple[str, ...]:
        """How the lane's bare model ids begin (``_rules.LANES``; none for a lane whose ids
        name their publisher)."""
        return LANES[self.provider].prefixes

    def owns(self, model: str) -> bool:
        """Whether ``model`` is of this family (``_rules.owner_of``): the longest of the lanes'
        model-id prefixes it begins with is this lane's (``gemini-embedding-001`` is an
        embedding model, not a Gemini chat model), or, for the lane whose ids name their
        publisher, it is ``publisher/model``."""
        return owner_of(model) == self.provider


PROVIDERS: Final[Mapping[Provider, ProviderRow]] = MappingProxyType(
    {
        "anthropic": ProviderRow(
            provider="anthropic",
            command="claude",
            publisher="anthropic",
            request=ClaudeRequest,
            fields=frozenset({"key", "params"}),
            line=claude_line,
            check=check_claude_fields,
            id_field="custom_id",
            sink_id_column="custom_id",
            read=classify_claude_message,
            usual=read_usual_claude,
            of_row=claude_of_row,
            ceiling=_claude_ceiling,
            ceiling_said="output ceiling: the sum of max_tokens",
            cache_said="Claude prompt caching (cache_control): online cache rates per million "
            "tokens: {rates}; which requests write or read is decided while the job runs, so "
            "the estimate prices all input at the batch input rate",
            global_batch=False,
            live_jobs=4,
            online=claude_caller,
            tiers=frozenset({"standard"}),
            counter=claude_counter,
            turns=TURNS["anthropic"],
        ),
        "google": ProviderRow(
            provider="google",
            command="gemini",
            publisher="google",
            request=GeminiRequest,
            fields=frozenset({"key", "contents", "config"}),
            line=gemini_line,
            check=check_gemini_fields,
            id_field=KEY_FIELD,
            sink_id_column=None,
            read=classify_gemini_response,
            usual=read_usual_gemini,
            of_row=gemini_of_row,
            ceiling=_gemini_ceiling,
            ceiling_said="output ceiling: the sum of maxOutputTokens, "
            f"{GEMINI_DEFAULT_OUTPUT:,} for a request without one",
            cache_said="Gemini implicit caching: input tokens the service finds cached are "
            "billed at the cache rate (per million tokens: {rates}; 90% off the online input "
            "rate), which takes precedence over the batch discount; which tokens hit is decided "
            "while the job runs, so the estimate prices all input at the batch rate (a hit "
            "costs less)",
            global_batch=True,
            live_jobs=16,
            online=gemini_caller,
            tiers=frozenset({"standard", "flex", "priority"}),
            counter=gemini_counter,
            turns=TURNS["google"],
        ),
        # Gemini embedding models in batch (docs/embeddings.md): Google's rows, no BigQuery, no
        # online fallback, no count-tokens call, no turns; each refuses clearly.
        "embeddings": ProviderRow(
            provider="embeddings",
            command="embeddings",
            publisher="google",
            request=EmbeddingRequest,
            fields=frozenset({"key", "text", "task_type", "title", "dimensions"}),
            line=embedding_line,
            check=check_embedding_fields,
            id_field=EMBEDDING_ID_FIELD,
            sink_id_column=None,
            read=read_embedding,
            usual=read_usual_embedding,
            of_row=embeddings_of_row,
            ceiling=_no_output,
            ceiling_said="output ceiling: none (an embedding writes no output tokens)",
            cache_said="embeddings: no cache rate is known for embedding models ({rates}); the "
            "estimate prices all input at the batch input rate",
            global_batch=True,
            # Google's page: "There are no predefined concurrency quotas" for Gemini embedding
            # batch jobs (docs/platform-facts.md, "Embeddings"); a run keeps as many as Gemini's.
            live_jobs=16,
            online=_no_online,
            tiers=frozenset({"standard"}),  # the runs' default; the caller refuses when used
            counter=_no_counter,
            turns=TURNS["embeddings"],
        ),
        "openmaas": ProviderRow(
            provider="openmaas",
            command="chat",
            publisher=None,
            request=ChatRequest,
            fields=frozenset({"key", "body"}),
            line=chat_line,
            check=check_chat_fields,
            id_field="custom_id",
            sink_id_column="custom_id",
            read=classify_chat_completion,
            usual=read_usual_chat,
            of_row=chat_of_row,
            ceiling=_chat_ceiling,
            ceiling_said="output ceiling: the sum of max_completion_tokens (else max_tokens), 0 "
            "for a request with neither (the models' own default is not documented)",
            cache_said="open models: no page we read documents caching or its rates for "
            "Vertex's managed open models ({rates}); the estimate prices all input at the "
            "batch input rate",
            global_batch=False,
            live_jobs=4,
            online=chat_caller,
            tiers=frozenset({"standard"}),
            counter=chat_counter,
            turns=TURNS["openmaas"],
        ),
    }
)
"""Each provider's row, by the library's name (``Job.provider``)."""

_BY_COMMAND: Final[Mapping[str, ProviderRow]] = MappingProxyType(
    {row.command: row for row in PROVIDERS.values()}
)
COMMANDS: Final = tuple(_BY_COMMAND)
"""The command's provider names, in the table's order (``--provider``'s choices)."""


def by_command(name: str) -> ProviderRow:
    """The row of a provider by the command's name (``claude``, ``gemini``).

    Raises:
        InvalidRequestError: no provider has that name.
    """
    row = _BY_COMMAND.get(name)
    if row is None:
        raise InvalidRequestError(
            f"provider must be one of {', '.join(COMMANDS)}, got {name!r}", field="provider"
        )
    return row


def of_model(model: str | None) -> ProviderRow | None:
    """The row whose family ``model`` belongs to, by its id's prefix (``None``: neither)."""
    if not model:
        return None
    return next((row for row in PROVIDERS.values() if row.owns(model)), None)


def unknown_line_fields(row: ProviderRow, line: Mapping[str, Any]) -> str:
    """A request-file line's fields that ``row`` does not name, as an error says them (``""``:
    none): by position (``<field 3>``) with the line field each is closest to, never by name,
    as a line's keys may be content (as ``_requests.field_check`` names a params field it does not
    know).
    """
    names = sorted(row.fields)
    unknown = []
    for position, name in enumerate(line, start=1):
        if name in row.fields:
            continue
        near = difflib.get_close_matches(str(name), names, n=1, cutoff=0.75)
        unknown.append(f"<field {position}>" + (f" (did you mean {near[0]!r}?)" if near else ""))
    if not unknown:
        return ""
    return f"unknown field(s) {', '.join(unknown)}: a {row.command} line has {names}"


# Google's locations page lists "Batch prediction for Anthropic and OpenMaaS models" among what
# the global endpoint does not serve (the ``global_batch`` column; read 2026-12-07).
GLOBAL_BATCH_SOURCE = "https://cloud.google.com/vertex-ai/generative-ai/docs/learn/locations"


def served_in(entry: Model | None) -> str:
    """Where the catalogue says a model is served, as a message says it."""
    if entry is None or not entry.locations:
        return "the model catalogue lists no location for it"
    return f"the model catalogue lists it in {', '.join(sorted(entry.locations))}"


def batch_location_refusal(
    row: ProviderRow, entry: Model | None, model: str, location: str
) -> str | None:
    """Why a batch job of ``model`` (its provider's ``row``, its catalogue ``entry``) may not
    run in ``location``, or ``None`` (pure).

    ``global`` takes a batch job when the provider's batch runs there (``global_batch``) and
    the catalogue lists ``global`` among the model's locations; a model the catalogue does not
    hold is not refused for that (new models appear before any table knows them). Regions and
    the multi-regions ``us`` / ``eu`` are never refused here: whether one serves a model in
    batch is Vertex's to say (``vertexbatch probe --multi-region`` asks it).
    """
    if location != GLOBAL:
        return None
    if not row.global_batch:
        return (
            f"model {model!r} cannot run a batch job in location 'global': {row.title} batch "
            f"jobs need a region (Google lists batch prediction for "
            f"{row.provider.title()} models among the global endpoint's limitations, "
            f"{GLOBAL_BATCH_SOURCE}); {served_in(entry)}"
        )
    if entry is not None and GLOBAL not in entry.locations:
        sources = ", ".join(source.url for source in entry.sources) or "no source"
        return (
            f"model {model!r} is not served in location 'global' for batch: "
            f"{served_in(entry)} ({sources}); set the client's location to one of them"
        )
    return None


def check_batch_location(model: str, provider: Provider, location: str) -> None:
    """Refuse, before any cloud call, a batch job in a location the model is not served in for
    batch (``batch_location_refusal``, with the catalogue's row for ``model``).

    Raises:
        InvalidRequestError: naming the model, the location and where the catalogue says the
            model is served.
    """
    why = batch_location_refusal(PROVIDERS[provider], model_entry(model), model, location)
    if why is not None:
        raise InvalidRequestError(why, field="location")


def checked_model(model: str, provider: Provider, location: str) -> str:
    """The model check every submission passes (submit, plan, run; ``client.aio`` runs the
    same): ``check_model``'s refusals, batch refused where the catalogue says the model is not
    served (``check_batch_location``), then an ``UncataloguedModelWarning`` naming the closest
    catalogued id for an id outside the catalogue, which is submitted all the same."""
    check_model(model, provider)
    check_batch_location(model, provider, location)
    warn_uncatalogued(model)
    return model


def job_limits(model: str, limits: Limits) -> Limits:
    """``limits`` with one job's rows and input bytes those the catalogue documents for
    ``model`` (``job_rows``, ``job_bytes``: Gemini's 200,000 requests and 1 GB, Gemini
    embeddings' 1,000,000 rows and 1 GB); unchanged for a model it does not hold or a limit it
    does not give, whose jobs keep vertexbatch's defaults (``_rules.MAX_ROWS``,
    ``MAX_INPUT_BYTES``, the values it held every model to before the catalogue). A documented
    limit replaces a default one, above it or below; a limit given smaller than the default (a
    test's) stays a ceiling."""
    entry = model_entry(model)
    if entry is None:
        return limits
    rows = _limit(limits.rows, DEFAULT_LIMITS.rows, entry.job_rows)
    size = _limit(limits.input_bytes, DEFAULT_LIMITS.input_bytes, entry.job_bytes)
    if (rows, size) == (limits.rows, limits.input_bytes):
        return limits
    return replace(limits, rows=rows, input_bytes=size)


def _limit(given: int, default: int, documented: int | None) -> int:
    """The documented limit where there is one, but never above a limit given below the
    default."""
    if documented is None:
        return given
    return documented if given == default else min(given, documented)


def job_rows(model: str) -> int:
    """The most requests one job of ``model`` takes: the catalogue's, else ``_rules.MAX_ROWS``
    (what a run's ledger holds a shard to)."""
    return job_limits(model, DEFAULT_LIMITS).rows
