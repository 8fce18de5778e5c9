"""A Gemini request's media parts, read as Vertex reads them before the model answers (pure;
the batch runner and the online route hand in the object lookup).

Vertex reads a `fileData` part's object and decodes an `inlineData` part's bytes; the local model
never looks inside media, but it must not answer as if it had read what is not there:

- `fileData` naming a `gs://` object that does not exist (or whose bucket does not) fails that
  line with 404 NOT_FOUND, as Google's API errors page gives it: "No valid object is found from
  the designated URL", e.g. "Image file not found in the storage URL"
  (https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/api-errors, read
  2026-12-07; the exact message of a batch line is UNCONFIRMED). A URI of another scheme
  (`https://…`, which Vertex fetches from the web) fails the line with 400 saying the local
  stack does not emulate it.
- `inlineData` whose `data` is not base64 fails the line with 400 in the form of Google's JSON
  mapping errors (`Invalid value at '…inline_data.data' (TYPE_BYTES), Base64 decoding failed`).
- Otherwise the line is answered, and its answer depends on what was read: each object's MD5
  (or generation) and each inline part's SHA-256 go into the local model's prompt
  (`media_marks`), so a replaced file or other bytes get another answer, and count as tokens.

A line naming an explicit context cache (`cachedContent`) fails 400, `Model M does not support
cached content with batch prediction.` (`cached_content`): batch prediction takes none (Google's
Gemini batch page, "Unsupported features"; the words are those users report from Vertex,
https://discuss.ai.google.dev/t/does-batch-api-in-vertex-ai-support-caching/107293, read
2026-12-07). Online calls take one.

The error names the part by its place (`contents[0].parts[1].fileData.fileUri`), never its URI
or bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from vertexbatch.emulator._errors import LineFailure

__all__ = ["cached_content", "read_media"]

_FILE = (("fileData", "fileUri"), ("file_data", "file_uri"))
_INLINE = ("inlineData", "inline_data")


def cached_content(request: Any, model: str) -> LineFailure | None:
    """The failure of a batch line naming an explicit context cache, None for any other."""
    if isinstance(request, Mapping) and any(
        request.get(name) is not None for name in ("cachedContent", "cached_content")
    ):
        return LineFailure(
            400, f"Model {model} does not support cached content with batch prediction."
        )
    return None


def _parts(request: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each part of the request's contents and system instruction, with its place."""
    contents = request.get("contents")
    for i, content in enumerate(contents if isinstance(contents, list) else ()):
        parts = content.get("parts") if isinstance(content, Mapping) else None
        for j, part in enumerate(parts if isinstance(parts, list) else ()):
            if isinstance(part, Mapping):
                yield f"contents[{i}].parts[{j}]", part
    for name in ("systemInstruction", "system_instruction"):
        system = request.get(name)
        parts = system.get("parts") if isinstance(system, Mapping) else None
        for j, part in enumerate(parts if isinstance(parts, list) else ()):
            if isinstance(part, Mapping):
                yield f"{name}.parts[{j}]", part


def _decoded(data: str) -> bytes | None:
    """The bytes of base64 text, standard or URL-safe (proto JSON takes both); None if neither."""
    for text in (data, data.replace("-", "+").replace("_", "/")):
        try:
            return base64.b64decode(text.encode("ascii"), validate=True)
        except (binascii.Error, ValueError):
            continue
    return None


def read_media(
    request: Any, fingerprint: Callable[[str, str], str | None]
) -> LineFailure | tuple[str, ...]:
    """The line's failure, or the marks of what its media parts hold (empty: it has none).

    `fingerprint(bucket, name)` is the object's MD5 or generation, None when it does not exist.
    """
    if not isinstance(request, Mapping):
        return ()
    marks: list[str] = []
    for place, part in _parts(request):
        for field, uri_field in _FILE:
            file = part.get(field)
            if not isinstance(file, Mapping):
                continue
            uri = file.get(uri_field, file.get("fileUri", file.get("file_uri")))
            where = f"{place}.{field}.{uri_field}"
            if not isinstance(uri, str) or not uri.startswith("gs://"):
                return LineFailure(
                    400,
                    f"The local stack does not emulate reading {where} from anything but a "
                    "gs:// object of its GCS server (Vertex fetches http(s) URLs itself).",
                )
            bucket, _, name = uri.removeprefix("gs://").partition("/")
            found = fingerprint(bucket, name) if bucket and name else None
            if found is None:
                return LineFailure(
                    404, f"No valid object is found from the designated URL in {where}."
                )
            marks.append(f"[file {found}]")
        for field in _INLINE:
            inline = part.get(field)
            if not isinstance(inline, Mapping):
                continue
            data = inline.get("data")
            decoded = _decoded(data) if isinstance(data, str) else None
            if decoded is None:
                return LineFailure(
                    400,
                    f"Invalid value at '{place}.{field}.data' (TYPE_BYTES), Base64 decoding "
                    "failed.",
                )
            marks.append(f"[inline {hashlib.sha256(decoded).hexdigest()[:32]}]")
    return tuple(marks)
