"""Dedupe: stage each distinct request once, and give its answer to every key that sent it.

Pure. Requests are equal when their *exact* digests are (``exact_digest``: the request as
staged, keys sorted, without the key it travels under). Not the canonical digest, which matches
Vertex's echo and so ignores nulls, empty values and ``2.0`` against ``2``: requests that differ
only there may mean different things (a tool input ``{"discount": null}`` is not ``{}``), and
must not share an answer. The first key of a request is staged as usual;
each later key with the same request becomes an *alias*: a key record that carries the first
key's digest and no input line. ``KeyMap`` then leads the one answered line to all its keys, and
``shared_result`` gives each of them the same outcome under its own key.

A request may name a file instead of carrying it (``named_files``: Gemini's ``fileData`` part,
Claude's ``url`` source, with a ``gs://`` URI). Its answer depends on the object, which may be
replaced under the same URI: the answer cache keys it on the generation of each object it names
as well (``exact_digest``'s ``files``, read by ``_cache.files``). Dedupe needs none: the equal
requests of one submission name the same objects, read by the one job.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from .._errors import ResultError
from .._values import Result
from .lines import StagedLine, staged_body

__all__ = [
    "alias_of",
    "dedupe",
    "exact_digest",
    "exact_digests",
    "is_alias",
    "named_files",
    "shared_result",
]

# A staged line is ``{"<id field>":"<key digest>","request":<request>}`` (``_requests.lines``).
# Claude's, Gemini's and an embedding's (``_requests.embedding_line``: Google's ``key``).
_HEADS = (b'{"custom_id":"', b'{"vb_key":"', b'{"key":"')
_LABELLED = _HEADS[1]  # the one whose request carries labels
_MID = b'","request":'
_DIGEST_LENGTH = 33
# As ``_requests.lines`` writes a request: what it staged sorts and encodes to the same text again.
_SORTED = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def exact_digest(data: bytes, files: Mapping[str, int] | None = None) -> tuple[str, str]:
    """The key digest a staged line travels under, and the exact digest of its request.

    The exact digest is taken of the request as staged (sorted keys, compact, strict JSON: one
    text per request) without the key's digest; a Gemini request's labels are left out too (they
    tag the job, they never change its answer). A line of any other shape gets a digest of the
    whole line, which names its key: it equals no other line's, so it is never shared (and its
    key digest is "").

    With ``files`` (``gs://`` URI -> the object's generation, read when the line was staged), a
    request that names files (``named_files``) is digested with the generation of each: the same
    request naming a replaced object is another request. Without, or for a request naming none,
    the digest is the request's alone.
    """
    key, exact = _exact_digest(data)
    if files and key:
        named = sorted({uri for _, uri in named_files(data)})
        if named:
            versions = "\n".join(f"{uri}#{files.get(uri, 0)}" for uri in named)
            exact = _hex(exact.encode("ascii") + b"\nfiles\n" + versions.encode("utf-8"))
    return key, exact


def named_files(data: bytes) -> list[tuple[str, str]]:
    """The ``gs://`` objects a staged line's request names, each as (its place in the request,
    its URI), in order: a ``fileData`` / ``file_data`` part's ``fileUri`` / ``file_uri``, a
    ``source`` of ``"type": "url"``'s ``url``. Quick for a line that holds no ``gs://``."""
    if b"gs://" not in data:
        return []
    try:
        request = staged_body(json.loads(data))
    except (ValueError, TypeError, KeyError, RecursionError):
        return []
    found: list[tuple[str, str]] = []
    _walk(request, "", found, 0)
    return [(place.lstrip("."), uri) for place, uri in found]


_FILE_FIELDS = (("fileData", "fileUri"), ("file_data", "file_uri"))
_MAX_WALK = 64  # a staged request nests at most 15 levels (Vertex's importer): far below


def _walk(node: Any, place: str, found: list[tuple[str, str]], depth: int) -> None:
    if depth > _MAX_WALK:
        return
    if isinstance(node, list):
        for index, item in enumerate(node):
            _walk(item, f"{place}[{index}]", found, depth + 1)
        return
    if not isinstance(node, dict):
        return
    for holder, field in _FILE_FIELDS:
        part = node.get(holder)
        if isinstance(part, dict) and _is_gs(part.get(field)):
            found.append((f"{place}.{holder}.{field}", part[field]))
    source = node.get("source")
    if isinstance(source, dict) and source.get("type") == "url" and _is_gs(source.get("url")):
        found.append((f"{place}.source.url", source["url"]))
    for name, value in node.items():
        if isinstance(value, dict | list):
            _walk(value, f"{place}.{name}", found, depth + 1)


def _is_gs(value: object) -> bool:
    return isinstance(value, str) and value.startswith("gs://")


def _exact_digest(data: bytes) -> tuple[str, str]:
    line = data.rstrip(b"\n")
    for head in _HEADS:
        if not line.startswith(head):
            continue
        start = len(head) + _DIGEST_LENGTH
        digest = line[len(head) : start]
        if line[start : start + len(_MID)] != _MID or not line.endswith(b"}"):
            break
        if head != _LABELLED:  # the request's bytes as staged, sorted already
            return digest.decode("ascii", "replace"), _hex(line[start + len(_MID) : -1])
        try:  # Gemini: the labels, the key's digest among them, come out
            request = staged_body(json.loads(line))
            request.pop("labels", None)
            body = _SORTED.encode(request).encode("utf-8")
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
            break
        return digest.decode("ascii", "replace"), _hex(body)
    return "", _hex(b"line:" + line)


def _hex(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()[:32]


def exact_digests(
    lines: Iterable[StagedLine], files: Mapping[str, int] | None = None
) -> Iterator[tuple[StagedLine, str]]:
    """Each line with the exact digest of its request (``files``: as ``exact_digest``); an alias
    (no data) gets its first line's."""
    by_line: dict[str, str] = {}
    for line in lines:
        if line.data:
            exact = exact_digest(line.data, files)[1]
            by_line[line.digest] = exact
        else:
            exact = by_line.get(line.digest, "")
        yield line, exact


def is_alias(line: StagedLine) -> bool:
    """Whether ``line`` is a key record only: its request is staged under an earlier key."""
    return not line.data


def alias_of(line: StagedLine, first: StagedLine) -> StagedLine:
    """``line``'s key, travelling on ``first``'s staged line."""
    return StagedLine(key=line.key, digest=first.digest, canonical=first.canonical, data=b"")


def dedupe(lines: Iterable[StagedLine]) -> Iterator[StagedLine]:
    """The lines with each repeated request turned into an alias of its first occurrence.

    Streams: holds one digest pair per distinct request, never the lines.
    """
    first: dict[str, StagedLine] = {}
    for line in lines:
        if is_alias(line):
            yield line
            continue
        exact = exact_digest(line.data)[1]
        earlier = first.get(exact)
        if earlier is None:
            # Only what the alias needs is kept, not the line's bytes.
            first[exact] = StagedLine(line.key, line.digest, line.canonical, b"")
            yield line
        else:
            yield alias_of(line, earlier)


def shared_result(result: Result, key: str) -> Result:
    """``result`` (the answer of a shared line) for another key that sent the same request."""
    error = result.error
    if error is not None:
        error = _rekeyed(error, key)
    return replace(result, key=key, error=error, shared=True)


def _rekeyed(error: ResultError, key: str) -> ResultError:
    # Rebuilt through its own constructor, as unpickling does: the same fields, another key.
    state = {**error._state(), "key": key}
    return type(error)(*error.args, **state)
