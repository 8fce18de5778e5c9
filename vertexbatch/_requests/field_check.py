"""Refusing, before staging, a request with a field the provider would refuse as unknown (pure).

The Anthropic API answers a field it does not know with ``invalid_request_error`` ("Extra
inputs are not permitted") and Vertex's Gemini endpoint with 400 ``Invalid JSON payload
received. Unknown name ...``: line by line, hours after the submission. These checks find such
a field first, by the installed SDKs' own request types (``_requests.sdk_fields``), and raise
``InvalidRequestError`` naming the request's key and the field's place; a name no SDK type
documents is given by position (``params.<field 3>``), as a mapping's keys may be content, and
no value is ever quoted.

- Claude: the whole of ``params`` (``anthropic.types.MessageCreateParams`` and what it
  reaches, plus Vertex's own fields, ``VERTEX_CLAUDE_FIELDS``).
- Gemini: ``contents`` given as dicts (``Content`` values are checked by google-genai itself,
  and a config by ``GenerateContentConfig``, in ``_requests.gemini_body``).

``submit_*``, ``plan_*`` and ``run_*`` check by default; ``check_fields=False`` stages what the
installed SDK does not know (a parameter newer than it; docs/guarantees.md, "Request fields").
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from importlib import metadata
from typing import Any

from .._errors import InvalidRequestError
from .._values import ClaudeRequest, GeminiRequest
from .importer_rules import documented_names
from .lines import StagedLine
from .sdk_fields import claude_unknown, gemini_unknown
from .type_walk import Unknown

__all__ = ["check_claude_fields", "check_gemini_fields", "checked_builder"]


@functools.cache
def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:  # pragma: no cover - both are dependencies
        return "(version unknown)"


def _refused(
    key: str, field: str, place: str, near: str | None, sdk: str, api: str
) -> InvalidRequestError:
    # ``near`` is a name the SDK's types define, never the caller's: safe to show.
    meant = f" (did you mean {near!r}?)" if near else ""
    return InvalidRequestError(
        f"request {key!r} sets a field {api} does not take: {place} is not a field of the "
        f"installed {sdk} {_version(sdk)}'s request types{meant}, and {api} refuses unknown fields "
        "line by line; fix its name, or, for a parameter newer than the installed SDK, "
        "upgrade it or submit with check_fields=False",
        field=field,
    )


def _place(prefix: str, unknown: Unknown) -> str:
    shown = documented_names().__contains__
    path = unknown.safe_path(shown)
    return f"{prefix}.{path}" if prefix and not path.startswith("[") else prefix + path


def check_claude_fields(request: ClaudeRequest) -> None:
    """Refuse a Claude request whose params carry a field the Messages API would refuse.

    ``model`` and ``stream`` are ``claude_line``'s to refuse, with reasons of their own.
    """
    params = request.params
    if not isinstance(params, Mapping):
        return  # claude_line refuses it
    unknown = claude_unknown(params)
    if unknown is None or (not unknown.parent and unknown.name in ("model", "stream")):
        return
    place = _place("params", unknown)
    raise _refused(request.key, "params", place, unknown.near, "anthropic", "Claude's Messages API")


def check_gemini_fields(request: GeminiRequest) -> None:
    """Refuse a Gemini request whose dict contents carry a field Vertex would refuse."""
    contents = request.contents
    if not isinstance(contents, list):
        return
    unknown = gemini_unknown({"contents": contents})
    if unknown is None:
        return
    place = _place("", unknown)
    raise _refused(
        request.key, "contents", place, unknown.near, "google-genai", "Vertex's Gemini API"
    )


def checked_builder(
    line: Callable[..., StagedLine], check: Callable[[Any], None]
) -> Callable[..., StagedLine]:
    """``line``, then ``check`` of the request: a line's own refusals (a missing field, the
    importer's rules) come first, then an unknown field."""

    def build(request: Any, *args: Any, **kwargs: Any) -> StagedLine:
        staged = line(request, *args, **kwargs)
        check(request)
        return staged

    return build
