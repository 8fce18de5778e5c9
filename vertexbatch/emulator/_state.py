"""A stack's jobs on disk (`LocalStack(state_dir=...)`, `vertexbatch emulator --state-dir`).

The job store is written to `<state_dir>/vertex-jobs.json` (whole, atomically: a temporary file
then a rename) when a job is created, deleted or reaches a terminal state, and when the stack
stops; a stack started on the same state directory reads it back. fake-gcs-server keeps the
objects itself, with its filesystem backend under `<state_dir>/gcs`.

A job that was not terminal when the stack stopped does not resume: on reload it ends
JOB_STATE_FAILED, error code 14 (UNAVAILABLE), `RESTARTED`, with the rows it had finished counted
and no output written. What is not kept: faults, holds, job options set at run time, the model
catalogue's additions, long-running operations, call counts.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vertexbatch.emulator._options import JobOptions
from vertexbatch.emulator._record import TERMINAL, JobRecord
from vertexbatch.emulator._spec import JobSpec

__all__ = ["JOBS_FILE", "RESTARTED", "load_jobs", "save_jobs"]

JOBS_FILE = "vertex-jobs.json"
RESTARTED = (
    "The local stack was restarted while the job ran; a job does not resume across restarts."
)
_VERSION = 1
_TIMES = ("create_time", "update_time", "start_time", "end_time")
_KEPT = (
    "seq",
    "job_id",
    "name",
    "location",
    "state",
    "error",
    "show_output_info",
    "show_stats",
    "successful",
    "failed",
    "incomplete",
)


def _record_json(job: JobRecord) -> dict[str, Any]:
    out: dict[str, Any] = {name: getattr(job, name) for name in _KEPT}
    for name in _TIMES:
        moment = getattr(job, name)
        out[name] = moment.isoformat() if moment is not None else None
    out["spec"] = dataclasses.asdict(job.spec)
    out["options"] = dataclasses.asdict(job.options)
    return out


def save_jobs(path: Path, jobs: list[JobRecord], seq: int) -> None:
    """Write the jobs (call under the store's Condition, so that they do not change meanwhile)."""
    document = {"version": _VERSION, "seq": seq, "jobs": [_record_json(job) for job in jobs]}
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(json.dumps(document))
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def load_jobs(path: Path) -> tuple[list[JobRecord], int]:
    """The jobs and the sequence number saved at `path` ([] and 0 when there is no file); a job
    not terminal then ends FAILED (`RESTARTED`).

    Raises:
        ValueError: the file is not a state file of this version.
    """
    if not path.exists():
        return [], 0
    try:
        document = json.loads(path.read_text())
        if not isinstance(document, dict) or document.get("version") != _VERSION:
            found = document.get("version") if isinstance(document, dict) else None
            raise ValueError(f"version {found!r}")
        jobs = [_record(item) for item in document["jobs"]]
        seq = int(document["seq"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path} is not a local stack state file ({exc})") from None
    return jobs, seq


def _record(item: dict[str, Any]) -> JobRecord:
    spec = dict(item["spec"])
    spec["input_uris"] = tuple(spec["input_uris"])
    times = {
        name: datetime.fromisoformat(item[name]) if item[name] is not None else None
        for name in _TIMES
    }
    error = item["error"]
    job = JobRecord(
        seq=item["seq"],
        job_id=item["job_id"],
        name=item["name"],
        location=item["location"],
        spec=JobSpec(**spec),
        create_time=times["create_time"] or datetime.now(UTC),
        created_at=time.monotonic(),
        options=JobOptions(**item["options"]),
        hold=None,
        fault=None,
        list_hidden=0,
        state=item["state"],
        update_time=times["update_time"] or datetime.now(UTC),
        start_time=times["start_time"],
        end_time=times["end_time"],
        error=(int(error[0]), str(error[1])) if error is not None else None,
        show_output_info=bool(item["show_output_info"]),
        show_stats=bool(item["show_stats"]),
        successful=int(item["successful"]),
        failed=int(item["failed"]),
        incomplete=int(item["incomplete"]),
    )
    if job.state not in TERMINAL:
        now = max(datetime.now(UTC), job.update_time)
        job.state = "JOB_STATE_FAILED"
        job.error = (14, RESTARTED)
        job.update_time = job.end_time = now
        job.show_output_info = False
    return job
