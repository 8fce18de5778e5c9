"""The job store: BatchPredictionJob resources, their JSON form, and the REST operations on them.

Every job lives in memory under one Condition; its lifecycle runs on a daemon thread per job
(`_runner.py`). Operations answer with the JSON the real service sends (string enums, int64
strings, RFC3339 µs timestamps, zero values omitted) and raise ApiError as Vertex would. A job is
created from a JobSpec, the create body already validated (`_spec.py`).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from vertexbatch.emulator._catalogue import Catalogue
from vertexbatch.emulator._create import apply_mask
from vertexbatch.emulator._errors import ApiError, bad_request
from vertexbatch.emulator._faults import Faults, Hold
from vertexbatch.emulator._filter import FilterError, compile_filter
from vertexbatch.emulator._locations import Locations
from vertexbatch.emulator._options import JobOptions, Timing
from vertexbatch.emulator._record import (
    CANCELLING,
    PAUSED,
    PENDING,
    QUEUED,
    RUNNING,
    TERMINAL,
    JobRecord,
)
from vertexbatch.emulator._spec import JobSpec
from vertexbatch.emulator._state import load_jobs, save_jobs

__all__ = ["PAUSED", "PENDING", "QUEUED", "RUNNING", "TERMINAL", "JobRecord", "JobStore"]

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000


class JobStore:
    """All jobs of one LocalStack, and the REST operations on them."""

    def __init__(
        self,
        *,
        project: str,
        project_number: str,
        timing: Timing,
        seed: int,
        claude_concurrency: int,
        faults: Faults,
        runner: Callable[[JobStore, JobRecord], None],
        catalogue: Catalogue | None = None,
        locations: Locations | None = None,
        claude_over_cap: str = "reject",
        admit: Callable[[str, JobSpec], None] | None = None,
        state_path: Path | None = None,
    ) -> None:
        self.project = project
        self._admit = admit  # a check of the stack's before a create (BigQuery's, raising)
        self.catalogue = catalogue if catalogue is not None else Catalogue()
        self.locations = locations if locations is not None else Locations()
        self.project_number = project_number
        self.timing = timing
        self.seed = seed
        self.claude_concurrency = claude_concurrency
        self.claude_over_cap = claude_over_cap
        self.faults = faults
        self.cond = threading.Condition()
        self.closing = False
        self._runner = runner
        self._jobs: dict[str, JobRecord] = {}
        self._threads: list[threading.Thread] = []
        self._seq = 0
        self._next_ids: list[str] = []
        self._last_create = datetime.fromtimestamp(0, UTC)
        self._default_options = JobOptions()
        self._options: dict[str, JobOptions] = {}
        faults.on_release(self._release)
        # With a state file (`_state.py`): the jobs of the last run, written back on changes.
        self._state_path = state_path
        if state_path is not None:
            loaded, self._seq = load_jobs(state_path)
            self._jobs = {job.job_id: job for job in loaded}
            if loaded:
                self._last_create = max(job.create_time for job in loaded)
            self._save()

    def _save(self) -> None:
        """Write the jobs to the state file, if any (call under the Condition)."""
        if self._state_path is not None:
            save_jobs(self._state_path, list(self._jobs.values()), self._seq)

    # Configuration.

    def set_job_options(self, options: JobOptions, display_name: str | None = None) -> None:
        """Options for jobs created from now on (None: the default for every job)."""
        with self.cond:
            if display_name is None:
                self._default_options = options
                self._options.clear()
            else:
                self._options[display_name] = options

    def _release(self, display_name: str | None) -> None:
        with self.cond:
            for job in self._jobs.values():
                if display_name is None or job.spec.display_name == display_name:
                    job.released = True
            self.cond.notify_all()

    # Helpers for the runner.

    def touch(self, job: JobRecord, **changes: Any) -> None:
        """Change job fields, bump updateTime and wake every waiter."""
        with self.cond:
            was_terminal = job.state in TERMINAL
            for key, value in changes.items():
                setattr(job, key, value)
            job.update_time = max(datetime.now(UTC), job.update_time)
            if job.state in TERMINAL and job.end_time is None:
                job.end_time = job.update_time
            if job.state == RUNNING and job.start_time is None:
                job.start_time = job.update_time
            if job.state in TERMINAL and not was_terminal and job.job_id in self._jobs:
                self._save()
            self.cond.notify_all()

    def take_claude_slot(self, job: JobRecord) -> bool:
        """In "queue" mode, let a Claude job leave PENDING if fewer than the cap run (call under
        the Condition; the job keeps its slot until it is terminal). True in "reject" mode."""
        if self.claude_over_cap != "queue" or job.spec.publisher != "anthropic" or job.has_slot:
            return True
        taken = sum(1 for j in self._jobs.values() if j.has_slot and not j.terminal)
        if taken >= self.claude_concurrency:
            return False
        job.has_slot = True
        return True

    # Operations.

    def _name(self, location: str, job_id: str) -> str:
        return f"projects/{self.project_number}/locations/{location}/batchPredictionJobs/{job_id}"

    def use_job_ids(self, ids: list[str]) -> None:
        """The next jobs created get these ids, in order (numbers, none in use)."""
        with self.cond:
            for job_id in ids:
                if not job_id.isdigit() or job_id in self._jobs or job_id in self._next_ids:
                    raise ValueError(f"job id {job_id!r} is not a number, or is in use")
            self._next_ids.extend(ids)

    def _new_id(self) -> str:
        if self._next_ids:
            return self._next_ids.pop(0)
        while True:
            job_id = str(secrets.randbelow(9 * 10**18 - 10**18) + 10**18)
            if job_id not in self._jobs:
                return job_id

    def create(self, location: str, spec: JobSpec) -> dict[str, Any]:
        """Create a job (PENDING) and start its lifecycle; returns its JSON."""
        if self._admit is not None:
            self._admit(location, spec)
        plan = self.faults.plan_job(spec.display_name)
        with self.cond:
            if self.closing:
                raise ApiError(503, "The service is shutting down.")
            most = self._options.get(spec.display_name, self._default_options).max_input_uris
            if most and len(spec.input_uris) > most:
                raise bad_request(
                    f"BatchPredictionJob.input_config.gcs_source.uris has {len(spec.input_uris)} "
                    f"URIs; this model reads at most {most} input file(s)."
                )
            if spec.publisher == "anthropic" and self.claude_over_cap == "reject":
                active = sum(
                    1
                    for j in self._jobs.values()
                    if j.spec.publisher == "anthropic" and not j.terminal
                )
                if active >= self.claude_concurrency:
                    raise ApiError(
                        429,
                        "Quota exceeded: at most "
                        f"{self.claude_concurrency} concurrent batch prediction jobs for "
                        "Anthropic models per project. Retry after running jobs finish.",
                        "RESOURCE_EXHAUSTED",
                    )
            now = datetime.now(UTC)
            if now <= self._last_create:
                now = self._last_create + timedelta(microseconds=1)
            self._last_create = now
            self._seq += 1
            job_id = self._new_id()
            job = JobRecord(
                seq=self._seq,
                job_id=job_id,
                name=self._name(location, job_id),
                location=location,
                spec=spec,
                create_time=now,
                created_at=time.monotonic(),
                options=self._options.get(spec.display_name, self._default_options),
                hold=plan.hold,
                fault=plan.fail,
                list_hidden=plan.list_lag,
                late_cancel=plan.late_cancel,
                update_time=now,
                state=QUEUED if _created_queued(plan.hold, self.timing) else PENDING,
            )
            self._jobs[job_id] = job
            self._save()
            snapshot = job.to_json()
            thread = threading.Thread(
                target=self._runner, args=(self, job), name=f"vb-job-{job_id}", daemon=True
            )
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
            thread.start()
        return snapshot

    def _find(self, location: str, job_id: str) -> JobRecord:
        job = self._jobs.get(job_id)
        if job is None or job.location != location:
            raise ApiError(
                404,
                f"The BatchPredictionJob {self._name(location, job_id)} does not exist.",
                "NOT_FOUND",
            )
        return job

    def get(self, location: str, job_id: str) -> dict[str, Any]:
        """The job's JSON."""
        with self.cond:
            return self._find(location, job_id).to_json()

    def cancel(self, location: str, job_id: str) -> dict[str, Any]:
        """Ask a job to stop; finished rows keep their output. Returns `{}`."""
        with self.cond:
            job = self._find(location, job_id)
            if job.terminal:
                raise ApiError(
                    400,
                    f"The BatchPredictionJob {job.name} is in state {job.state} and cannot be "
                    "cancelled.",
                    "FAILED_PRECONDITION",
                )
            if not job.cancel_requested:
                self.touch(job, cancel_requested=True, state=CANCELLING)
        return {}

    def delete(self, location: str, job_id: str) -> None:
        """Delete a finished job (the caller answers with its Operation, `_operations.py`)."""
        with self.cond:
            job = self._find(location, job_id)
            if not job.terminal:
                raise ApiError(
                    400,
                    f"The BatchPredictionJob {job.name} is in state {job.state}; only a finished "
                    "job can be deleted.",
                    "FAILED_PRECONDITION",
                )
            del self._jobs[job_id]
            self._save()
            self.cond.notify_all()

    def list_jobs(
        self,
        location: str,
        filter_text: str,
        page_size: int,
        page_token: str,
        masks: tuple[tuple[str, ...], ...] | None = None,
    ) -> dict[str, Any]:
        """One page of the location's jobs matching filter, in creation order; with `masks`
        (a `readMask`, `_create.read_mask`), each job holds only those fields."""
        try:
            predicate = compile_filter(filter_text)
        except FilterError as exc:
            raise bad_request(f"Invalid filter: {exc}") from None
        if page_size < 0:
            raise bad_request("page_size must not be negative.")
        size = min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        fingerprint = hashlib.sha256(f"{location}\0{filter_text}".encode()).hexdigest()[:12]
        after = _decode_token(page_token, fingerprint)
        with self.cond:
            matches: list[JobRecord] = []
            for job in self._jobs.values():
                if job.list_hidden > 0:
                    job.list_hidden -= 1
                    continue
                if job.location == location and job.seq > after and predicate(job.view()):
                    matches.append(job)
            page = [job.to_json() for job in matches[:size]]
            last_seq = matches[size - 1].seq if len(matches) > size else None
        if masks is not None:
            page = [apply_mask(job, masks) for job in page]
        out: dict[str, Any] = {}
        if page:
            out["batchPredictionJobs"] = page
        if last_seq is not None:
            token = f"{last_seq}:{fingerprint}".encode()
            out["nextPageToken"] = base64.urlsafe_b64encode(token).decode().rstrip("=")
        return out

    # For tests and LocalStack.

    def snapshot(self) -> list[dict[str, Any]]:
        """Every job's JSON, in creation order."""
        with self.cond:
            return [job.to_json() for job in self._jobs.values()]

    def wait_job(
        self,
        name: str,
        timeout: float,
        until: Callable[[dict[str, Any]], bool] | None = None,
    ) -> dict[str, Any]:
        """Block until the job (full name or id) is terminal, or `until(job JSON)` holds.

        Raises:
            KeyError: no such job (or it was deleted meanwhile).
            TimeoutError: the condition does not hold within timeout seconds.
        """
        job_id = name.rsplit("/", 1)[-1]

        def ready() -> bool:
            job = self._jobs.get(job_id)
            if job is None:
                return True
            return until(job.to_json()) if until is not None else job.terminal

        with self.cond:
            if job_id not in self._jobs:
                raise KeyError(name)
            done = self.cond.wait_for(ready, timeout)
            if job_id not in self._jobs:
                raise KeyError(name)
            if not done:
                raise TimeoutError(f"job {job_id}: condition not met after {timeout} s")
            return self._jobs[job_id].to_json()

    def close(self, timeout: float = 2.0) -> None:
        """Stop every runner (they exit at their next check) and wait for them briefly."""
        with self.cond:
            self.closing = True
            self.cond.notify_all()
            threads = list(self._threads)
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self.cond:
            self._save()


def _created_queued(hold: Hold | None, timing: Timing) -> bool:
    """Whether a new job starts JOB_STATE_QUEUED: held there, or queued at create by timing."""
    if hold is not None and hold.state == "QUEUED":
        return True
    return timing.queued_seconds > 0 and timing.queued_at == "create"


def _decode_token(token: str, fingerprint: str) -> int:
    if not token:
        return 0
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        seq, mark = raw.split(":", 1)
        if mark != fingerprint:
            raise ValueError
        return int(seq)
    except ValueError:
        raise bad_request("Invalid page token.") from None
