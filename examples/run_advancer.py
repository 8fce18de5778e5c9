"""A Cloud Functions HTTP handler that Cloud Scheduler calls to drive a run to the end.

Each call takes one ``advance`` step of the run named in the request (``{"run": "nightly"}``)
and reports the summary. It keeps nothing between calls: the run's ledger in GCS is the state,
and concurrent or repeated calls (at-least-once delivery) take the same step without duplicates.

The deadline is the run's, never the caller's: with ``RUN_DEADLINE_HOURS`` set where the function
is deployed (``6``, say), a run's deadline is that many hours after the run was created (its
ledger, ``gs://BUCKET/PREFIX/RUN/run.json``, is written once, when the run is created), and past
it the unfinished shards are answered through the online APIs, at the online rate. Unset: no
deadline, no fallback. A request that carries a ``"deadline"`` (or any field but ``"run"``) is
answered 400: were it taken, any caller could make every unfinished key be paid online.

Deploy it as a Cloud Run service of the ``handlers`` image of the repository's ``Dockerfile``,
with ``--no-allow-unauthenticated`` so that only the scheduler's service account may call it
(its variables ``FUNCTION_TARGET=advance``, ``FUNCTION_SOURCE=examples/run_advancer.py``, the
client's, and ``RUN_DEADLINE_HOURS``): docs/cloud-run.md, "The handlers".

Install: ``pip install . functions-framework`` in a clone (no package index serves vertexbatch).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import flask
import functions_framework
from google.cloud import storage  # type: ignore[import-untyped,unused-ignore]

import vertexbatch as vb

DEADLINE_HOURS = "RUN_DEADLINE_HOURS"


def deadline_hours(env: Mapping[str, str] | None = None) -> float | None:
    """``RUN_DEADLINE_HOURS``: hours from a run's creation to its deadline (0 or more).

    Raises:
        ValueError: it is set, and not such a number (the deployer's to fix, not the caller's).
    """
    text = (os.environ if env is None else env).get(DEADLINE_HOURS, "").strip()
    if not text:
        return None
    try:
        hours = float(text)
    except ValueError:
        hours = math.nan
    if not (math.isfinite(hours) and 0 <= hours <= 24 * 365):
        raise ValueError(f"{DEADLINE_HOURS}={text!r} is not a number of hours from 0 to 8760")
    return hours


def run_deadline(client: vb.Client, run_id: str, hours: float) -> datetime | None:
    """The run's deadline: ``hours`` after its ledger was created; ``None`` while it has none
    (a run staged by Cloud Run tasks before the last one registered: no job exists yet)."""
    folder = f"{client.prefix}/{run_id}" if client.prefix else run_id
    bucket = storage.Client(project=client.project).bucket(client.bucket)
    ledger = bucket.get_blob(f"{folder}/run.json")
    if ledger is None or ledger.time_created is None:
        return None
    created: datetime = ledger.time_created
    return created + timedelta(hours=hours)


@functions_framework.http
def advance(request: flask.Request) -> tuple[dict[str, Any], int]:
    """Take one step of the run and report where it stands."""
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or not isinstance(body.get("run"), str):
        return {"error": 'expected a JSON body {"run": "<run id>"}'}, 400
    if "deadline" in body:
        return {
            "error": "a request cannot set the deadline: it is the run's, set where this "
            f"function is deployed ({DEADLINE_HOURS}, hours after the run was created)"
        }, 400
    if set(body) != {"run"}:
        others = sorted(str(name) for name in body if name != "run")[:5]
        return {"error": f'the body takes only "run"; unknown fields {others}'}, 400
    run_id: str = body["run"]
    try:
        hours = deadline_hours()
    except ValueError as exc:
        return {"error": f"the function is misconfigured: {exc}"}, 500
    try:
        with vb.Client.from_env() as client:  # one per invocation, its connections freed after
            run = client.open_run(run_id)
            deadline = None if hours is None else run_deadline(client, run_id, hours)
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
