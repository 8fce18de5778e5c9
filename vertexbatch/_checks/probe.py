"""``vertexbatch probe``: tiny real jobs that settle what the wire reference leaves open.

It stages and creates one Claude and one Gemini job (and, when asked, one embeddings job and one
open-model job: ``LANE_MODELS``) straight over REST (so the report holds the service's own
create and get JSON, field for field), each with three rows it can provoke honestly:

    answer     a normal answer (max_tokens 64)
    truncated  a max-tokens stop (max_tokens / maxOutputTokens 1)
    invalid    a per-line error (Claude max_tokens 0; Gemini role "critic", the official
               example of a line error: "Please use a valid role: user, model.")
(embeddings: an answer, a vector of 8 dimensions, an unknown task type); the answered rows of
the lanes whose output row no Google page shows are checked against the row the reader assumes.

(``invalid_rows=False``, the command's ``--no-invalid-rows``, leaves the third out, for a
service that fails a whole job over it), then polls both until they end (``interval``, bounded
by ``timeout``; a job still live then is cancelled), lists the output directory and reads its
rows. The report keeps field names, JSON types, enums, status prefixes, states with their
timings, file names and error codes: never a
request or response text (``probe_shape``). The lines are built by ``_requests.lines`` exactly as
``submit`` stages them (``custom_id``, the ``vb_key`` sibling and label).

Everything lands under ``gs://BUCKET/PREFIX/probe-<stamp>/`` and is left there (it is the
user's bucket; the input is ours, the output the service's).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from .._config import Config, local_retry, read_config
from .._errors import InvalidRequestError
from .._hosts import vertex_base_url
from .._json import load_json
from .._providers import by_command
from .._retry import RetryPolicy
from .doctor import on_local_stack
from .probe_shape import (
    differences,
    facts,
    field_names,
    lane_models,
    output_dir_offset,
    probe_parts,
    probe_rows,
    row_facts,
    shape,
)
from .probe_stage import create_in_parts, stage_parts

if TYPE_CHECKING:
    import requests

__all__ = [
    "LANE_MODELS",
    "PROBE_MODELS",
    "REPORT_VERSION",
    "error_status",
    "rest_call",
    "run_probe",
]

PROBE_MODELS: Mapping[str, str] = lane_models(optional=False)
"""The models probed unless ``--claude-model`` / ``--gemini-model`` say otherwise."""
LANE_MODELS: Mapping[str, str] = lane_models(optional=True)
"""The lanes probed only when asked (``--lane embeddings``, ``--lane chat``), and their models
unless ``--embeddings-model`` / ``--chat-model`` say otherwise."""
REPORT_VERSION = 1
INTERVAL = 30.0  # seconds between polls of a real job
LOCAL_INTERVAL = 0.5
MIN_INTERVAL = 5.0  # the shortest poll interval against real Vertex
TERMINAL = frozenset(
    {
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_EXPIRED",
    }
)
_MAX_FILE = 4 * 1024 * 1024  # three rows: anything larger is not read


def _session(config: Config) -> tuple[requests.Session, str]:
    """An HTTP session and the Vertex base URL: anonymous at the stack, else ADC."""
    if on_local_stack(config):
        import requests

        assert config.vertex_endpoint is not None
        return requests.Session(), config.vertex_endpoint.rstrip("/")
    import google.auth
    from google.auth.transport.requests import AuthorizedSession

    credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    session = AuthorizedSession(credentials)  # type: ignore[no-untyped-call]
    return session, vertex_base_url(config.location)


def rest_call(session: requests.Session, method: str, url: str, body: Any = None) -> dict[str, Any]:
    """One REST call; an HTTP error raises the Google exception for it."""
    from google.api_core import exceptions as api_exceptions

    response = session.request(method, url, json=body, timeout=60)
    if response.status_code >= 400:
        error = api_exceptions.from_http_response(response)  # type: ignore[no-untyped-call]
        if error_status(response) == "FAILED_PRECONDITION":
            # Over REST api_core maps 400 to BadRequest whatever the cause; the body's status
            # tells a job that already ended (cancel) from a bad request.
            raise api_exceptions.FailedPrecondition(  # type: ignore[no-untyped-call]
                error.message, response=response
            ) from None
        raise error
    answer: dict[str, Any] = response.json() if response.content else {}
    return answer


def error_status(response: requests.Response) -> str | None:
    """The ``error.status`` of a Google REST error body, if it has one."""
    try:
        status = response.json()["error"]["status"]
    except (ValueError, KeyError, TypeError):
        return None
    return status if isinstance(status, str) else None


def _get(session: requests.Session, base: str, job: _Job) -> dict[str, Any]:
    return rest_call(session, "GET", f"{base}/v1/{job.resource}")


def _cancel(session: requests.Session, base: str, job: _Job) -> dict[str, Any]:
    return rest_call(session, "POST", f"{base}/v1/{job.resource}:cancel", {})


class _Job:
    """One probe job: what was seen of it so far."""

    def __init__(self, name: str, model: str, created: dict[str, Any], started: float) -> None:
        self.name = name
        self.model = model
        self.resource = str(created["name"])
        self.started = started
        self.create_fields = field_names(created)
        self.fields = set(self.create_fields)
        self.last = created
        self.states: list[dict[str, Any]] = [{"state": created.get("state"), "seconds": 0.0}]
        self.timed_out = False
        self.cancel: str | None = None  # when the probe stopped early: what its cancel did
        self.input = (1, 0)  # the input files the job was created with, and their rows

    @property
    def state(self) -> str:
        return str(self.states[-1]["state"])

    def saw(self, job: dict[str, Any], now: float) -> bool:
        """Record one get; True when the state changed."""
        self.last = job
        self.fields.update(field_names(job))
        if job.get("state") == self.state:
            return False
        self.states.append({"state": job.get("state"), "seconds": round(now - self.started, 1)})
        return True


def run_probe(
    env: Mapping[str, str],
    flags: Mapping[str, str | None] | None = None,
    *,
    models: Mapping[str, str] = PROBE_MODELS,
    interval: float | None = None,
    timeout: float = 6 * 3600.0,
    progress: Callable[[str], None] = lambda line: None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    retry: RetryPolicy | None = None,
    invalid_rows: bool = True,
    on_partial: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Submit one probe job per lane of ``models``, wait for them, and return the report (a
    JSON-ready dict).

    Gets, cancels and reads go under ``retry`` (default ``RetryPolicy()``; at the local stack a
    refused connection is final); creates are never retried, as in ``submit``: a lost create
    answer would make a second job.

    When anything stops the probe after a job exists (a refused create, a get that keeps
    failing, Ctrl-C), every job not yet ended is cancelled and named through ``progress``, and
    ``on_partial`` gets a partial report (``"partial": true``: the jobs' names, fields and
    states, no rows or facts) before the error is raised again.

    Raises:
        InvalidRequestError: the configuration is incomplete, or ``interval`` is below
            ``MIN_INTERVAL`` against real Vertex.
        google.api_core.exceptions.GoogleAPICallError: a create or get was refused.
    """
    from .doctor_run import lookups

    config = read_config(env, flags if flags is not None else {})
    if interval is not None and interval < MIN_INTERVAL and not on_local_stack(config):
        # Back-to-back gets for up to six hours spend the project's read quota for nothing.
        raise InvalidRequestError(
            f"interval {interval:g} s is below {MIN_INTERVAL:g} s: against Vertex, poll at most "
            f"every {MIN_INTERVAL:g} seconds (the local stack takes any interval >= 0)",
            field="interval",
        )
    policy = retry or RetryPolicy()
    if on_local_stack(config):
        policy = local_retry(policy)
    if interval is None:  # the local stack's jobs end in seconds: poll often enough to see states
        interval = LOCAL_INTERVAL if on_local_stack(config) else INTERVAL
    gcs = lookups(config).gcs
    session, base = _session(config)
    stamp = datetime.now(UTC).strftime("%Y%m%dt%H%M%S") + "-" + secrets.token_hex(3)
    folder = "/".join(p for p in (config.prefix.strip("/"), f"probe-{stamp}") if p)
    parent = f"{base}/v1/projects/{config.project}/locations/{config.location}"
    jobs: dict[str, _Job] = {}
    header: dict[str, Any] = {
        "vertexbatch_probe": REPORT_VERSION,
        "location": config.location,
        "local_stack": on_local_stack(config),
        "invalid_rows": invalid_rows,
        "folder": f"gs://{config.bucket}/{folder}/",
    }
    try:
        _create_all(
            gcs, session, config, parent, folder, stamp, models, jobs, clock, progress, invalid_rows
        )
        _poll(jobs, session, base, policy, interval, timeout, clock, sleep, progress)
        report_jobs: dict[str, dict[str, Any]] = {}
        report_rows: dict[str, list[dict[str, Any]]] = {}
        row_summaries: dict[str, list[dict[str, Any]]] = {}
        for name, job in jobs.items():
            entry, rows = policy.call("read a probe job's output", partial(_read_output, gcs, job))
            report_jobs[name] = entry
            report_rows[name] = rows
            # Facts from the main file's rows; then every parsed row is dropped: only shapes stay.
            lane = by_command(name).provider
            row_summaries[name] = [
                row_facts(lane, r["_row"]) for r in rows if r["file"] == entry["main"]
            ]
            for r in rows:
                del r["_row"]
    except BaseException as exc:
        # Ctrl-C, a get that keeps failing, a refused create: a job left live runs and bills for
        # nothing, and the user needs its name. Cancel what is live, hand back what was seen.
        _stop_all(jobs, exc, session, base, policy, progress)
        if on_partial is not None and jobs:
            try:
                on_partial(_partial_report(header, jobs, exc))
            except Exception as write_exc:
                exc.add_note(f"the partial report was not written: {type(write_exc).__name__}")
        raise
    found = facts(report_jobs, row_summaries)
    return {
        **header,
        "jobs": report_jobs,
        "rows": report_rows,
        "facts": found,
        "differences": differences(found),
    }


def _poll(
    jobs: Mapping[str, _Job],
    session: requests.Session,
    base: str,
    policy: RetryPolicy,
    interval: float,
    timeout: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    progress: Callable[[str], None],
) -> None:
    """Get each live job every ``interval`` until all ended; cancel those live at ``timeout``."""
    ends = clock() + timeout
    while any(job.state not in TERMINAL for job in jobs.values()):
        if clock() >= ends:
            for job in jobs.values():
                if job.state not in TERMINAL:
                    job.timed_out = True
                    progress(f"{job.name}: still {job.state} after {timeout:.0f} s: cancelling")
                    _cancel_live(session, base, policy, job)  # a failed cancel raises
                    got = policy.call("get a probe job", partial(_get, session, base, job))
                    job.saw(got, clock())
            return
        sleep(interval)
        for job in jobs.values():
            if job.state in TERMINAL:
                continue
            got = policy.call("get a probe job", partial(_get, session, base, job))
            now = clock()
            if job.saw(got, now):
                progress(f"{job.name}: {job.state} after {now - job.started:.0f} s")


def _cancel_live(session: requests.Session, base: str, policy: RetryPolicy, job: _Job) -> bool:
    """Cancel a job; False when it had already ended (FAILED_PRECONDITION). Other errors raise."""
    from google.api_core import exceptions as api_exceptions

    try:
        policy.call("cancel a probe job", partial(_cancel, session, base, job))
    except api_exceptions.FailedPrecondition:
        return False
    return True


def _stop_all(
    jobs: Mapping[str, _Job],
    exc: BaseException,
    session: requests.Session,
    base: str,
    policy: RetryPolicy,
    progress: Callable[[str], None],
) -> None:
    """Cancel every job not seen to end, naming each; a cancel that fails is noted on ``exc``."""
    for job in jobs.values():
        if job.state in TERMINAL:
            continue
        try:
            asked = _cancel_live(session, base, policy, job)
        except Exception as cancel_exc:
            job.cancel = f"failed ({type(cancel_exc).__name__})"
            line = f"cancelling {job.resource} failed ({type(cancel_exc).__name__}): cancel it"
            progress(f"{job.name}: {line}")
            exc.add_note(line)
            continue
        job.cancel = "requested" if asked else "already ended"
        progress(f"{job.name}: stopped early: cancel of {job.resource} {job.cancel}")


def _partial_report(
    header: Mapping[str, Any], jobs: Mapping[str, _Job], exc: BaseException
) -> dict[str, Any]:
    """What was seen before the probe stopped: each job's name, fields and states, no rows."""
    return {
        **header,
        "partial": True,
        "stopped_by": type(exc).__name__,
        "jobs": {
            name: {
                "model": job.model,
                "resource": job.resource,
                "create_fields": job.create_fields,
                "fields": sorted(job.fields),
                "states": job.states,
                "timed_out": job.timed_out,
                "cancel": job.cancel,
            }
            for name, job in jobs.items()
        },
    }


def _create_all(
    gcs: Any,
    session: requests.Session,
    config: Config,
    parent: str,
    folder: str,
    stamp: str,
    models: Mapping[str, str],
    jobs: dict[str, _Job],
    clock: Callable[[], float],
    progress: Callable[[str], None],
    invalid: bool,
) -> None:
    """Stage and create one job per lane of ``models``, adding each to ``jobs`` as soon as it
    exists (each input in two parts: ``probe_stage``)."""
    for name in models:  # the lanes the command names a model for
        parts = probe_parts(probe_rows(name, invalid))
        body: dict[str, Any] = {
            "displayName": f"vertexbatch-probe-{stamp}-{name}",
            "model": by_command(name).publisher_path(models[name]),
            "inputConfig": {"instancesFormat": "jsonl"},
            "outputConfig": {
                "predictionsFormat": "jsonl",
                "gcsDestination": {"outputUriPrefix": f"gs://{config.bucket}/{folder}/{name}/out"},
            },
            "labels": {"vertexbatch_probe": stamp},
        }
        created, files = create_in_parts(
            partial(rest_call, session, "POST", f"{parent}/batchPredictionJobs"),
            body,
            parts,
            partial(stage_parts, gcs, config.bucket, f"{folder}/{name}"),
            partial(_say, progress, name),
        )
        jobs[name] = _Job(name, models[name], created, clock())
        jobs[name].input = (files, sum(part.count(b"\n") for part in parts))
        progress(f"{name}: created {jobs[name].resource} ({jobs[name].state})")


def _read_output(gcs: Any, job: _Job) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The job's report entry and its rows' shapes (each with its parsed row under ``_row``)."""
    last = job.last
    error = last.get("error")
    stats = last.get("completionStats") or {}
    entry: dict[str, Any] = {
        "model": job.model,
        "create_fields": job.create_fields,
        "fields": sorted(job.fields),
        "states": job.states,
        "timed_out": job.timed_out,
        "error_code": error.get("code") if isinstance(error, dict) else None,
        "completion_stats": {key: shape(value) for key, value in stats.items()},
        "output_files": [],
        "output_dir_offset_seconds": None,
        "main": None,
        "input_uris": job.input[0],
        "input_rows": job.input[1],
        "output_rows": None,
    }
    directory = (last.get("outputInfo") or {}).get("gcsOutputDirectory")
    if not isinstance(directory, str) or not directory.startswith("gs://"):
        return entry, []
    entry["output_dir_offset_seconds"] = output_dir_offset(directory, str(last.get("createTime")))
    bucket, _, path = directory.removeprefix("gs://").partition("/")
    path = path.rstrip("/")
    blobs = list(gcs.list_blobs(bucket, prefix=f"{path}/"))
    files = sorted(blob.name.removeprefix(f"{path}/") for blob in blobs)
    entry["output_files"] = files
    main = "predictions.jsonl" if "predictions.jsonl" in files else None
    if main is None:
        main = next((f for f in files if f.endswith(".jsonl")), None)
    entry["main"] = main
    rows: list[dict[str, Any]] = []
    for blob in blobs:
        file = blob.name.removeprefix(f"{path}/")
        if not file.endswith(".jsonl") or (blob.size or 0) > _MAX_FILE:
            continue
        for line in blob.download_as_bytes().splitlines():
            if not line.strip():
                continue
            try:
                row = load_json(line)
            except ValueError:
                rows.append({"file": file, "shape": "not JSON", "_row": {}})
                continue
            rows.append({"file": file, "shape": shape(row), "_row": row})
    entry["output_rows"] = len(rows)
    return entry, rows


def _say(progress: Callable[[str], None], name: str, line: str) -> None:
    progress(f"{name}: {line}")
