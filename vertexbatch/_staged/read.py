"""Reading a submission's staged objects back, verified against its manifest.

Results need the key map; resubmissions, runs and the online fallback need the staged requests.
Both are checked as they stream past against the row count and MD5s the manifest recorded, so a
truncated, duplicated, reordered or garbled object is a ``JobError`` naming it, never a dropped
or doubled key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from functools import partial
from typing import TypeVar

from .._errors import JobError, job_errors
from .._gcs.parts import part_leaves
from .._gcs.staging import Staging
from .._requests.keymap import KeyMap, parse_key_record
from .._requests.lines import StagedLine
from .._schemas.check import Schema
from .._schemas.parsed import schema_for
from .._values import Job
from .manifest import INPUT_STEM, KEYS_STEM, MANIFEST, Manifest

__all__ = ["job_manifest", "read_key_map", "read_parts", "read_staged_lines", "staged_uris"]


def _beside_input(job: Job, leaf: str) -> str:
    return job.input_uri.rsplit("/", 1)[0] + "/" + leaf


def job_manifest(staging: Staging, job: Job) -> Manifest:
    """The manifest staged beside a job's input.

    Raises:
        JobError: it is gone.
    """
    uri = _beside_input(job, MANIFEST)
    raw = _reading(job, uri, lambda: staging.read_json(uri))
    if raw is None:
        raise JobError(f"{uri} is gone: job {job.name} cannot be read without it", job=job.name)
    return Manifest.from_json(raw, uri)


T = TypeVar("T")


def _reading(job: Job, uri: str, read: Callable[[], T]) -> T:
    with job_errors(job.name, reading=uri):
        return read()


def staged_uris(job: Job, stem: str, md5s: tuple[str, ...]) -> list[str]:
    """The URIs of every part of a job's staged input or key map (``stem``), in order."""
    return [_beside_input(job, leaf) for leaf in part_leaves(stem, md5s)]


def read_parts(staging: Staging, uris: list[str]) -> Iterator[bytes]:
    """The lines of every part, in order."""
    for uri in uris:
        yield from staging.read_lines(uri)


class _Verified:
    """The lines of a staged object (all its parts, in order), checked against the count and
    MD5 its manifest recorded."""

    def __init__(self, staging: Staging, job: Job, uris: list[str], rows: int, md5: str) -> None:
        self._staging = staging
        self._job = job
        self._uris = uris
        self.uri = uris[0] if len(uris) == 1 else f"{uris[0]} (and its {len(uris) - 1} more parts)"
        self._rows = rows
        self._md5 = md5

    def __iter__(self) -> Iterator[bytes]:
        for lines in self.blocks():
            yield from lines

    def blocks(self) -> Iterator[list[bytes]]:
        """The lines in blocks, a block for each range read (``Staging.read_line_blocks``):
        a key map of 200,000 lines is read in a few dozen steps, not one a line."""
        digest = hashlib.md5(usedforsecurity=False)
        count = 0
        for uri in self._uris:
            ranges = self._staging.read_line_blocks(uri)
            try:
                while block := _reading(self._job, self.uri, partial(next, ranges, None)):
                    lines = block.lines
                    # The block's lines and their newlines, as staged: one update, not two a line.
                    digest.update(b"\n".join(lines))
                    digest.update(b"\n")
                    count += len(lines)
                    yield lines
            finally:
                ranges.close()  # a reader that stops early leaves no read ahead running
        if count != self._rows or (self._md5 and digest.hexdigest() != self._md5):
            raise self.damaged(f"{count} lines, {self._rows} staged")

    def damaged(self, why: str) -> JobError:
        return JobError(
            f"{self.uri} is damaged ({why}; it no longer matches what its manifest recorded): "
            f"the keys of job {self._job.name} cannot be told apart safely",
            job=self._job.name,
        )


def read_key_map(staging: Staging, job: Job, schema: Schema | None = None) -> KeyMap:
    """The job's staged key map, verified against its manifest; its ``schema`` the one the
    manifest records, or ``schema`` (a results pass's, with its class) if it is the same one.

    Raises:
        InvalidRequestError: ``schema`` is not the job's (``_schemas.parsed.schema_for``),
            refused before the key map is read.
        JobError: the key map is gone, damaged or does not match the manifest.
    """
    manifest = job_manifest(staging, job)
    answers = schema_for(manifest.schema, schema, job.name)
    records = _keys(staging, job, manifest)
    try:
        keys = KeyMap.from_blocks(records.blocks())
    except ValueError as exc:
        raise records.damaged(str(exc)) from None
    keys.fills_cache = manifest.cache
    keys.schema = answers
    return keys


def _keys(staging: Staging, job: Job, manifest: Manifest) -> _Verified:
    uris = staged_uris(job, KEYS_STEM, manifest.key_parts)
    return _Verified(staging, job, uris, manifest.key_count, manifest.keys_md5)


def read_staged_lines(staging: Staging, job: Job, keys: set[str]) -> Iterator[StagedLine]:
    """The job's staged lines for ``keys``, in submission order, read back from GCS.

    The input and the key map were written from one stream, so their lines pair up in order;
    both are checked against the manifest as they are read (an error at the end of the stream
    aborts whatever is being staged from it). A deduplicated key (a key record carrying an
    earlier key's digest, with no input line of its own) comes back as an alias of the first
    wanted key of its line, or with the line itself when that key is not wanted.
    """
    manifest = job_manifest(staging, job)
    records = _keys(staging, job, manifest)
    uris = staged_uris(job, INPUT_STEM, manifest.input_parts)
    inputs = _Verified(staging, job, uris, manifest.rows, manifest.md5)
    if manifest.keys:
        yield from _deduplicated(records, iter(inputs), keys)
        return
    for number, (record, data) in enumerate(zip(records, inputs, strict=True), start=1):
        try:
            key, digest, canonical = parse_key_record(record)
        except ValueError as exc:
            raise records.damaged(f"line {number}: {exc}") from None
        if key in keys:
            yield StagedLine(key=key, digest=digest, canonical=canonical, data=data + b"\n")


def _deduplicated(
    records: _Verified, inputs: Iterator[bytes], keys: set[str]
) -> Iterator[StagedLine]:
    """``read_staged_lines`` of a deduplicated input: each line's wanted keys, in order.

    Holds the key records (as a key map does), never the input lines. Keys answered from the
    answer cache have no line and are never read back (their answers are ok).
    """
    by_line: dict[str, list[tuple[str, str]]] = {}
    order: list[str] = []
    for number, record in enumerate(records, start=1):
        try:
            key, digest, canonical = parse_key_record(record)
        except ValueError as exc:
            raise records.damaged(f"line {number}: {exc}") from None
        if digest.startswith("c"):  # answered from the answer cache: no input line
            continue
        if digest not in by_line:
            by_line[digest] = []
            order.append(digest)
        by_line[digest].append((key, canonical))
    for digest in order:
        data = next(inputs, None)
        if data is None:
            raise records.damaged("more lines than the staged input")
        wanted = [(key, canonical) for key, canonical in by_line[digest] if key in keys]
        if wanted:
            first, canonical = wanted[0]
            yield StagedLine(key=first, digest=digest, canonical=canonical, data=data + b"\n")
            for key, canonical in wanted[1:]:
                yield StagedLine(key=key, digest=digest, canonical=canonical, data=b"")
    if next(inputs, None) is not None:
        raise records.damaged("fewer lines than the staged input")
