"""The generations of the ``gs://`` objects a ``cache=True`` submission's requests name.

A request may name a file instead of carrying it (``_requests.dedupe.named_files``: Gemini's
``fileData``, Claude's ``url`` source). Its answer depends on the object, and the object may be
replaced under the same URI: so the answer cache keys such a request on the generation of each
object it names too (``_requests.dedupe.exact_digest``'s ``files``), never on the URI alone.

``file_versions`` reads each distinct URI's generation once (a GCS metadata read, in parallel),
when the submission is staged and only with ``cache=True`` (dedupe needs none: the equal
requests of one submission name the same objects, read by its one job), and records them in the
submission's folder as ``cache.files.json``, create-only and before the cache is asked: a retry
after a crash, a second submitter of the id and the fill of its answers (``stored_versions``)
key its requests alike, whatever happened to the objects since. A URI that names no object, or
one the caller cannot read, is an ``InvalidRequestError`` naming the request's key and the
URI's place in it (never the URI), raised before anything is staged.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from google.api_core import exceptions as api_exceptions

from .._errors import InvalidRequestError
from .._gcs.staging import Staging
from .._requests.dedupe import named_files
from .._requests.lines import StagedLine

__all__ = ["FILES", "file_versions", "stored_versions"]

FILES = "cache.files.json"
"""The generations of the objects an id's requests name, as its first staging read them."""

# Metadata reads at once: one per distinct URI, many in flight (each is a small GET).
_READERS = 16


def stored_versions(staging: Staging, submission_id: str) -> dict[str, int]:
    """The generations recorded for the id (``{}``: none recorded, or none named)."""
    held = staging.read_json(staging.folder(submission_id).name(FILES))
    files = held.get("files") if isinstance(held, dict) else None
    if not isinstance(files, dict):
        return {}
    return {uri: gen for uri, gen in files.items() if isinstance(uri, str) and type(gen) is int}


def file_versions(
    staging: Staging, submission_id: str, lines: Iterable[StagedLine], *, write: bool = True
) -> dict[str, int]:
    """Each ``gs://`` URI the lines' requests name -> its generation: as the id recorded them,
    else read now (and recorded, create-only, when ``write``; a plan writes nothing).

    Raises:
        InvalidRequestError: a URI names no object, or one that cannot be read (naming the key
            of the first request that names it, and the place in that request).
    """
    first: dict[str, tuple[str, str]] = {}  # uri -> (key, place) of its first mention
    for line in lines:
        if line.data:
            for place, uri in named_files(line.data):
                first.setdefault(uri, (line.key, place))
    if not first:
        return {}
    versions = stored_versions(staging, submission_id)
    missing = [uri for uri in first if uri not in versions]
    if not missing:
        return versions
    with ThreadPoolExecutor(max_workers=min(_READERS, len(missing))) as pool:
        found = pool.map(lambda uri: _generation(staging, uri), missing)
        read = dict(zip(missing, found, strict=True))
    for uri in missing:  # in the requests' order: the first bad one is named
        if isinstance(read[uri], str):
            key, place = first[uri]
            raise InvalidRequestError(
                f"request {key!r} names a gs:// object at {place} that {read[uri]}: the answer "
                "cache keys a request on the generation of each object it names; give an "
                "object that exists and that these credentials may read",
                field="requests",
            )
    versions.update({uri: gen for uri, gen in read.items() if isinstance(gen, int)})
    if write:
        name = staging.folder(submission_id).name(FILES)
        if not staging.create_json(name, {"files": versions}):
            theirs = stored_versions(staging, submission_id)  # another attempt's: it won
            versions = {**versions, **theirs}
    return versions


def _generation(staging: Staging, uri: str) -> int | str:
    """The object's generation, or why it has none (words for an error, never the URI)."""
    if "/" not in uri[len("gs://") :].strip("/"):
        return "is no object (a bucket, or nothing)"
    try:
        generation = staging.generation(uri)
    except api_exceptions.Forbidden:
        return "these credentials may not read (403)"
    except (api_exceptions.BadRequest, ValueError):
        return "is not a valid object name (400)"
    if generation is None:
        return "does not exist (404)"
    return generation
