"""A Cloud Functions HTTP handler that Cloud Scheduler calls to drive a run to the end.

Each call takes one ``advance`` step of the run named in the request (``{"run": "nightly"}``)
and reports the summary. It keeps nothing between calls: the run's ledger in GCS is the state,
and concurrent or repeated calls (at-least-once delivery) take the same step without duplicates.
An optional ``"deadline"`` (ISO 8601 with a timezone, ``"2026-11-30T06:00:00Z"``) switches
unfinished shards to the online APIs once passed; a deadline without a timezone is answered 400.

Deploy::

    gcloud functions deploy advance-run --gen2 --runtime python311 --trigger-http \\
        --entry-point advance --source . --region us-central1 \\
        --set-env-vars GOOGLE_CLOUD_PROJECT=my-project,GOOGLE_CLOUD_LOCATION=us-central1 \\
        --set-env-vars VERTEXBATCH_BUCKET=my-batch-bucket

Install: ``pip install vertexbatch functions-framework`` (a ``requirements.txt`` of those two).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import flask
import functions_framework

import vertexbatch as vb


@functions_framework.http
def advance(request: flask.Request) -> tuple[dict[str, Any], int]:
    """Take one step of the run and report where it stands."""
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or not isinstance(body.get("run"), str):
        return {"error": 'expected a JSON body {"run": "<run id>"}'}, 400
    run_id: str = body["run"]
    try:
        deadline = datetime.fromisoformat(body["deadline"]) if body.get("deadline") else None
    except (TypeError, ValueError):
        return {"error": '"deadline" must be an ISO 8601 time, e.g. "2026-11-30T06:00:00Z"'}, 400
    try:
        with vb.Client.from_env() as client:  # one per invocation, its connections freed after
            run = client.open_run(run_id)
            summary = run.advance(deadline=deadline, fallback="online" if deadline else None)
    except vb.InvalidRequestError as exc:
        return {"error": str(exc)}, 404 if exc.field == "run" else 400
    return {
        "run": summary.id,
        "done": summary.done,
        "keys": summary.keys,
        "outcomes": dict(summary.outcomes),
        "live_jobs": summary.live_jobs,
        "created": summary.created,
    }, 200
