"""Requests kept as JSONL files under a GCS prefix: listed once, shared out by task, streamed.

``vertexbatch.list_request_files(client, "gs://bucket/in/")`` (``request_files_under`` here,
given the client's staging) lists the prefix once (every page, through the client's storage
client and retry policy) into a ``RequestFiles``: the files sorted by name,
each with its size and generation. ``files.share(task)`` is a task's part of them, cut by bytes
(``_runs.shares``, pure); ``files.claude_requests()`` and ``files.gemini_requests()`` stream
their lines as requests, a range at a time, each file read at the generation listed (a file
replaced since is refused, never read as a splice of two). A line is one of ``vertexbatch
submit``'s: ``{"key": ..., "params": {...}}`` for Claude, ``{"key": ..., "contents": [...],
"config": {...}}`` for Gemini; one that cannot be read is an ``InvalidRequestError`` naming the
file's URI and the line's number, never its content.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from .._errors import InvalidRequestError, ObjectReplaced
from .._gcs.staging import Staging, parse_gs_uri
from .._json import MAX_DEPTH, too_deep
from .._providers import ProviderRow, by_command, unknown_line_fields
from .._runs.shares import Listed, share_of
from .._runs.tasks import Task
from .._values import ClaudeRequest, GeminiRequest

__all__ = ["RequestFile", "RequestFiles", "request_files_under"]

R = TypeVar("R", ClaudeRequest, GeminiRequest)


@dataclass(frozen=True, slots=True)
class RequestFile:
    """One request file: its ``gs://`` URI, its size in bytes and the generation listed."""

    uri: str
    size: int
    generation: int = 0


class RequestFiles:
    """Request files under one prefix, sorted by name: every file of a listing, or a task's
    share of them (``share``). Iterate it for the files; ``len`` is their number."""

    __slots__ = ("_files", "_staging", "listing", "prefix", "task")

    def __init__(
        self,
        staging: Staging,
        prefix: str,
        files: tuple[RequestFile, ...],
        task: Task | None,
        listing: str = "",
    ) -> None:
        self._staging = staging
        self._files = files
        self.prefix = prefix
        self.task = task  # whose share these are (None: the whole listing)
        # The digest of the whole listing a share was cut from: every task's record names it.
        self.listing = listing or _digest(files)

    def __iter__(self) -> Iterator[RequestFile]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    @property
    def size(self) -> int:
        """The files' total size in bytes."""
        return sum(file.size for file in self._files)

    def __repr__(self) -> str:
        whose = "" if self.task is None else f", task={self.task.index}/{self.task.count}"
        return f"RequestFiles({self.prefix!r}, files={len(self)}, bytes={self.size}{whose})"

    def share(self, task: Task | None) -> RequestFiles:
        """Task ``task``'s share of the files: a contiguous run of them, by name, of about
        ``1/task.count`` of their bytes; ``None`` (no task, as ``Task.from_env()`` returns
        outside Cloud Run) is every file.

        The shares of tasks ``0 … count-1`` hold every file exactly once, and a retried task
        (the same index and count, the same listing) gets the same share. A share may be
        empty (fewer files than tasks, or a large file covering a task's bytes): that task
        still registers its empty part of the run, which is complete once every task has.

        Raises:
            InvalidRequestError: ``task`` is not a ``vertexbatch.Task`` or ``None``, or these
                files are a share already (``field == "task"``).
        """
        if task is None:
            return self
        if not isinstance(task, Task):
            raise InvalidRequestError(
                f"task must be a vertexbatch.Task or None, got {type(task).__name__}",
                field="task",
            )
        if self.task is not None:
            raise InvalidRequestError(
                f"these files are already the share of {self.task}: share the whole listing",
                field="task",
            )
        by_name = {file.uri: file for file in self._files}
        mine = share_of(((file.uri, file.size) for file in self._files), task)
        return RequestFiles(
            self._staging, self.prefix, tuple(by_name[u] for u, _ in mine), task, self.listing
        )

    def claude_requests(self) -> Listed[ClaudeRequest]:
        """The files' Claude requests (lines ``{"key": ..., "params": {...}}``), in order,
        streamed: no file is held whole. The iterator's ``listing`` names the files' listing
        (a digest), which a task's record keeps: tasks whose listings differ are refused.

        Raises:
            InvalidRequestError: a line is not a Claude request line (as it is read; the message
                names the file's URI and the line's number), or a file was replaced or removed
                since it was listed.
        """
        return Listed(self._requests("claude", _claude), self.listing)

    def gemini_requests(self) -> Listed[GeminiRequest]:
        """The files' Gemini requests (lines ``{"key": ..., "contents": [...], "config":
        {...}}``), in order, streamed; see ``claude_requests``."""
        return Listed(self._requests("gemini", _gemini), self.listing)

    def _requests(self, provider: str, build: Callable[[_Line, dict[str, Any]], R]) -> Iterator[R]:
        row = by_command(provider)
        for file in self._files:
            line = _Line(file.uri, 0)
            try:
                for raw in self._staging.read_lines(file.uri, generation=file.generation):
                    line.number += 1
                    if raw.strip():
                        yield build(line, line.parse(raw, row))
            except ObjectReplaced:
                raise InvalidRequestError(
                    f"{file.uri} was replaced or removed after it was listed: list the prefix "
                    "again (a retried task is given the files of its first listing)",
                    field="requests",
                ) from None


@dataclass(slots=True)
class _Line:
    """Where a request line is: its file and number, for the error that names it."""

    uri: str
    number: int

    def bad(self, problem: str, field: str = "requests") -> InvalidRequestError:
        return InvalidRequestError(f"{self.uri} line {self.number}: {problem}", field=field)

    def parse(self, raw: bytes, row: ProviderRow) -> dict[str, Any]:
        problem = ""
        data: Any = None
        try:
            text = raw.decode("utf-8").rstrip("\r")
            if too_deep(text):  # measured before parsing, never met at the parser's limit
                problem = f"not valid JSON (nested too deeply: past {MAX_DEPTH} levels)"
            else:
                data = json.loads(text, parse_constant=_not_json)
        except UnicodeDecodeError:
            problem = "not UTF-8 text"
        except json.JSONDecodeError as exc:  # its msg and column, never the line
            problem = f"not valid JSON ({exc.msg} at column {exc.colno})"
        except ValueError:
            problem = "not valid JSON (NaN, Infinity or too long an integer)"
        if problem:  # raised outside the except block: the decoder's error holds the text
            raise self.bad(problem)
        if not isinstance(data, dict):
            raise self.bad(f"expected a JSON object, got {type(data).__name__}")
        unknown = unknown_line_fields(row, data)
        if unknown:
            raise self.bad(unknown)
        if not isinstance(data.get("key"), str) or not data["key"]:
            raise self.bad("'key' must be a non-empty string", field="key")
        return data


def _digest(files: tuple[RequestFile, ...]) -> str:
    """The MD5 of a listing's (name, size, generation) triples, sorted by name."""
    text = json.dumps([[f.uri, f.size, f.generation] for f in sorted(files, key=_uri)])
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()


def _uri(file: RequestFile) -> str:
    return file.uri


def _not_json(token: str) -> Any:
    raise ValueError(token)


def _claude(line: _Line, data: dict[str, Any]) -> ClaudeRequest:
    params = data.get("params")
    if not isinstance(params, dict):
        raise line.bad("'params' must be an object of Messages parameters", "params")
    if "model" in params:
        raise line.bad("'params' sets 'model': the run's model is given for every line", "params")
    return ClaudeRequest(data["key"], params)


def _gemini(line: _Line, data: dict[str, Any]) -> GeminiRequest:
    if "contents" not in data:
        raise line.bad("lacks 'contents'", field="contents")
    if data.get("config") is not None and not isinstance(data["config"], dict):
        raise line.bad("'config' must be an object or null", field="config")
    return GeminiRequest(data["key"], data["contents"], data.get("config"))


def request_files_under(staging: Staging, prefix: str) -> RequestFiles:
    """The request files under ``prefix`` (``gs://bucket/path/``), sorted by name, listed once
    through ``staging`` (a client's): ``vertexbatch.list_request_files``.

    Raises:
        InvalidRequestError: ``prefix`` is not a ``gs://bucket/path`` URI (``field == "uri"``),
            or no file is under it (``field == "requests"``).
    """
    if not isinstance(prefix, str):
        raise InvalidRequestError(
            f"prefix must be a gs://bucket/path URI, got {type(prefix).__name__}", field="uri"
        )
    bucket, path = parse_gs_uri(prefix)
    if not bucket or not path.strip("/"):
        raise InvalidRequestError(
            f"prefix {prefix!r} is not a gs://bucket/path URI (a folder in a bucket)", field="uri"
        )
    folder = f"gs://{bucket}/{path.strip('/')}/"
    listed = staging.list_names(folder)
    files = tuple(
        RequestFile(uri, size, generation)
        for uri, size, generation in sorted(listed)
        if not uri.endswith("/")
    )
    if not files:
        raise InvalidRequestError(
            f"no request files under {folder}: nothing to submit", field="requests"
        )
    return RequestFiles(staging, folder, files, None)
