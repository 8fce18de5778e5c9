"""A job's lifecycle: PENDING → RUNNING → a terminal state, reading and writing real GCS objects.

(QUEUED while held there, or for Timing.queued_seconds at create) → PENDING (for
Timing.pending_seconds, or while held; then QUEUED for Timing.queued_seconds when queued_at is
"after_pending") → import (an input or output bucket that does not exist ends FAILED with code 9;
read every input object, validate, normalise; a failure ends FAILED with code 3 and no output) →
RUNNING (rows answered by the local model in a seeded shuffled order, paced by
Timing.row_seconds, incremental shards when asked or held; PAUSED while held so) → SUCCEEDED with
`predictions.jsonl` (PARTIALLY_SUCCEEDED when asked and a row failed). A cancel ends CANCELLED and
an expiry EXPIRED; both keep the finished rows. A late cancel (`Faults.late_cancel`) shows
CANCELLING, then ends SUCCEEDED or FAILED.
"""

from __future__ import annotations

import json
import logging
import random
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from google.api_core import exceptions as api_exceptions
from google.cloud import storage  # type: ignore[attr-defined,unused-ignore]

from vertexbatch.emulator._embeddings import (
    answer_embedding,
    is_embedding_model,
    is_text_embedding_model,
    text_embedding_row,
)
from vertexbatch.emulator._errors import LineFailure
from vertexbatch.emulator._faults import JobFault
from vertexbatch.emulator._importer import (
    ImportFailure,
    Schema,
    check_size,
    echo,
    max_rows,
    parse_lines,
)
from vertexbatch.emulator._jobs import PAUSED, PENDING, QUEUED, RUNNING, JobRecord, JobStore
from vertexbatch.emulator._media import cached_content, read_media
from vertexbatch.emulator._model import Answer, answer_claude, answer_gemini
from vertexbatch.emulator._openmaas import answer_chat
from vertexbatch.emulator._rows import format_row

__all__ = ["JobRun", "StoreMissing", "make_runner", "object_fingerprint", "split_gcs_uri"]

logger = logging.getLogger("vertexbatch.emulator")


class _Closing(Exception):
    """The stack is shutting down; the runner leaves without touching the job."""


class StoreMissing(Exception):
    """A bucket or dataset the job reads or writes does not exist: the job fails with code 9."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _BucketMissing(StoreMissing):
    def __init__(self, bucket: str) -> None:
        super().__init__(f"Failed to get GCS bucket location for gs://{bucket}.")


def object_fingerprint(client: storage.Client, bucket: str, name: str) -> str | None:
    """An object's MD5 (or generation) for a Gemini fileData part (`_media.read_media`), None
    when it (or its bucket) is not there."""
    try:
        blob = client.bucket(bucket).get_blob(name)
    except api_exceptions.GoogleAPIError:
        return None
    return None if blob is None else str(blob.md5_hash or blob.generation)


def split_gcs_uri(uri: str) -> tuple[str, str]:
    """`gs://bucket/path` → (bucket, path)."""
    bucket, _, name = uri.removeprefix("gs://").partition("/")
    return bucket, name


def _where(exc: BaseException, frames: int = 4) -> str:
    """The innermost ``frames`` frames of ``exc``'s traceback as ``file:line``, the raising one
    first, each called from the next; never its message."""
    found = traceback.extract_tb(exc.__traceback__)[-frames:]
    return " < ".join(
        f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}" for frame in found[::-1]
    )


def make_runner(
    storage_factory: Callable[[], storage.Client],
    lifecycle_factory: Callable[[JobStore, JobRecord], JobRun] | None = None,
) -> Callable[[JobStore, JobRecord], None]:
    """The function a JobStore runs on each job's thread (`lifecycle_factory`: the `JobRun` of a
    job, e.g. one with BigQuery sides, `_bq_run.py`; default: GCS only)."""

    def run(store: JobStore, job: JobRecord) -> None:
        if lifecycle_factory is not None:
            lifecycle = lifecycle_factory(store, job)
        else:
            lifecycle = JobRun(store, job, storage_factory)
        try:
            lifecycle.run()
        except _Closing:
            return
        except Exception as exc:
            if store.closing:
                return
            # Where it was raised (files and lines, never the message: it may hold content).
            logger.error(
                "job %s: internal error (%s at %s)", job.job_id, type(exc).__name__, _where(exc)
            )
            store.touch(job, state="JOB_STATE_FAILED", error=(13, "Internal error encountered."))
        finally:
            lifecycle.close()

    return run


class JobRun:
    """One job's lifecycle, reading and writing GCS (`_bq_run.BigQueryRun` overrides the input,
    the output check and the writes for BigQuery sides)."""

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
        """Wait up to seconds (None: forever) or until cancel, expiry, close or `until()`.

        A cancel that comes too late (`Faults.late_cancel`) does not cut a wait short.
        """
        end = None if seconds is None else time.monotonic() + seconds
        if self.deadline is not None:
            end = self.deadline if end is None else min(end, self.deadline)
        cond = self.store.cond
        job = self.job
        with cond:
            while True:
                cancelled = job.cancel_requested and job.late_cancel is None
                if self.store.closing or cancelled or (until and until()):
                    return
                now = time.monotonic()
                if end is not None and now >= end:
                    return
                cond.wait(None if end is None else end - now)

    def _stopped(self) -> bool:
        """Finish the job if it was cancelled or expired; raise _Closing on shutdown.

        A late cancel that ends SUCCEEDED does not stop the job; one that ends FAILED does (held
        jobs stay held until released either way).
        """
        with self.store.cond:
            if self.store.closing:
                raise _Closing
            cancelled = self.job.cancel_requested
        late = self.job.late_cancel if cancelled else None
        if late is not None and late.ends == "SUCCEEDED":
            cancelled = False  # too late: the job carries on to its end
        expired = self.deadline is not None and time.monotonic() >= self.deadline
        if not cancelled and not expired:
            return False
        if self.running:
            self._write_final()
        end_state = "JOB_STATE_CANCELLED" if cancelled else "JOB_STATE_EXPIRED"
        changes: dict[str, Any] = {"state": end_state}
        if late is not None:
            changes.update(state="JOB_STATE_FAILED", error=(late.code, late.message))
        elif cancelled:
            changes["error"] = (1, "CANCELED")
        if self.running:
            changes["incomplete"] = self.total - self.processed
        self.store.touch(self.job, **changes)
        return True

    # GCS.

    def _read_input(self) -> tuple[list[dict[str, Any]], Callable[[dict[str, Any]], Any]]:
        """The input's rows and the echo of a row (built as its row runs: a job that fails or
        is cancelled before running builds none)."""
        for uri in self.job.spec.input_uris:
            bucket, _ = split_gcs_uri(uri)
            if not self._bucket_exists(bucket):
                raise _BucketMissing(bucket)
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
        schema = Schema()
        for blob in blobs:
            try:
                data = blob.download_as_bytes()
            except api_exceptions.GoogleAPIError:
                raise ImportFailure("An input object cannot be read.") from None
            more, schema = parse_lines(data, schema, len(rows), max_rows(self.job.spec.model_id))
            rows.extend(more)
        return rows, echo(schema)

    def _check_output(self) -> None:
        """Raise StoreMissing unless the output bucket exists."""
        output_bucket, _ = split_gcs_uri(self.job.spec.output_prefix)
        if not self._bucket_exists(output_bucket):
            raise _BucketMissing(output_bucket)

    def _fingerprint(self, bucket: str, name: str) -> str | None:
        return object_fingerprint(self.client, bucket, name)

    def _bucket_exists(self, bucket: str) -> bool:
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
        if job.hold is not None and job.hold.state == "QUEUED":
            self._wait(None, until=lambda: job.released)
        if timing.queued_seconds and timing.queued_at == "create":
            self._wait(timing.queued_seconds)
        self._leave_queue()
        if timing.pending_seconds:
            self._wait(timing.pending_seconds)
        if job.hold is not None and job.hold.state == "PENDING":
            self._wait(None, until=lambda: job.released)
        if timing.queued_seconds and timing.queued_at == "after_pending":
            with self.store.cond:
                if job.state == PENDING:
                    self.store.touch(job, state=QUEUED)
            self._wait(timing.queued_seconds)
            self._leave_queue()
        # Over the Claude concurrency cap in "queue" mode: PENDING until a slot frees.
        self._wait(None, until=lambda: self.store.take_claude_slot(job))
        if self._stopped():
            return
        try:
            rows, echoed_of = self._read_input()
            self._check_output()
        except (ImportFailure, StoreMissing) as failure:
            if self._stopped():
                return
            code = 3 if isinstance(failure, ImportFailure) else 9
            self.store.touch(
                job, state="JOB_STATE_FAILED", error=(code, failure.message), show_output_info=True
            )
            return
        if self._stopped():
            return
        self.total = len(rows)
        with self.store.cond:
            if not job.cancel_requested or job.late_cancel is not None:
                self.running = True
                # A job cancelled too late runs on, still showing CANCELLING.
                state = {"state": RUNNING} if not job.cancel_requested else {}
                self.store.touch(job, show_output_info=True, show_stats=True, **state)
        if self._stopped():
            return
        if job.fault is not None and job.fault.after_rows is None:
            self._fail(job.fault)
            return
        self._run_rows(rows, echoed_of)

    def _leave_queue(self) -> None:
        """QUEUED → PENDING (a job cancelled meanwhile shows CANCELLING and stays so)."""
        with self.store.cond:
            if self.job.state == QUEUED:
                self.store.touch(self.job, state=PENDING)

    def _fail(self, fault: JobFault) -> None:
        """End the job FAILED with the fault's error; its counts stay as they are."""
        self.store.touch(self.job, state="JOB_STATE_FAILED", error=(fault.code, fault.message))

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
            and hold.state in ("RUNNING", "PAUSED")
            and self.processed == hold.after_rows
            and not self.job.released
        )

    def _hold(self) -> None:
        """Stay here until released (or cancelled, expired, closed), PAUSED if held so."""
        job = self.job
        with self.store.cond:
            if job.hold is not None and job.hold.state == "PAUSED" and not job.cancel_requested:
                self.store.touch(job, state=PAUSED)
        self._wait(None, until=lambda: job.released)
        with self.store.cond:
            if job.state == PAUSED:
                self.store.touch(job, state=RUNNING)

    def _count_row(self, row: dict[str, Any] | None, failed: bool) -> None:
        job = self.job
        every = self.store.timing.incremental_every
        self.processed += 1
        if row is not None:
            self.lines.append(json.dumps(row, ensure_ascii=False))
        # Files first, then counts: a client that sees a count finds its rows written.
        shard_due = every and self.processed % every == 0 and self.processed < self.total
        if (shard_due or self._hold_here()) and job.fault is None:
            self._write_shard()
        if row is not None and failed:
            self.store.touch(job, failed=job.failed + 1)
        elif row is not None:
            self.store.touch(job, successful=job.successful + 1)

    def _run_rows(
        self, rows: list[dict[str, Any]], echoed_of: Callable[[dict[str, Any]], Any]
    ) -> None:
        job = self.job
        timing = self.store.timing
        spec = job.spec
        fault = job.fault  # one that fails the job after some rows, writing nothing
        for index in self._order(len(rows)):
            if fault is not None and self.processed >= (fault.after_rows or 0):
                self._fail(fault)
                return
            if self._hold_here():
                self._hold()
            if self._stopped():
                return
            if timing.row_seconds:
                self._wait(timing.row_seconds)
                if self._stopped():
                    return
            original = rows[index]
            echoed = echoed_of(original)
            now = datetime.now(UTC)
            request = original.get("request")
            check = job.options.check_fields
            if is_text_embedding_model(spec.model_id):
                row = text_embedding_row(original, spec.model_id, now)
                self._count_row(row, row is not None and bool(row["status"]))
                continue
            if is_embedding_model(spec.model_id):
                answer, _ = answer_embedding(request, spec.model_id)
            elif spec.publisher == "anthropic":
                answer = answer_claude(request, spec.model_id, check_fields=check)
            elif spec.publisher == "openmaas":
                answer = answer_chat(original.get("body"), spec.model_id)
            else:
                media = cached_content(request, spec.model_id) or read_media(
                    request, self._fingerprint
                )
                answer = (
                    Answer(error=media)
                    if isinstance(media, LineFailure)
                    else answer_gemini(request, spec.model_id, now, check_fields=check, media=media)
                )
            row = format_row(
                provider=spec.publisher, line=echoed, answer=answer, moment=now, options=job.options
            )
            self._count_row(row, answer.error is not None)
        if self._hold_here():
            self._hold()
        if self._stopped():
            return
        if fault is not None:
            self._fail(fault)
            return
        self._write_final()
        partly = job.options.partially_succeeded and job.failed > 0
        self.store.touch(
            job, state="JOB_STATE_PARTIALLY_SUCCEEDED" if partly else "JOB_STATE_SUCCEEDED"
        )
