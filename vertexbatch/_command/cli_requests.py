"""Request files for ``vertexbatch submit`` and ``run submit``: JSONL read one line at a time,
or a BigQuery table (``--source``, a ``BigQuerySource``).

Claude lines are ``{"key": ..., "params": {Messages parameters}}``; Gemini lines are
``{"key": ..., "contents": [...], "config": {...}}``. A line that cannot be read is an
``InvalidRequestError`` naming the file and line number, never echoing the line; a library error
about the request just handed over gets the file and line number added (``naming_the_line``).
What the library would explain in terms of its methods (a model of the other provider, a model
set on a line) is checked here first and explained in terms of the command's options.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any, TypeAlias

import click

from .._bigquery.source import BigQuerySource
from .._errors import InvalidRequestError
from .._json import MAX_DEPTH, too_deep
from .._providers import by_command, of_model, unknown_line_fields
from .._values import ChatRequest, ClaudeRequest, EmbeddingRequest, GeminiRequest
from .cli_render import ExitCode, Fail

__all__ = [
    "GivenRequests",
    "RequestLines",
    "check_provider",
    "given_requests",
    "naming_the_line",
    "open_requests",
    "request_lines",
    "requests_argument",
]


class _BadLine(InvalidRequestError):
    """A request line that cannot be read; the message already names the line."""


class RequestLines:
    """Requests read one line at a time from a JSONL stream, remembering the current line."""

    def __init__(self, stream: IO[bytes], name: str, provider: str) -> None:
        self.stream = stream
        self.name = name
        self.provider = provider
        self.line = 0
        self.done = False

    def __iter__(self) -> Iterator[_Request]:
        for number, raw in enumerate(self.stream, start=1):
            self.line = number
            if not raw.strip():
                continue
            yield self._parse(raw)
        self.done = True

    def _bad(self, problem: str, field: str = "requests") -> _BadLine:
        return _BadLine(f"{self.name} line {self.line}: {problem}", field=field)

    def _parse(self, raw: bytes) -> _Request:
        problem = ""
        try:
            text = raw.decode("utf-8").rstrip("\r\n")
            # Measured before parsing: a parser that recursed to its limit would run whatever
            # the garbage collector finalizes there at that depth too (and fail it).
            if too_deep(text):
                raise _TooDeep
            data = json.loads(text, parse_constant=_not_json)
        except UnicodeDecodeError:
            problem = "not UTF-8 text"
        except json.JSONDecodeError as exc:
            # exc.msg and the column say what is wrong without echoing the line.
            problem = f"not valid JSON ({exc.msg} at column {exc.colno})"
        except _NotJSON:
            problem = "not JSON: NaN/Infinity are not JSON numbers"
        except ValueError:  # an integer of more digits than Python converts
            problem = "not valid JSON (an integer too long to read)"
        except _TooDeep:
            problem = f"not valid JSON (nested too deeply to read: past {MAX_DEPTH} levels)"
        if problem:
            # Raised outside the except block: the decoder's error holds the line's text.
            raise self._bad(problem)
        if not isinstance(data, dict):
            raise self._bad(f"expected a JSON object, got {type(data).__name__}")
        unknown = unknown_line_fields(by_command(self.provider), data)
        if unknown:
            raise self._bad(unknown)
        key = data.get("key")
        if not isinstance(key, str) or not key:
            raise self._bad("'key' must be a non-empty string", field="key")
        return _REQUESTS[self.provider](self, key, data)


def _claude_request(lines: RequestLines, key: str, data: dict[str, Any]) -> ClaudeRequest:
    params = data.get("params")
    if not isinstance(params, dict):
        raise lines._bad("'params' must be an object of Messages parameters", "params")
    if "model" in params:
        raise lines._bad(
            "'params' sets 'model': --model gives the model of the whole job; drop it "
            "from the line",
            "params",
        )
    return ClaudeRequest(key, params)


def _gemini_request(lines: RequestLines, key: str, data: dict[str, Any]) -> GeminiRequest:
    if "contents" not in data:
        raise lines._bad("lacks 'contents'", field="contents")
    if data.get("config") is not None and not isinstance(data["config"], dict):
        raise lines._bad("'config' must be an object or null", field="config")
    return GeminiRequest(key, data["contents"], data.get("config"))


def _embedding_request(lines: RequestLines, key: str, data: dict[str, Any]) -> EmbeddingRequest:
    text = data.get("text")
    if not isinstance(text, str):
        raise lines._bad("'text' must be a string", field="text")
    dimensions = data.get("dimensions")
    if dimensions is not None and (type(dimensions) is not int):
        raise lines._bad("'dimensions' must be a whole number or null", field="dimensions")
    for name in ("task_type", "title"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise lines._bad(f"{name!r} must be a string or null", field=name)
    return EmbeddingRequest(
        key,
        text,
        task_type=data.get("task_type"),
        title=data.get("title"),
        dimensions=dimensions,
    )


def _chat_request(lines: RequestLines, key: str, data: dict[str, Any]) -> ChatRequest:
    body = data.get("body")
    if not isinstance(body, dict):
        raise lines._bad("'body' must be an object of OpenAI chat-completions parameters", "body")
    if "model" in body:
        raise lines._bad(
            "'body' sets 'model': --model gives the model of the whole job; drop it from the line",
            "body",
        )
    return ChatRequest(key, body)


# A checked line of each provider's request file (its fields are the table's ``fields``) as
# its request; tests/test_providers.py holds the keys to the table's command names.
_Request: TypeAlias = ClaudeRequest | GeminiRequest | EmbeddingRequest | ChatRequest
_REQUESTS: dict[str, Callable[[RequestLines, str, dict[str, Any]], _Request]]
_REQUESTS = {
    "claude": _claude_request,
    "gemini": _gemini_request,
    "embeddings": _embedding_request,
    "chat": _chat_request,
}


class _NotJSON(Exception):
    """A NaN or Infinity token: Python's json reads it, JSON does not have it."""


class _TooDeep(Exception):
    """A line nested deeper than ``_json.MAX_DEPTH``: refused before it is parsed."""


def _not_json(token: str) -> Any:
    raise _NotJSON


# Library errors with these fields are about the call, not about the line just read.
_NOT_ABOUT_A_LINE = frozenset({"id", "model", "shard_size", "max_attempts", "staging", "bucket"})


@contextlib.contextmanager
def open_requests(path: str) -> Iterator[IO[bytes]]:
    """The request file at ``path`` (``-``: stdin), open for reading; closed after (not stdin).

    Raises:
        Fail: exit 2, one line naming the file and why it cannot be read.
    """
    if path == "-":
        yield sys.stdin.buffer
        return
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise Fail(
            ExitCode.USAGE, f"cannot read request file {path}: {exc.strerror or exc}"
        ) from None
    with file:
        yield file


def check_provider(provider: str, model: str) -> None:
    """Raise unless ``model`` is one of ``--provider``'s models (its id starts with one of its
    lane's prefixes, ``ProviderRow.prefixes``; a lane whose ids name their publisher,
    ``PUBLISHER/MODEL``, is left to the library).

    Raises:
        InvalidRequestError: the model belongs to the other provider, or to neither; the message
            names ``--provider``. Models with a path are left to the library to explain.
    """
    if "/" in model:
        return
    owner = of_model(model)
    if owner is not None and owner.command != provider:
        raise InvalidRequestError(
            f"model {model!r} is a {owner.title} model: use --provider {owner.command}",
            field="model",
        )
    row = by_command(provider)
    if row.publisher is None:  # PUBLISHER/MODEL ids: the library says what it takes
        return
    if owner is None or not row.owns(model) or not model.startswith(row.prefixes):
        begins = " or ".join(f"'{prefix}-'" for prefix in row.prefixes)
        raise InvalidRequestError(
            f"model {model!r} is not a {row.title} model id (they start with "
            f"{begins}): --provider {provider} takes {row.title} models only",
            field="model",
        )


def request_lines(file: IO[bytes], provider: str) -> RequestLines:
    """The requests of an open file (``-`` or a nameless stream is ``<stdin>``)."""
    given = getattr(file, "name", "-")
    name = "<stdin>" if given in ("-", "<stdin>") or not isinstance(given, str) else given
    return RequestLines(file, name, provider)


@contextlib.contextmanager
def naming_the_line(lines: RequestLines) -> Iterator[None]:
    """Add the file and line number to a library error about the request just handed over."""
    try:
        yield
    except InvalidRequestError as exc:
        if (
            isinstance(exc, _BadLine)
            or lines.done
            or not lines.line
            or exc.field in _NOT_ABOUT_A_LINE
        ):
            raise
        raise InvalidRequestError(
            f"{lines.name} line {lines.line}: {exc}", field=exc.field
        ) from exc


@dataclass(frozen=True, slots=True)
class GivenRequests:
    """Where a command's requests come from: FILE, or ``--source`` with its column options."""

    file: str | None
    source: str | None
    key_column: str | None
    request_column: str | None


def requests_argument(f: Callable[..., Any]) -> Callable[..., Any]:
    """FILE (optional), ``--source``, ``--key-column`` and ``--request-column``, handed to the
    command as one ``file: GivenRequests``."""

    @functools.wraps(f)
    def command(**kwargs: Any) -> Any:
        names = ("file", "source", "key_column", "request_column")
        kwargs["file"] = GivenRequests(*(kwargs.pop(name) for name in names))
        return f(**kwargs)

    for decorate in reversed(_REQUEST_PARAMS):
        command = decorate(command)
    return command


_REQUEST_PARAMS = (
    click.option(
        "--source",
        metavar="bq://PROJECT.DATASET.TABLE",
        help="Read the requests from this BigQuery table instead of FILE.",
    ),
    click.option(
        "--key-column",
        metavar="NAME",
        help="With --source: the column of each row's key.  [default: custom_id]",
    ),
    click.option(
        "--request-column",
        metavar="NAME",
        help="With --source: the column of each row's request (JSON).  [default: request]",
    ),
    # A path, not click.File: a file that cannot be opened is the command's one-line error.
    click.argument("file", required=False, type=click.Path(allow_dash=True)),
)


@contextlib.contextmanager
def given_requests(given: GivenRequests, provider: str) -> Iterator[tuple[Any, IO[bytes] | None]]:
    """The requests to hand to the library, a file's lines (their errors naming the line) or a
    ``BigQuerySource``, and the file they are read from (``None`` for a table: its progress).

    Raises:
        Fail: exit 2, one line: FILE and --source both or neither, a column option without
            --source, a bad --source, or a file that cannot be read.
    """
    if (given.file is None) == (given.source is None):
        both = "not both" if given.file is not None else "one is needed"
        raise Fail(
            ExitCode.USAGE,
            f"give the requests as FILE (JSONL, - for stdin) or --source "
            f"bq://PROJECT.DATASET.TABLE: {both}",
        )
    if given.source is None:
        if given.key_column is not None or given.request_column is not None:
            raise Fail(ExitCode.USAGE, "--key-column and --request-column go with --source only")
        assert given.file is not None
        with open_requests(given.file) as stream:
            lines = request_lines(stream, provider)
            with naming_the_line(lines):
                yield iter(lines), stream
        return
    try:
        source = BigQuerySource(
            given.source, given.key_column or "custom_id", given.request_column or "request"
        )
    except InvalidRequestError as exc:
        field = exc.field or "table"
        flag = "--source" if field == "table" else f"--{field.replace('_', '-')}"
        raise Fail(ExitCode.USAGE, f"{flag}: {exc}") from None
    yield source, None
