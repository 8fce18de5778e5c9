"""A Cloud Functions HTTP handler that Cloud Scheduler calls to drive a run to the end.

Each call takes one ``advance`` step of the run named in the request (``{"run": "nightly"}``)
and reports the summary. It keeps nothing between calls: the run's ledger in GCS is the state,
and concurrent or repeated calls (at-least-once delivery) take the same step without duplicates.
An optional ``"deadline"`` (ISO 8601) switches unfinished shards to the online APIs once passed.

Deploy::

    gcloud functions deploy advance-run --gen2 --runtime python311 --trigger-http \\
        --entry-point advance --source . --region us-central1 \\
        --set-env-vars GOOGLE_CLOUD_PROJECT=my-project,GOOGLE_CLOUD_LOCATION=us-central1 \\
        --set-env-vars VERTEXBATCH_BUCKET=my-batch-bucket
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
    body = request.get_json(silent=True) or {}
    run_id = body.get("run")
    if not isinstance(run_id, str):
        return {"error": 'expected a JSON body {"run": "<run id>"}'}, 400
    deadline = datetime.fromisoformat(body["deadline"]) if body.get("deadline") else None
    try:
        run = vb.Client.from_env().open_run(run_id)
        summary = run.advance(deadline=deadline, fallback="online" if deadline else None)
    except vb.InvalidRequestError as exc:
        return {"error": str(exc)}, 404
    return {
        "run": summary.id,
        "done": summary.done,
        "keys": summary.keys,
        "outcomes": dict(summary.outcomes),
        "live_jobs": summary.live_jobs,
        "created": summary.created,
    }, 200
