"""A job's lifecycle: PENDING → RUNNING → a terminal state, reading and writing real GCS objects.

PENDING (for Timing.pending_seconds, or while held) → import (read every input object, validate,
normalise; a failure ends FAILED with code 3 and no output) → RUNNING (rows answered by the local
model in a seeded shuffled order, paced by Timing.row_seconds, incremental shards when asked or
held) → SUCCEEDED with `predictions.jsonl`. A cancel ends CANCELLED and an expiry EXPIRED; both
keep the finished rows.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from google.api_core import exceptions as api_exceptions
from google.cloud import storage  # type: ignore[attr-defined,unused-ignore]

from vertexbatch.emulator._importer import ImportFailure, check_size, normalise, parse_lines
from vertexbatch.emulator._jobs import RUNNING, JobRecord, JobStore
from vertexbatch.emulator._model import answer_claude, answer_gemini
from vertexbatch.emulator._rows import format_row

__all__ = ["make_runner", "split_gcs_uri"]

logger = logging.getLogger("vertexbatch.emulator")


class _Closing(Exception):
    """The stack is shutting down; the runner leaves without touching the job."""


def split_gcs_uri(uri: str) -> tuple[str, str]:
    """`gs://bucket/path` → (bucket, path)."""
    bucket, _, name = uri.removeprefix("gs://").partition("/")
    return bucket, name


def make_runner(
    storage_factory: Callable[[], storage.Client],
) -> Callable[[JobStore, JobRecord], None]:
    """The function a JobStore runs on each job's thread."""

    def run(store: JobStore, job: JobRecord) -> None:
        lifecycle = _Run(store, job, storage_factory)
        try:
            lifecycle.run()
        except _Closing:
            return
        except Exception as exc:
            if store.closing:
                return
            logger.error("job %s: internal error (%s)", job.job_id, type(exc).__name__)
            store.touch(job, state="JOB_STATE_FAILED", error=(13, "Internal error encountered."))
        finally:
            lifecycle.close()

    return run


class _Run:
    def __init__(
        self, store: JobStore, job: JobRecord, storage_factory: Callable[[], storage.Client]
    ) -> None:
        self.store = store
        self.job = job
        self.storage_factory = storage_factory
        timing = store.timing
        self.deadline = (
            job.created_at + timing.expire_seconds if timing.expire_seconds is not None else None
        )
        self.lines: list[str] = []  # serialised output rows so far
        self.shard_from = 0
        self.shards = 0
        self.processed = 0
        self.total = 0
        self.running = False
        self._client: storage.Client | None = None

    @property
    def client(self) -> storage.Client:
        if self._client is None:
            self._client = self.storage_factory()
        return self._client

    def close(self) -> None:
        """Close the storage client's connections."""
        if self._client is not None:
            self._client.close()

    # Waiting and stopping.

    def _wait(self, seconds: float | None, until: Callable[[], bool] | None = None) -> None:
        """Wait up to seconds (None: forever) or until cancel, expiry, close or `until()`."""
        end = None if seconds is None else time.monotonic() + seconds
        if self.deadline is not None:
            end = self.deadline if end is None else min(end, self.deadline)
        cond = self.store.cond
        with cond:
            while True:
                if self.store.closing or self.job.cancel_requested or (until and until()):
                    return
                now = time.monotonic()
                if end is not None and now >= end:
                    return
                cond.wait(None if end is None else end - now)

    def _stopped(self) -> bool:
        """Finish the job if it was cancelled or expired; raise _Closing on shutdown."""
        with self.store.cond:
            if self.store.closing:
                raise _Closing
            cancelled = self.job.cancel_requested
        expired = self.deadline is not None and time.monotonic() >= self.deadline
        if not cancelled and not expired:
            return False
        if self.running:
            self._write_final()
        end_state = "JOB_STATE_CANCELLED" if cancelled else "JOB_STATE_EXPIRED"
        changes: dict[str, Any] = {"state": end_state}
        if cancelled:
            changes["error"] = (1, "CANCELED")
        if self.running:
            changes["incomplete"] = self.total - self.processed
        self.store.touch(self.job, **changes)
        return True

    # GCS.

    def _read_input(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        blobs = []
        for uri in self.job.spec.input_uris:
            bucket, name = split_gcs_uri(uri)
            try:
                blob = self.client.bucket(bucket).get_blob(name) if name else None
            except api_exceptions.GoogleAPIError:
                blob = None
            if blob is None:
                raise ImportFailure("An input object does not exist or cannot be read.")
            blobs.append(blob)
        check_size(sum(blob.size or 0 for blob in blobs))
        rows: list[dict[str, Any]] = []
        schema: dict[Any, Any] = {}
        for blob in blobs:
            try:
                data = blob.download_as_bytes()
            except api_exceptions.GoogleAPIError:
                raise ImportFailure("An input object cannot be read.") from None
            more, schema = parse_lines(data, schema, len(rows))
            rows.extend(more)
        return list(zip(rows, normalise(rows, schema), strict=True))

    def _output_bucket_exists(self) -> bool:
        bucket, _ = split_gcs_uri(self.job.spec.output_prefix)
        try:
            return self.client.lookup_bucket(bucket) is not None
        except api_exceptions.GoogleAPIError:
            return False

    def _upload(self, path: str, lines: list[str]) -> None:
        bucket, name = split_gcs_uri(f"{self.job.output_dir}/{path}")
        data = "".join(line + "\n" for line in lines)
        self.client.bucket(bucket).blob(name).upload_from_string(
            data, content_type="application/jsonl"
        )

    def _write_shard(self) -> None:
        new = self.lines[self.shard_from :]
        if not new:
            return
        self.shards += 1
        self._upload(f"incremental_predictions/predictions_{self.shards}.jsonl", new)
        self.shard_from = len(self.lines)

    def _write_final(self) -> None:
        self._upload("predictions.jsonl", self.lines)

    # The lifecycle.

    def run(self) -> None:
        timing = self.store.timing
        job = self.job
        if timing.pending_seconds:
            self._wait(timing.pending_seconds)
        if job.hold is not None and job.hold.state == "PENDING":
            self._wait(None, until=lambda: job.released)
        if self._stopped():
            return
        try:
            pairs = self._read_input()
        except ImportFailure as failure:
            if self._stopped():
                return
            self.store.touch(
                job, state="JOB_STATE_FAILED", error=(3, failure.message), show_output_info=True
            )
            return
        if self._stopped():
            return
        if not self._output_bucket_exists():
            self.store.touch(
                job,
                state="JOB_STATE_FAILED",
                error=(9, "Failed to get GCS bucket location for the output destination."),
                show_output_info=True,
            )
            return
        self.total = len(pairs)
        with self.store.cond:
            if not job.cancel_requested:
                self.running = True
                self.store.touch(job, state=RUNNING, show_output_info=True, show_stats=True)
        if self._stopped():
            return
        if job.fault is not None:
            self.store.touch(
                job, state="JOB_STATE_FAILED", error=(job.fault.code, job.fault.message)
            )
            return
        self._run_rows(pairs)

    def _order(self, count: int) -> list[int]:
        order = list(range(count))
        if not self.job.options.shuffle or count < 2:
            return order
        random.Random(f"{self.store.seed}:{self.job.spec.display_name}:{count}").shuffle(order)
        if order == sorted(order):
            order = order[1:] + order[:1]
        return order

    def _hold_here(self) -> bool:
        hold = self.job.hold
        return (
            hold is not None
            and hold.state == "RUNNING"
            and self.processed == hold.after_rows
            and not self.job.released
        )

    def _run_rows(self, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        job = self.job
        timing = self.store.timing
        spec = job.spec
        every = timing.incremental_every
        for index in self._order(len(pairs)):
            if self._hold_here():
                self._wait(None, until=lambda: job.released)
            if self._stopped():
                return
            if timing.row_seconds:
                self._wait(timing.row_seconds)
                if self._stopped():
                    return
            original, echoed = pairs[index]
            now = datetime.now(UTC)
            request = original.get("request")
            if spec.publisher == "anthropic":
                answer = answer_claude(request, spec.model_id)
            else:
                answer = answer_gemini(request, spec.model_id, now)
            row = format_row(
                provider=spec.publisher, line=echoed, answer=answer, moment=now, options=job.options
            )
            self.processed += 1
            if row is not None:
                self.lines.append(json.dumps(row, ensure_ascii=False))
            # Files first, then counts: a client that sees a count finds its rows written.
            shard_due = every and self.processed % every == 0 and self.processed < self.total
            if shard_due or self._hold_here():
                self._write_shard()
            if row is not None and answer.error is not None:
                self.store.touch(job, failed=job.failed + 1)
            elif row is not None:
                self.store.touch(job, successful=job.successful + 1)
        if self._hold_here():
            self._wait(None, until=lambda: job.released)
        if self._stopped():
            return
        self._write_final()
        self.store.touch(job, state="JOB_STATE_SUCCEEDED")
