"""A Cloud Functions HTTP handler that Cloud Scheduler calls to follow a batch by its id.

Each call is short and keeps nothing: it finds the job by the submission id in the request
(``{"id": "review-0a1b2c"}``), reports its status and, once the job is terminal, writes a
summary of the results to ``gs://BUCKET/SUMMARY_PREFIX/ID.json``. The write is create-only
(``if_generation_match=0``): Cloud Scheduler delivers at least once, and two overlapping calls
write the summary once; the later one reports that it was already there.

Deploy it as a Cloud Run service of the ``handlers`` image of the repository's ``Dockerfile``,
with ``--no-allow-unauthenticated`` so that only the scheduler's service account may call it
(``FUNCTION_TARGET=poll``, ``FUNCTION_SOURCE=examples/scheduler_poller.py``): docs/cloud-run.md,
"The handlers".

Configuration comes from the same variables as the ``vertexbatch`` command, plus
``VERTEXBATCH_SUMMARY_PREFIX`` (default ``summaries``).

Install: ``pip install . functions-framework`` in a clone (no package index serves vertexbatch).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any

import flask
import functions_framework
from google.api_core import exceptions as api_exceptions
from google.cloud import storage  # type: ignore[import-untyped,unused-ignore]

import vertexbatch as vb

OUTCOMES = ("ok", "refused", "truncated", "retryable", "failed", "missing")


def summarise(client: vb.Client, job: vb.Job, status: vb.Status) -> dict[str, Any]:
    """Counts per outcome, token totals, and the keys to resubmit or inspect (no content)."""
    counts: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    resubmit: list[str] = []
    inspect: list[str] = []
    for result in client.results(job):
        counts[result.outcome] += 1
        tokens["input"] += result.usage.input
        tokens["output"] += result.usage.output
        if result.outcome in ("retryable", "missing"):
            resubmit.append(result.key)
        elif result.outcome in ("refused", "failed"):
            inspect.append(result.key)
    return {
        "id": job.id,
        "job": job.name,
        "state": status.state,
        "keys": job.keys,
        "outcomes": {name: counts[name] for name in OUTCOMES},
        "tokens": {"input": tokens["input"], "output": tokens["output"]},
        "resubmit": sorted(resubmit),
        "inspect": sorted(inspect),
    }


def write_once(bucket: storage.Bucket, name: str, summary: dict[str, Any]) -> bool:
    """Write the summary unless the object exists; True when this call wrote it."""
    blob = bucket.blob(name)
    try:
        blob.upload_from_string(
            json.dumps(summary, indent=2),
            content_type="application/json",
            if_generation_match=0,
        )
    except api_exceptions.PreconditionFailed:
        return False
    return True


@functions_framework.http
def poll(request: flask.Request) -> tuple[dict[str, Any], int]:
    """Report the status of the job of ``{"id": ...}``; write its summary once it is terminal."""
    body = request.get_json(silent=True)
    submission_id = body.get("id") if isinstance(body, dict) else None
    if not isinstance(submission_id, str):
        return {"error": 'the request body must be JSON like {"id": "my-batch-1"}'}, 400
    with vb.Client.from_env() as client:  # one per invocation, its connections freed after
        return _poll(client, submission_id)


def _poll(client: vb.Client, submission_id: str) -> tuple[dict[str, Any], int]:
    try:
        job = client.find(submission_id)
    except vb.InvalidRequestError as exc:
        return {"id": submission_id, "error": str(exc)}, 400
    if job is None:
        return {"id": submission_id, "error": "no job for this id"}, 404
    status = client.status(job)
    reply: dict[str, Any] = {
        "id": job.id,
        "job": job.name,
        "state": status.state,
        "terminal": status.terminal,
        "succeeded": status.succeeded,
        "failed": status.failed,
    }
    if not status.terminal:
        return reply, 200
    summary_prefix = os.environ.get("VERTEXBATCH_SUMMARY_PREFIX", "summaries")
    name = f"{summary_prefix}/{job.id}.json"
    bucket = storage.Client(project=client.project).bucket(client.bucket)
    reply["summary"] = f"gs://{client.bucket}/{name}"
    if bucket.blob(name).exists():
        reply["written"] = False  # a previous call wrote it: no need to read the results again
    else:
        reply["written"] = write_once(bucket, name, summarise(client, job, status))
    return reply, 200
