"""Input lines and correlation: what each request becomes on the wire, and how output finds its key.

Pure functions only. Claude lines carry a digest of the key as ``custom_id``; Gemini lines carry it
as a request label and as a sibling field. Every line also gets a *canonical digest* of its
request, which survives Vertex's importer normalisation (nulls injected, key order changed), so an
echoed request can be matched when no id came back.
"""

from __future__ import annotations

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
from ._importer import scan
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
]

# The version Vertex documents for Claude batch input lines.
ANTHROPIC_VERSION = "vertex-2023-10-16"
# The label (Gemini ``request.labels``) and sibling field that carry a key's digest.
KEY_FIELD = "vb_key"

# GenerateContentConfig fields (by JSON alias) that go on the request itself, not in
# generationConfig; the rest of the config is generation settings, except what only the client uses.
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


def _canonical(value: Any) -> Any:
    """Drop nulls and what becomes empty without them; integral floats become ints."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            c = _canonical(v)
            if c is not None and c != {} and c != []:
                out[k] = c
        return out
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# Compact JSON as staged; the sorted encoder also gives the canonical text.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_SORTED = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def canonical_digest(request: Mapping[str, Any]) -> str:
    """A digest of a request that is the same for the staged request and Vertex's echo of it.

    Labels are left out: Vertex may or may not echo them.
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
    """
    problem, canonical, plain = scan(request)
    if not plain:
        request = _dump(request)
        problem, canonical, _ = scan(request)
    if problem:
        raise InvalidRequestError(f"request {key!r} cannot be imported by Vertex: {problem}")
    labels = request.get("labels")
    body = {k: v for k, v in request.items() if k != "labels"} if labels is not None else request
    try:
        sorted_body = _SORTED.encode(body)
        if labels is None:
            text = sorted_body
        else:
            rest = sorted_body[1:-1]
            text = f'{{{rest}{"," if rest else ""}"labels":{_COMPACT.encode(labels)}}}'
    except (TypeError, ValueError) as exc:
        raise InvalidRequestError(
            f"request {key!r} cannot be serialised to JSON: {type(exc).__name__}", field="params"
        ) from exc
    return StagedLine(
        key=key,
        digest=digest,
        canonical=_digest(sorted_body) if canonical else canonical_digest(request),
        data=f'{{"{id_field}":"{digest}","request":{text}}}\n'.encode(),
    )


def claude_line(request: ClaudeRequest) -> StagedLine:
    """The Vertex batch line of a Claude request: ``{"custom_id": digest, "request": params}``."""
    if not isinstance(request.params, Mapping):
        raise InvalidRequestError(
            f"params of request {request.key!r} must be a mapping of Anthropic Messages "
            f"parameters, got {type(request.params).__name__}",
            field="params",
        )
    body = {k: v for k, v in request.params.items() if k != "model"}
    for required in ("max_tokens", "messages"):
        if required not in body:
            raise InvalidRequestError(
                f"params of request {request.key!r} lack {required!r}, which Claude requires",
                field="params",
            )
    body.setdefault("anthropic_version", ANTHROPIC_VERSION)
    return _line(request.key, key_digest(request.key), "custom_id", body)


def _dump(value: Any) -> Any:
    """Plain JSON data of a google-genai value (pydantic models by their wire aliases)."""
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json", exclude_none=True, by_alias=True)
    if isinstance(value, Mapping):
        return {k: _dump(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_dump(v) for v in value]
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
    from google.genai import _transformers

    try:
        return [_dump(c) for c in _transformers.t_contents(contents)]
    except (TypeError, ValueError, pydantic.ValidationError) as exc:
        raise InvalidRequestError(
            f"contents of request {key!r} are not google-genai contents: {type(exc).__name__}",
            field="contents",
        ) from exc


def _config(key: str, config: Any) -> dict[str, Any]:
    """The config's fields by their wire names (shared between calls: never modify it)."""
    if config is None:
        return {}
    try:
        if isinstance(config, Mapping):
            try:
                text = _SORTED.encode(config)
            except (TypeError, ValueError):  # not JSON data: validate it the slow way
                return _dump_config(genai_types.GenerateContentConfig.model_validate(config))
            return _config_of_json(text)
        if isinstance(config, genai_types.GenerateContentConfig):
            return _dump_config(config)
    except pydantic.ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        raise InvalidRequestError(
            f"config of request {key!r} is not a GenerateContentConfig: bad fields {fields}",
            field="config",
        ) from exc
    except _UnsupportedField as exc:
        raise InvalidRequestError(
            f"config of request {key!r} sets {exc.args[0]}, which Vertex does not support",
            field="config",
        ) from exc
    raise InvalidRequestError(
        f"config of request {key!r} must be a GenerateContentConfig or its dict form, "
        f"got {type(config).__name__}",
        field="config",
    )


class _UnsupportedField(Exception):
    pass


def _dump_config(config: genai_types.GenerateContentConfig) -> dict[str, Any]:
    dumped: dict[str, Any] = config.model_dump(mode="json", exclude_none=True, by_alias=True)
    refused = sorted(_NOT_ON_VERTEX & dumped.keys())
    if refused:
        raise _UnsupportedField(refused)
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
        if name in _CLIENT_SIDE:
            continue
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
        """Build a key map from the staged key-map lines (``[key, digest, canonical]``)."""
        km = cls()
        for raw in lines:
            if raw.strip():
                key, digest, canonical = json.loads(raw)
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
        """The index of the first known key digest found in a raw (unparseable) line."""
        for match in _DIGEST.finditer(raw):
            index = self._digest_index(match.group().decode("ascii"))
            if index is not None:
                return index
        return None

    def match(self, row: Mapping[str, Any], taken: Container[int] = ()) -> int | None:
        """The index of the key an output row answers, or ``None``.

        Tried in order: the digest in ``custom_id`` or the ``vb_key`` sibling field, the digest in
        the echoed request's labels, then the canonical digest of the echoed request (the first
        key with that request not yet ``taken``, so identical requests each get one row).
        """
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
        if self._by_canonical is None:
            self._by_canonical = {}
            for index, canonical in enumerate(self._canonical):
                if canonical:
                    self._by_canonical.setdefault(canonical, []).append(index)
        for index in self._by_canonical.get(int(canonical_digest(request)[:16], 16), ()):
            if index not in taken:
                return index
        return None


def _short(digest: str) -> int:
    """64 bits of a key digest: plenty to tell 200,000 keys apart, a third of the memory."""
    return int(digest[1:17], 16)
