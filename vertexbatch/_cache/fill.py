"""Filling the answer cache from a ``cache=True`` job's results, as a caller's pass reads them.

``CacheFill`` holds the job's ok answers (their entry text, in bounded memory) and writes them to
the cache (``_cache``) in parts; ``cache.filling.json`` dates the parts once, ``cache.filled.json``
marks the job filled. Best-effort on storage; any other error is a bug and raises.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from .._gcs.staging import Staging
from .._requests.dedupe import exact_digest
from .._requests.keymap import parse_key_record
from .._staged.manifest import INPUT_STEM, KEYS_STEM, Manifest
from .._staged.read import job_manifest, read_parts, staged_uris
from .._values import Job
from .entry import encode_response
from .files import stored_versions
from .store import AnswerCache, storage_errors

__all__ = ["FILL_BUFFER", "FILLED", "FILLING", "CacheFill"]

logger = logging.getLogger("vertexbatch")

FILLED = "cache.filled.json"
# When a job's fill began: the date its parts are named by, the same on every pass.
FILLING = "cache.filling.json"

# What a results pass holds of a job's ok answers before writing them (their JSON text, not
# parsed): past it, the answers held are written as a part of their own, so filling adds a
# bounded amount to a pass's memory whatever the job's size.
FILL_BUFFER = 64 * 1024 * 1024


class CacheFill:
    """A ``cache=True`` job's ok answers, stored in the answer cache as a results pass reads
    them: ``iter_results`` calls ``add`` for each, and ``finish`` once the terminal job is read
    to the end. Once per job (an attempt of a run or a resubmission is a job of its own, and
    fills its own answers); keyed by the exact digests of the job's staged input.

    Answers are held as their entry text, at most ``limit`` bytes; past it they are written as
    a part (``ID``, then ``ID.p1``, ``ID.p2``, ... as writers). Every part is dated by the first
    pass that filled the job (``cache.filling.json``, create-only), so a pass that stopped early
    and a later one name their parts alike: the later finds the parts written and writes them
    not again (parts are cut at the same answers: the job's results in the same order).
    Best-effort on storage: the answers are the caller's already, so a fill that fails on GCS
    (no permission on ``_cache/``, say) is a warning naming the job, never an error; the job is
    left unmarked and the next pass tries again. Any other error is a bug, and raises.
    """

    def __init__(
        self,
        staging: Staging,
        job: Job,
        limit: int | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        # ``limit`` (``FILL_BUFFER`` by default) and ``clock`` (the parts' date and the
        # cache's): tests pass a small buffer and a clock of their own.
        self._staging = staging
        self._job = job
        self._limit = FILL_BUFFER if limit is None else limit
        self._clock = clock
        self._on: bool | None = None  # None until the first answer: is the job to be filled?
        self._held: dict[str, bytes] = {}  # key -> answer text
        self._size = 0
        self._parts = 0
        self._written = 0
        self._exact: dict[str, str] | None = None  # key -> exact digest, read when first needed
        self._manifest: Manifest | None = None  # read by the first check of whether to fill
        self._date: int | None = None  # the parts' date, read or set when first written

    def add(self, key: str, response: Mapping[str, Any]) -> None:
        """Hold one ok answer (written when the buffer is full or the pass ends)."""
        if self._on is None:
            self._on = self._attempt(self._to_fill)
        if not self._on:
            return
        text = encode_response(response)
        self._held[key] = text
        self._size += len(text)
        if self._size >= self._limit:
            self._on = self._attempt(self._write)

    def finish(self) -> int:
        """Write what is held and mark the job filled; returns the entries written."""
        if self._on and self._attempt(self._write) and self._attempt(self._mark):
            return self._written
        return 0

    def _attempt(self, step: Callable[[], bool]) -> bool:
        try:
            return step()
        except storage_errors() as exc:  # the results were read: storage never costs them
            logger.warning(
                "answer cache: the ok answers of id %s were not stored (%s); the next results "
                "pass of the id tries again",
                self._job.id,
                type(exc).__name__,
            )
            # The traceback names calls and objects, never an answer's content.
            logger.debug("answer cache: the fill of id %s failed", self._job.id, exc_info=True)
            self._held.clear()
            self._on = False
            return False

    def _to_fill(self) -> bool:
        manifest = self._manifest = job_manifest(self._staging, self._job)
        # A kms_key job's entries are written with its key, in that key's cache (``store``).
        self._staging = self._staging.keyed(manifest.controls.kms_key)
        folder = self._staging.folder(self._job.id)
        return manifest.cache and not self._staging.exists(folder.name(FILLED))

    def _write(self) -> bool:
        if not self._held:
            return True
        exact = self._exact_digests()
        texts = {exact[key]: text for key, text in self._held.items() if key in exact}
        writer = self._job.id if not self._parts else f"{self._job.id}.p{self._parts}"
        cache = AnswerCache(self._staging, self._job.provider, self._job.model, clock=self._clock)
        self._written += cache.fill_text(writer, texts, created=self._dated())
        self._parts += 1
        self._held.clear()
        self._size = 0
        return True

    def _dated(self) -> int:
        """The date of the job's parts: the first pass's, recorded create-only."""
        if self._date is None:
            name = self._staging.folder(self._job.id).name(FILLING)
            now = int(self._clock())
            if self._staging.create_json(name, {"t": now}):
                self._date = now
            else:
                held = self._staging.read_json(name)
                date = held.get("t") if isinstance(held, dict) else None
                # Damaged: parts dated now are new objects (answers again, never wrong ones).
                self._date = date if type(date) is int and date > 0 else now
        return self._date

    def _mark(self) -> bool:
        folder = self._staging.folder(self._job.id)
        self._staging.create_json(
            folder.name(FILLED), {"entries": self._written, "id": self._job.id}
        )
        return True

    def _exact_digests(self) -> dict[str, str]:
        """Each answered line's key -> the exact digest of its request, read from the staged
        key map and input (a line's first key: a shared key's answer is that key's)."""
        if self._exact is None:
            manifest = self._manifest or job_manifest(self._staging, self._job)
            keys = staged_uris(self._job, KEYS_STEM, manifest.key_parts)
            first: dict[str, str] = {}  # line digest -> its first key
            for raw in read_parts(self._staging, keys):
                key, digest, _ = parse_key_record(raw)
                if digest.startswith("k"):
                    first.setdefault(digest, key)
            self._exact = {}
            # Keyed as the submission looked them up: with the generations it recorded.
            files = stored_versions(self._staging, self._job.id)
            inputs = staged_uris(self._job, INPUT_STEM, manifest.input_parts)
            # The input's lines are the key map's line digests in order: a line that names no
            # key (a text-embedding model's instance, ``_requests.embedding_text``) is its place's.
            order = list(first)
            for number, raw in enumerate(read_parts(self._staging, inputs)):
                digest, exact = exact_digest(raw, files)
                if not digest and number < len(order):
                    digest = order[number]
                owner = first.get(digest)
                if owner is not None:
                    self._exact[owner] = exact
        return self._exact
