"""A Gemini request's ``GenerateContentRequest`` body: contents and config as Vertex takes them.

Pure, and checked before anything is staged: a ``GenerateContentConfig`` (or its dict form) is
split into the request-level fields and ``generationConfig`` by their wire names, validated once
per distinct dict config (a dict of the first generation fields only without google-genai:
``_requests.plain_config``), and refused by documented field names and positions only
(pydantic's errors quote values, so none is chained).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

import orjson

from .._errors import InvalidRequestError
from .importer_rules import Problem, documented_names, keys_are_strings, problem, scan
from .plain_config import plain_config
from .plain_json import STRICT_SORTED, cannot, dump, loaded
from .sdk_fields import GEMINI_REQUEST_LEVEL

if TYPE_CHECKING:
    from google.genai import types as genai_types

__all__ = ["gemini_body", "gemini_request_body"]

# GenerateContentConfig fields (by JSON alias) that go on the request itself, not in
# generationConfig; the rest of the config is generation settings. What only the client uses is
# refused: it would have no effect in batch.
_REQUEST_LEVEL = GEMINI_REQUEST_LEVEL  # one table with the field check's
_CLIENT_SIDE = {
    "httpOptions",
    "shouldReturnHttpResponse",
    "automaticFunctionCalling",
    "automaticContinuation",
}
_NOT_ON_VERTEX = {"enableEnhancedCivicAnswers", "store"}

# Batch prediction does not take an explicit context cache: a line naming one fails hours later
# ("Model ... does not support cached content with batch prediction.", 400 per line). Sources,
# read 2026-12-07: Google's Gemini batch page, "Unsupported features: batch prediction does not
# support explicit caching or RAG" (https://cloud.google.com/vertex-ai/generative-ai/docs/
# multimodal/batch-prediction-gemini, its zh-CN and zh-TW versions); python-genai issue #509,
# "Cannot send cached content to a batch job" (https://github.com/googleapis/python-genai/issues/
# 509); implicit caching needs no field and keeps working.
_EXPLICIT_CACHE = "cachedContent"


def _contents(key: str, contents: Any) -> list[Any]:
    # Fast path for the common forms; google-genai's own transformer handles the rest.
    if isinstance(contents, str):
        return [{"role": "user", "parts": [{"text": contents}]}]
    if type(contents) is list and contents and all(type(c) is dict for c in contents):
        return list(contents)  # the usual form: plain dicts go as they are (never modified)
    if contents is None or (isinstance(contents, list | tuple) and not contents):
        what = "None" if contents is None else "empty"
        raise InvalidRequestError(
            f"contents of request {key!r} are {what}: a Gemini request needs at least one turn",
            field="contents",
        )
    content = loaded("google.genai.types", "Content")
    kinds = (Mapping,) if content is None else (content, Mapping)
    if isinstance(contents, list) and all(isinstance(c, kinds) for c in contents):
        # Plain dicts go as they are (never modified); anything else in them is converted
        # when the line is scanned.
        return [c if type(c) is dict else dump(c) for c in contents]
    from google.genai import _transformers

    try:
        return [dump(c) for c in _transformers.t_contents(contents)]
    except Exception as exc:  # whatever google-genai raises for a value it cannot read
        kind = type(exc).__name__
    # Raised outside the except block: google-genai's error may quote the contents.
    raise InvalidRequestError(
        f"contents of request {key!r} are not google-genai contents ({kind}): give a string, "
        "Content values or their dict form",
        field="contents",
    )


def _config(key: str, config: Any) -> dict[str, Any]:
    """The config's fields by their wire names (shared between calls: never modify it).

    Errors name config fields by their documented names and positions only; none is chained
    (a pydantic error quotes the value it refused).
    """
    if config is None:
        return {}
    config_type = loaded("google.genai.types", "GenerateContentConfig")
    if config_type is not None and isinstance(config, config_type):
        try:
            return _dump_config(config)
        except _NotForBatch as exc:
            reason = str(exc)
        except Exception as exc:  # a value in an ``Any`` field pydantic cannot serialise
            reason = f"cannot be written as JSON ({type(exc).__name__})"
        raise InvalidRequestError(f"config of request {key!r} {reason}", field="config")
    if not isinstance(config, Mapping):
        raise InvalidRequestError(
            f"config of request {key!r} must be a GenerateContentConfig or its dict form, "
            f"got {type(config).__name__}",
            field="config",
        )
    text = None
    # json.dumps would write an int key as a string, NaN as a bare token: checked first.
    if type(config) is dict and keys_are_strings(config):
        # Failing: google-genai values in it (converted below), or not JSON data.
        with contextlib.suppress(TypeError, ValueError):
            text = STRICT_SORTED.encode(config)
        # JSON data of the first generation fields only: what validation would give, without
        # importing google-genai (``_requests.plain_config``).
        plain = None if text is None else plain_config(config)
        if plain is not None:
            return plain
    if text is None:
        dumped = dump(config)
        found = problem(dumped, importer=False)
        if found is not None:
            raise _config_refused(key, found)
        text = STRICT_SORTED.encode(dumped)
    errors: list[Any] = []
    reason = ""
    try:
        return _config_of_json(text)
    except _NotForBatch as exc:
        reason = str(exc)
    except _Invalid as exc:
        errors = exc.errors
    if errors:
        dumped = dump(config)
        found = problem(dumped, importer=False)  # a string that is not UTF-8, say
        if found is not None:
            raise _config_refused(key, found)
        reason = _bad_fields(errors, dumped)
    raise InvalidRequestError(f"config of request {key!r} {reason}", field="config")


def _config_refused(key: str, found: Problem | None) -> InvalidRequestError:
    _, place, rule = found or ("", "", "not JSON data")
    return InvalidRequestError(
        f"config of request {key!r} {cannot(rule)}: "
        f"{'config.' + place if place else 'config'} is {rule}",
        field="config",
    )


# pydantic error types, in words.
_ERROR_WORDS = {"extra_forbidden": "unknown field", "missing": "missing"}


def _bad_fields(errors: Iterable[Mapping[str, Any]], config: Any) -> str:
    """What pydantic refused in a config, by place and error type, never by value."""
    places = {
        f"{_place(config, e['loc'])} ({_ERROR_WORDS.get(e['type'], e['type'])})": None
        for e in errors
    }
    shown = list(places)[:5]
    more = f" and {len(places) - 5} more" if len(places) > 5 else ""
    return f"is not a GenerateContentConfig: {'; '.join(shown)}{more}"


def _place(value: Any, loc: Iterable[Any]) -> str:
    """A pydantic error location in a config, by documented field names and positions only."""
    known = documented_names()
    path = "config"
    node = value
    for item in loc:
        if isinstance(node, dict) and isinstance(item, str) and item in node:
            path += f".{item}" if item in known else f".<field {list(node).index(item) + 1}>"
            node = node[item]
        elif type(item) is int:
            path += f"[{item}]"
            node = node[item] if isinstance(node, list) and 0 <= item < len(node) else None
        elif isinstance(item, str) and item in known:  # a missing field, say
            path += f".{item}"
            node = None
        # Anything else is pydantic's own marker (a union member, "[key]"): not a place.
    return path


class _NotForBatch(Exception):
    """A config the batch API cannot take; the message (no content) follows the request key."""


class _Invalid(Exception):
    """pydantic refused a dict config: its errors, without the values they refused."""

    def __init__(self, errors: list[Any]) -> None:
        super().__init__("invalid config")
        self.errors = errors


def _dump_config(config: genai_types.GenerateContentConfig) -> dict[str, Any]:
    dumped: dict[str, Any] = config.model_dump(mode="json", exclude_none=True, by_alias=True)
    refused = sorted(_NOT_ON_VERTEX & dumped.keys())
    if refused:
        raise _NotForBatch(f"sets {refused}, which Vertex does not support")
    client_side = sorted(_CLIENT_SIDE & dumped.keys())
    if client_side:
        raise _NotForBatch(
            f"sets {client_side}, which only the google-genai client uses: they have no effect "
            "in batch prediction; drop them"
        )
    return dumped


@functools.lru_cache(maxsize=64)
def _config_of_json(text: str) -> dict[str, Any]:
    """Validate a dict config once per distinct config: a job's requests usually share one.

    Raises:
        _Invalid: pydantic's errors, when the config is not a ``GenerateContentConfig``.
        _NotForBatch: the config sets fields batch prediction cannot take.
    """
    # Imported here, once per distinct config, not per line: google-genai's types are needed
    # only to validate a config.
    import pydantic
    from google.genai import types as genai_types

    try:
        config = genai_types.GenerateContentConfig.model_validate_json(text)
    except pydantic.ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
    else:
        return _dump_config(config)
    # Raised outside the except block: pydantic's error quotes the values it refused.
    raise _Invalid(errors)


def gemini_request_body(key: str, contents: Any, config: Any) -> dict[str, Any]:
    """The ``GenerateContentRequest`` JSON of one Gemini request (pure).

    What comes from the config is shared between the requests of one config: never modify it.
    """
    return gemini_body(key, contents, config)[0]


def gemini_body(key: str, contents: Any, config: Any) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``gemini_request_body``, and the fields whose values are shared with other requests of
    an equal dict config (for ``FieldTypes.check``; labels aside, which the line replaces)."""
    request: dict[str, Any] = {"contents": _contents(key, contents)}
    fields, generation, shared = _config_parts(key, config)
    request.update(fields)
    if generation:
        request["generationConfig"] = generation
    return request, shared


# A config's parts (``_config_parts``) by the exact text of the config (``_config_key``).
_PARTS: dict[bytes, tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]] = {}
_PARTS_HELD = 64


def _config_parts(key: str, config: Any) -> tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]:
    """The request's fields from a config (wire names, in the config's order), its
    ``generationConfig`` and the names of those shared between requests (none when the config
    is not remembered): validated once per distinct dict config, not once per line.

    A job's requests usually share one config: the same dict, or equal dicts built per request.
    Remembered by the config's exact text (``_config_key``), not by identity: a caller may change
    a dict between requests, and an equal dict is as good as the same one.
    """
    text = _config_key(config)
    if text is not None:
        found = _PARTS.get(text)
        if found is not None:
            return found
    fields: dict[str, Any] = {}
    generation: dict[str, Any] = {}
    for name, value in _config(key, config).items():
        if name == _EXPLICIT_CACHE:
            raise _explicit_cache(key)
        if name in _REQUEST_LEVEL:
            fields[_REQUEST_LEVEL[name]] = value
        else:
            generation[name] = value
    _check_numbers(key, generation)
    system = fields.get("systemInstruction")
    if isinstance(system, str):
        fields["systemInstruction"] = {"role": "user", "parts": [{"text": system}]}
    if text is None:
        return fields, generation, ()
    shared = (*(name for name in fields if name != "labels"), "generationConfig")
    if len(_PARTS) >= _PARTS_HELD:
        _PARTS.clear()  # a job's configs are few: more means each is used by few lines
    _PARTS[text] = fields, generation, shared
    return fields, generation, shared


def _explicit_cache(key: str) -> InvalidRequestError:
    """The refusal of a request naming an explicit context cache (its name is never quoted)."""
    return InvalidRequestError(
        f"config of request {key!r} sets cachedContent (an explicit context cache): Vertex "
        "batch prediction does not take explicit context caches, and every line naming one "
        "fails; drop it and send the cached contents in the request (Gemini's implicit "
        "caching applies to batch by itself)",
        field="config",
    )


# generationConfig's numbers by their proto type in aiplatform_v1's GenerationConfig: int32 and
# (32-bit) float. google-genai's types take any int or float, and Vertex refuses one past the
# proto's range line by line; the plan's arithmetic would fail on an int past 1.8e308.
_INT32: Final = ("candidateCount", "maxOutputTokens", "logprobs", "seed", "thinkingBudget")
_FLOAT32: Final = ("temperature", "topP", "topK", "presencePenalty", "frequencyPenalty")
_FLOAT32_MAX: Final = 3.4028234663852886e38
_INFINITY: Final = float("inf")


def _check_numbers(key: str, generation: Mapping[str, Any]) -> None:
    """Refuse a generationConfig number past its proto type's range, naming the field."""
    thinking = generation.get("thinkingConfig")
    for name in _INT32 + _FLOAT32:
        holder = thinking if name == "thinkingBudget" else generation
        value = holder.get(name) if isinstance(holder, Mapping) else None
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            continue  # NaN and Infinity are the strict encoder's to refuse, as not JSON
        if isinstance(value, float) and value in (_INFINITY, -_INFINITY):
            continue
        place = f"thinkingConfig.{name}" if name == "thinkingBudget" else name
        if name in _INT32 and not -(2**31) <= value < 2**31:
            rule = "a whole number from -2,147,483,648 to 2,147,483,647 (an int32)"
        elif name in _FLOAT32 and not -_FLOAT32_MAX <= value <= _FLOAT32_MAX:
            rule = "a number at most 3.4e38 in size (a 32-bit float)"
        else:
            continue
        raise InvalidRequestError(
            f"config of request {key!r} sets generationConfig.{place} past what Vertex takes: "
            f"it must be {rule}, as Vertex's GenerationConfig declares it",
            field="config",
        )


def _config_key(config: Any) -> bytes | None:
    """A dict config's text, equal for two configs exactly when ``_config`` gives them one
    answer; ``None`` for any other config (validated each time).

    orjson's sorted text of plain JSON data (``scan``: exact built-in types, string keys) with
    no NaN or Infinity (``fixed``) tells every value apart: ``1``, ``1.0`` and ``true``, ``0.0``
    and ``-0.0``, a string and a number. Anything else (a str subclass or an enum, which orjson
    writes as their value; NaN, which it writes as ``null``; a tuple; integers past 64 bits) is
    left to ``_config``. ``scan``'s rules for lines (no empty object, key names) do not apply
    to a config: a config that breaks them is only not remembered.
    """
    if type(config) is not dict:
        return None
    bad, _, plain, fixed = scan(config)
    if bad or not plain or not fixed:
        return None
    try:
        return orjson.dumps(config, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:  # an integer past 64 bits, a string that is not UTF-8
        return None
