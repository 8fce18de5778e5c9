"""Input lines and correlation: what each request becomes on the wire, and how output finds its key.

Pure functions only. Claude lines carry a digest of the key as ``custom_id``; Gemini lines carry it
as a request label and as a sibling field. Every line also gets a *canonical digest* of its
request, which survives Vertex's importer normalisation (nulls injected, key order changed), so an
echoed request can be matched when no id came back.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
from array import array
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pydantic
from google.genai import types as genai_types

from ._errors import InvalidRequestError
from ._importer import (
    MAX_DEPTH,
    Problem,
    documented_names,
    keys_are_strings,
    problem,
    scan,
)
from ._models import ClaudeRequest, GeminiRequest

__all__ = [
    "ANTHROPIC_VERSION",
    "KEY_FIELD",
    "KeyMap",
    "StagedLine",
    "canonical_digest",
    "claude_line",
    "gemini_line",
    "key_digest",
    "parse_key_record",
]

# The version Vertex documents for Claude batch input lines.
ANTHROPIC_VERSION = "vertex-2023-10-16"
# The label (Gemini ``request.labels``) and sibling field that carry a key's digest.
KEY_FIELD = "vb_key"

# GenerateContentConfig fields (by JSON alias) that go on the request itself, not in
# generationConfig; the rest of the config is generation settings. What only the client uses is
# refused: it would have no effect in batch.
_REQUEST_LEVEL = {
    "systemInstruction": "systemInstruction",
    "safetySettings": "safetySettings",
    "tools": "tools",
    "toolConfig": "toolConfig",
    "labels": "labels",
    "cachedContent": "cachedContent",
    "modelArmorConfig": "modelArmorConfig",
    "serviceTier": "serviceTier",
    "continuationToken": "continuationToken",
    "generationOutputConfig": "outputConfig",
}
_CLIENT_SIDE = {
    "httpOptions",
    "shouldReturnHttpResponse",
    "automaticFunctionCalling",
    "automaticContinuation",
}
_NOT_ON_VERTEX = {"enableEnhancedCivicAnswers", "store"}
_DIGEST = re.compile(rb"k[0-9a-f]{32}")


def key_digest(key: str) -> str:
    """The id a key travels under: ``k`` + 32 hex digits of its SHA-256.

    It fits Claude's ``custom_id`` (``[A-Za-z0-9_-]{1,64}``) and Gemini label values
    (lowercase, 63 characters), and starts with a letter so the importer never reads it as a number.
    """
    return "k" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


# Deeper than anything staged (the importer stops at 15) or read back (``_outcomes.MAX_DEPTH``).
_CANONICAL_DEPTH = 128


def _canonical(value: Any, depth: int = 0) -> Any:
    """Drop nulls and what becomes empty without them; integral floats become ints.

    Raises:
        ValueError: arrays and objects nest deeper than ``_CANONICAL_DEPTH``.
    """
    if isinstance(value, dict):
        if depth >= _CANONICAL_DEPTH:
            raise ValueError(f"nested deeper than {_CANONICAL_DEPTH} levels")
        out = {}
        for k, v in value.items():
            c = _canonical(v, depth + 1)
            if c is not None and c != {} and c != []:
                out[k] = c
        return out
    if isinstance(value, list):
        if depth >= _CANONICAL_DEPTH:
            raise ValueError(f"nested deeper than {_CANONICAL_DEPTH} levels")
        return [_canonical(v, depth + 1) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# Compact JSON as staged; the sorted encoder also gives the canonical text.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_SORTED = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)
# What is staged is written strictly: NaN and Infinity are not JSON, and a line holding them
# would fail Vertex's import of the whole job.
_STRICT_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_STRICT_SORTED = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def canonical_digest(request: Mapping[str, Any]) -> str:
    """A digest of a request that is the same for the staged request and Vertex's echo of it.

    Labels are left out: Vertex may or may not echo them.

    Raises:
        ValueError: the request nests deeper than any request can.
    """
    body = {k: v for k, v in request.items() if k != "labels"}
    return _digest(_SORTED.encode(_canonical(body)))


@dataclass(frozen=True, slots=True)
class StagedLine:
    """One request as staged: its key, digests and the JSONL bytes (newline included)."""

    key: str
    digest: str
    canonical: str
    data: bytes

    def key_record(self) -> bytes:
        """This line's entry in the staged key map."""
        return _COMPACT.encode([self.key, self.digest, self.canonical]).encode("utf-8") + b"\n"


def _line(key: str, digest: str, id_field: str, request: dict[str, Any]) -> StagedLine:
    """Check and serialise one request into its line, with the canonical digest on the way.

    The request is serialised once, keys sorted: when it is already canonical (the usual case)
    that text is also the one its canonical digest is taken of. Labels are left out of the
    digest and appended to the line's request.

    Raises:
        InvalidRequestError: the line breaks an importer rule or is not JSON data (NaN, a key
            that is not a string, a set, ...); the message names the place by documented field
            names and positions only, and no exception is chained to it.
    """
    bad, canonical, plain = scan(request)
    if not bad and not plain:
        request = _dump(request)
        bad, canonical, plain = scan(request)
        bad = bad or not plain  # still not plain once converted: not JSON data
    if not bad:
        labels = request.get("labels")
        body = (
            {k: v for k, v in request.items() if k != "labels"} if labels is not None else request
        )
        try:
            sorted_body = _STRICT_SORTED.encode(body)
            if labels is None:
                text = sorted_body
            else:
                rest = sorted_body[1:-1]
                text = f'{{{rest}{"," if rest else ""}"labels":{_STRICT_COMPACT.encode(labels)}}}'
            return StagedLine(
                key=key,
                digest=digest,
                canonical=_digest(sorted_body) if canonical else canonical_digest(request),
                data=f'{{"{id_field}":"{digest}","request":{text}}}\n'.encode(),
            )
        except (TypeError, ValueError, RecursionError):  # NaN, not UTF-8, not JSON data
            pass
    # Raised outside the except block: nothing that holds request content is chained to it.
    raise _refused(key, id_field, problem(_dump(request)))


def _refused(key: str, id_field: str, found: Problem | None) -> InvalidRequestError:
    """The error for a line that cannot be staged, in the terms of the caller's request."""
    top, place, rule = found or ("", "", "not JSON data")
    if id_field == "custom_id":  # a Claude line: the request is the params
        field, place = "params", f"params.{place}" if place else "params"
    else:
        field, place = ("contents" if top == "contents" else "config"), place or "the request"
    return InvalidRequestError(f"request {key!r} {_cannot(rule)}: {place} is {rule}", field=field)


def _cannot(rule: str) -> str:
    # The importer's rules say so; the others are JSON's.
    return "cannot be imported by Vertex" if "importer" in rule else "cannot be written as JSON"


def claude_line(request: ClaudeRequest) -> StagedLine:
    """The Vertex batch line of a Claude request: ``{"custom_id": digest, "request": params}``."""
    if not isinstance(request.params, Mapping):
        raise InvalidRequestError(
            f"params of request {request.key!r} must be a mapping of Anthropic Messages "
            f"parameters, got {type(request.params).__name__}",
            field="params",
        )
    body = dict(request.params)
    if "model" in body:
        raise InvalidRequestError(
            f"params of request {request.key!r} set 'model': the job's model is given to "
            "submit_claude or run_claude, and one job runs one model; drop it from params",
            field="params",
        )
    if body.get("stream", False) is not False:
        raise InvalidRequestError(
            f"params of request {request.key!r} set 'stream': batch prediction answers each "
            "request whole and does not stream; drop it",
            field="params",
        )
    for required in ("max_tokens", "messages"):
        if required not in body:
            raise InvalidRequestError(
                f"params of request {request.key!r} lack {required!r}, which Claude requires",
                field="params",
            )
    body.setdefault("anthropic_version", ANTHROPIC_VERSION)
    return _line(request.key, key_digest(request.key), "custom_id", body)


def _dump(value: Any, depth: int = 0) -> Any:
    """Plain JSON data of a request value, as far as it is JSON data at all.

    google-genai values become their wire form (pydantic models by their aliases), mappings
    dicts, tuples lists, and ``str``, ``int`` and ``float`` subclasses (enums) the plain value
    JSON writes for them; keys that are ``str`` subclasses become ``str``. Anything else (a set,
    bytes, an object, a key that is not a string) is left as it is, for the caller to refuse.
    Conversion stops below the depth the importer allows, so a cyclic or very deep value costs
    a bounded walk (the line is refused for its depth).
    """
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if depth > MAX_DEPTH + 1:
        return value
    if isinstance(value, pydantic.BaseModel):
        try:
            return value.model_dump(mode="json", exclude_none=True, by_alias=True)
        except Exception:  # e.g. an object in an ``Any`` field: refused as not JSON data
            return value
    if isinstance(value, Mapping):
        return {
            (str.__str__(k) if type(k) is not str and isinstance(k, str) else k): _dump(
                v, depth + 1
            )
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_dump(v, depth + 1) for v in value]
    # The base methods give the plain value even when a subclass overrides them.
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return value


def _contents(key: str, contents: Any) -> list[Any]:
    # Fast path for the common forms; google-genai's own transformer handles the rest.
    if isinstance(contents, str):
        return [{"role": "user", "parts": [{"text": contents}]}]
    if isinstance(contents, list) and all(
        isinstance(c, genai_types.Content | Mapping) for c in contents
    ):
        # Plain dicts go as they are (never modified); anything else in them is converted
        # when the line is scanned.
        return [c if type(c) is dict else _dump(c) for c in contents]
    if contents is None:
        raise InvalidRequestError(
            f"contents of request {key!r} are None: a Gemini request needs at least one turn",
            field="contents",
        )
    from google.genai import _transformers

    try:
        return [_dump(c) for c in _transformers.t_contents(contents)]
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
    if isinstance(config, genai_types.GenerateContentConfig):
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
            text = _STRICT_SORTED.encode(config)
    if text is None:
        dumped = _dump(config)
        found = problem(dumped, importer=False)
        if found is not None:
            raise _config_refused(key, found)
        text = _STRICT_SORTED.encode(dumped)
    errors: list[Any] = []
    reason = ""
    try:
        return _config_of_json(text)
    except _NotForBatch as exc:
        reason = str(exc)
    except pydantic.ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
    if errors:
        dumped = _dump(config)
        found = problem(dumped, importer=False)  # a string that is not UTF-8, say
        if found is not None:
            raise _config_refused(key, found)
        reason = _bad_fields(errors, dumped)
    raise InvalidRequestError(f"config of request {key!r} {reason}", field="config")


def _config_refused(key: str, found: Problem | None) -> InvalidRequestError:
    _, place, rule = found or ("", "", "not JSON data")
    return InvalidRequestError(
        f"config of request {key!r} {_cannot(rule)}: "
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
    """Validate a dict config once per distinct config: a job's requests usually share one."""
    return _dump_config(genai_types.GenerateContentConfig.model_validate_json(text))


def gemini_request_body(key: str, contents: Any, config: Any) -> dict[str, Any]:
    """The ``GenerateContentRequest`` JSON of one Gemini request (pure)."""
    request: dict[str, Any] = {"contents": _contents(key, contents)}
    generation: dict[str, Any] = {}
    for name, value in _config(key, config).items():
        if name in _REQUEST_LEVEL:
            request[_REQUEST_LEVEL[name]] = value
        else:
            generation[name] = value
    system = request.get("systemInstruction")
    if isinstance(system, str):
        request["systemInstruction"] = {"role": "user", "parts": [{"text": system}]}
    if generation:
        request["generationConfig"] = generation
    return request


def gemini_line(request: GeminiRequest) -> StagedLine:
    """The Vertex batch line of a Gemini request, its key digest in a label and a sibling field."""
    body = gemini_request_body(request.key, request.contents, request.config)
    digest = key_digest(request.key)
    labels = dict(body.get("labels") or {})
    if KEY_FIELD in labels:
        raise InvalidRequestError(
            f"config.labels of request {request.key!r} uses {KEY_FIELD!r}, which vertexbatch "
            "reserves for correlation",
            field="config",
        )
    labels[KEY_FIELD] = digest
    body["labels"] = labels
    return _line(request.key, digest, KEY_FIELD, body)


class KeyMap:
    """The keys of one job in submission order, and the digests that lead back to them.

    Held compactly (digests as 64-bit integers; the canonical index built only when a row has no
    id), because a Cloud Function reading 200,000 results has little memory to spare.
    """

    __slots__ = ("_by_canonical", "_by_digest", "_canonical", "keys")

    # A digest as the value of an id field in the line's own JSON (``custom_id``, the ``vb_key``
    # sibling or label): a digest quoted inside a string has its quotes escaped and never matches.
    _ID_IN_LINE = re.compile(
        rb'"(?:custom_id|' + KEY_FIELD.encode() + rb')"\s*:\s*"(k[0-9a-f]{32})"'
    )

    def __init__(self) -> None:
        self.keys: list[str] = []
        self._by_digest: dict[int, int] = {}
        self._canonical = array("Q")
        self._by_canonical: dict[int, list[int]] | None = None

    def add(self, key: str, digest: str, canonical: str) -> None:
        """Add one key (in submission order)."""
        self._by_digest[_short(digest)] = len(self.keys)
        self.keys.append(key)
        self._canonical.append(int(canonical[:16], 16) if canonical else 0)
        self._by_canonical = None

    @classmethod
    def from_records(cls, lines: Iterable[bytes]) -> KeyMap:
        """Build a key map from the staged key-map lines (``[key, digest, canonical]``).

        Raises:
            ValueError: a line is not a key record, or a key appears twice (the message names
                the line by number, never its content).
        """
        km = cls()
        seen: set[str] = set()
        for number, raw in enumerate(lines, start=1):
            try:
                key, digest, canonical = parse_key_record(raw)
            except ValueError as exc:
                raise ValueError(f"line {number}: {exc}") from None
            if key in seen:
                raise ValueError(f"line {number}: a key appears twice")
            seen.add(key)
            km.add(key, digest, canonical)
        return km

    def __len__(self) -> int:
        return len(self.keys)

    def _digest_index(self, digest: str) -> int | None:
        if len(digest) != 33 or digest[0] != "k":
            return None
        try:
            return self._by_digest.get(_short(digest))
        except ValueError:
            return None

    def find_digest(self, raw: bytes) -> int | None:
        """The index of the key named by the first id field found in a raw (unparseable) line.

        Only a digest that is the value of a ``custom_id`` or ``vb_key`` field counts: the same
        digest quoted in a response's text (its quotes escaped) names no key.
        """
        for match in self._ID_IN_LINE.finditer(raw):
            index = self._digest_index(match.group(1).decode("ascii"))
            if index is not None:
                return index
        return None

    def match(self, row: Mapping[str, Any], taken: Container[int] = ()) -> int | None:
        """The index of the key an output row answers, or ``None``.

        Tried in order: the digest in ``custom_id`` or the ``vb_key`` sibling field, the digest in
        the echoed request's labels, then the canonical digest of the echoed request (the first
        key with that request not yet ``taken``, so identical requests each get one row).
        """
        index = self.match_id(row)
        return self.match_echo(row, taken) if index is None else index

    def match_id(self, row: Mapping[str, Any]) -> int | None:
        """The index of the key whose digest the row carries (``custom_id``, ``vb_key``, label)."""
        for name in ("custom_id", KEY_FIELD):  # checked first: nearly every row has one
            value = row.get(name)
            if type(value) is str:
                index = self._digest_index(value)
                if index is not None:
                    return index
        request = row.get("request")
        if not isinstance(request, Mapping):
            return None
        labels = request.get("labels")
        if isinstance(labels, Mapping):
            value = labels.get(KEY_FIELD)
            if isinstance(value, str):
                index = self._digest_index(value)
                if index is not None:
                    return index
        return None

    def match_echo(self, row: Mapping[str, Any], taken: Container[int] = ()) -> int | None:
        """The first key not yet ``taken`` whose request the row echoes (by canonical digest)."""
        request = row.get("request")
        if not isinstance(request, Mapping):
            return None
        try:
            canonical = int(canonical_digest(request)[:16], 16)
        except ValueError:  # nested deeper than any staged request
            return None
        if self._by_canonical is None:
            self._by_canonical = {}
            for index, staged in enumerate(self._canonical):
                if staged:
                    self._by_canonical.setdefault(staged, []).append(index)
        for index in self._by_canonical.get(canonical, ()):
            if index not in taken:
                return index
        return None


def parse_key_record(raw: bytes) -> tuple[str, str, str]:
    """``[key, digest, canonical]`` of one key-map line; ``ValueError`` if it is not one."""
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):
        raise ValueError("not a key record (not JSON)") from None
    if (
        type(record) is not list
        or len(record) != 3
        or not all(type(v) is str for v in record)
        or not record[0]
        or not _DIGEST.fullmatch(record[1].encode("utf-8", "replace"))
        or (record[2] and not _HEX32.fullmatch(record[2]))
    ):
        raise ValueError("not a key record ([key, digest, canonical digest])")
    return record[0], record[1], record[2]


_HEX32 = re.compile(r"[0-9a-f]{32}")


def _short(digest: str) -> int:
    """64 bits of a key digest: plenty to tell 200,000 keys apart, a third of the memory."""
    return int(digest[1:17], 16)
