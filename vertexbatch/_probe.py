"""``vertexbatch probe``: two tiny real jobs that settle what the wire reference leaves open.

It stages and creates one Claude and one Gemini job straight over REST (so the report holds the
service's own create and get JSON, field for field), each with three rows it can provoke
honestly:

    answer     a normal answer (max_tokens 64)
    truncated  a max-tokens stop (max_tokens / maxOutputTokens 1)
    invalid    a per-line error (Claude max_tokens 0; Gemini role "critic", the official
               example of a line error: "Please use a valid role: user, model.")

(``invalid_rows=False``, the command's ``--no-invalid-rows``, leaves the third out, for a
service that fails a whole job over it), then polls both until they end (``interval``, bounded
by ``timeout``; a job still live then is cancelled), lists the output directory and reads its
rows. The report keeps field names, JSON types, enums, status prefixes, states with their
timings, file names and error codes: never a
request or response text (``_probe_shape``). The lines are built by ``_lines`` exactly as
``submit`` stages them (``custom_id``, the ``vb_key`` sibling and label).

Everything lands under ``gs://BUCKET/PREFIX/probe-<stamp>/`` and is left there (it is the
user's bucket; the input is ours, the output the service's).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from ._config import Config, local_retry, read_config
from ._probe_shape import (
    differences,
    facts,
    field_names,
    output_dir_offset,
    row_facts,
    shape,
)
from ._retry import RetryPolicy

if TYPE_CHECKING:
    import requests

__all__ = ["PROBE_MODELS", "REPORT_VERSION", "run_probe"]

PROBE_MODELS: Mapping[str, str] = {
    "claude": "claude-opus-5-5@default",
    "gemini": "gemini-3.8-flash",
}
"""The models probed unless ``--claude-model`` / ``--gemini-model`` say otherwise."""
REPORT_VERSION = 1
INTERVAL = 30.0  # seconds between polls of a real job
LOCAL_INTERVAL = 0.5
TERMINAL = frozenset(
    {
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_EXPIRED",
    }
)
_PUBLISHERS = {"claude": "anthropic", "gemini": "google"}
_ANSWER = "Name one primary colour."
_LONG = "Count from one to twenty in words."
_MAX_FILE = 4 * 1024 * 1024  # three rows: anything larger is not read


def _lines(name: str, invalid: bool = True) -> bytes:
    """The staged JSONL of one provider's probe rows (without the invalid one: two)."""
    from ._lines import claude_line, gemini_line
    from ._models import ClaudeRequest, GeminiRequest

    if name == "claude":

        def claude(key: str, text: str, max_tokens: int) -> bytes:
            params = {"max_tokens": max_tokens, "messages": [{"role": "user", "content": text}]}
            return claude_line(ClaudeRequest(key=key, params=params)).data

        rows = claude("answer", _ANSWER, 64) + claude("truncated", _LONG, 1)
        return rows + claude("invalid", _ANSWER, 0) if invalid else rows
    from google.genai import types as genai_types

    def gemini(key: str, text: str, role: str, limit: int) -> bytes:
        contents = [{"role": role, "parts": [{"text": text}]}]
        config = genai_types.GenerateContentConfig(max_output_tokens=limit)
        return gemini_line(GeminiRequest(key=key, contents=contents, config=config)).data

    rows = gemini("answer", _ANSWER, "user", 64) + gemini("truncated", _LONG, "user", 1)
    return rows + gemini("invalid", _ANSWER, "critic", 64) if invalid else rows


def _session(config: Config) -> tuple[requests.Session, str]:
    """An HTTP session and the Vertex base URL: anonymous at the stack, else ADC."""
    from ._doctor import on_local_stack

    if on_local_stack(config):
        import requests

        assert config.vertex_endpoint is not None
        return requests.Session(), config.vertex_endpoint.rstrip("/")
    import google.auth
    from google.auth.transport.requests import AuthorizedSession

    credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    host = (
        "aiplatform.googleapis.com"
        if config.location == "global"
        else f"{config.location}-aiplatform.googleapis.com"
    )
    return AuthorizedSession(credentials), f"https://{host}"  # type: ignore[no-untyped-call]


def _call(session: requests.Session, method: str, url: str, body: Any = None) -> dict[str, Any]:
    """One REST call; an HTTP error raises the Google exception for it."""
    from google.api_core import exceptions as api_exceptions

    response = session.request(method, url, json=body, timeout=60)
    if response.status_code >= 400:
        raise api_exceptions.from_http_response(response)  # type: ignore[no-untyped-call]
    answer: dict[str, Any] = response.json() if response.content else {}
    return answer


def _get(session: requests.Session, base: str, job: _Job) -> dict[str, Any]:
    return _call(session, "GET", f"{base}/v1/{job.resource}")


def _cancel(session: requests.Session, base: str, job: _Job) -> dict[str, Any]:
    return _call(session, "POST", f"{base}/v1/{job.resource}:cancel", {})


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
) -> dict[str, Any]:
    """Submit the two probe jobs, wait for them, and return the report (a JSON-ready dict).

    Gets, cancels and reads go under ``retry`` (default ``RetryPolicy()``; at the local stack a
    refused connection is final); creates are never retried, as in ``submit``: a lost create
    answer would make a second job.

    Raises:
        InvalidRequestError: the configuration is incomplete.
        google.api_core.exceptions.GoogleAPICallError: a create or get was refused.
    """
    from google.api_core import exceptions as api_exceptions

    from ._doctor import lookups, on_local_stack

    config = read_config(env, flags if flags is not None else {})
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
    try:
        _create_all(
            gcs, session, config, parent, folder, stamp, models, jobs, clock, progress, invalid_rows
        )
    except Exception as exc:
        # A job already created would run and bill for nothing: cancel it, then raise.
        for job in jobs.values():
            try:
                policy.call("cancel a probe job", partial(_cancel, session, base, job))
            except Exception as cancel_exc:
                exc.add_note(f"cancelling {job.resource} failed too: {type(cancel_exc).__name__}")
        raise
    ends = clock() + timeout
    while any(job.state not in TERMINAL for job in jobs.values()):
        if clock() >= ends:
            for job in jobs.values():
                if job.state not in TERMINAL:
                    job.timed_out = True
                    progress(f"{job.name}: still {job.state} after {timeout:.0f} s: cancelling")
                    # FAILED_PRECONDITION: it ended meanwhile; the get below says how.
                    with contextlib.suppress(api_exceptions.BadRequest):
                        policy.call("cancel a probe job", partial(_cancel, session, base, job))
                    got = policy.call("get a probe job", partial(_get, session, base, job))
                    job.saw(got, clock())
            break
        sleep(interval)
        for job in jobs.values():
            if job.state in TERMINAL:
                continue
            got = policy.call("get a probe job", partial(_get, session, base, job))
            now = clock()
            if job.saw(got, now):
                progress(f"{job.name}: {job.state} after {now - job.started:.0f} s")
    report_jobs: dict[str, dict[str, Any]] = {}
    report_rows: dict[str, list[dict[str, Any]]] = {}
    row_summaries: dict[str, list[dict[str, Any]]] = {}
    for name, job in jobs.items():
        entry, rows = policy.call("read a probe job's output", partial(_read_output, gcs, job))
        report_jobs[name] = entry
        report_rows[name] = rows
        # Facts from the main file's rows; then every parsed row is dropped: only shapes stay.
        row_summaries[name] = [
            row_facts(_PUBLISHERS[name], r["_row"]) for r in rows if r["file"] == entry["main"]
        ]
        for r in rows:
            del r["_row"]
    found = facts(report_jobs, row_summaries)
    return {
        "vertexbatch_probe": REPORT_VERSION,
        "location": config.location,
        "local_stack": on_local_stack(config),
        "invalid_rows": invalid_rows,
        "folder": f"gs://{config.bucket}/{folder}/",
        "jobs": report_jobs,
        "rows": report_rows,
        "facts": found,
        "differences": differences(found),
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
    """Stage and create the two jobs, adding each to ``jobs`` as soon as it exists."""
    for name in ("claude", "gemini"):
        blob = gcs.bucket(config.bucket).blob(f"{folder}/{name}/input.jsonl")
        blob.upload_from_string(
            _lines(name, invalid), content_type="application/jsonl", if_generation_match=0
        )
        body = {
            "displayName": f"vertexbatch-probe-{stamp}-{name}",
            "model": f"publishers/{_PUBLISHERS[name]}/models/{models[name]}",
            "inputConfig": {
                "instancesFormat": "jsonl",
                "gcsSource": {"uris": [f"gs://{config.bucket}/{blob.name}"]},
            },
            "outputConfig": {
                "predictionsFormat": "jsonl",
                "gcsDestination": {"outputUriPrefix": f"gs://{config.bucket}/{folder}/{name}/out"},
            },
            "labels": {"vertexbatch_probe": stamp},
        }
        created = _call(session, "POST", f"{parent}/batchPredictionJobs", body)
        jobs[name] = _Job(name, models[name], created, clock())
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
                row = json.loads(line)
            except ValueError:
                rows.append({"file": file, "shape": "not JSON", "_row": {}})
                continue
            rows.append({"file": file, "shape": shape(row), "_row": row})
    return entry, rows
