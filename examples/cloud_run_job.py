"""A Cloud Run job whose tasks stage one run together from JSONL request files, safely retried.

Every task of the job's execution stages its part of the requests under one run id, the
execution id ``CLOUD_RUN_EXECUTION``, and registers it (``vb.Task.from_env()`` reads
``CLOUD_RUN_TASK_INDEX``, ``CLOUD_RUN_TASK_COUNT`` and ``CLOUD_RUN_TASK_ATTEMPT``). Given a GCS
prefix (``gs://bucket/in/``), a task lists its files once and takes its share of them, cut by
bytes (``vb.list_request_files(client, prefix).share(task)``), streamed from GCS; given a local
file, every N-th line of it, from its index. Cloud Run retries a failed task with the same
index and execution id: the retry adopts what the first attempt staged and finishes it,
whatever happened to the first attempt. No task waits for another: the run's jobs are created
by the step that finds every task registered (the last task's own step, or a scheduled
``examples/run_advancer.py``).

Run it as a Cloud Run job (``--tasks N --max-retries M``, docs/cloud-run.md), the command being
``python examples/cloud_run_job.py --provider claude --model claude-sonnet-4-5
gs://bucket/in/`` (or a FILE; one request per line: ``{"key": ..., "params": {...}}`` for Claude,
``{"key": ..., "contents": [...], "config": {...}}`` for Gemini). Outside Cloud Run (no task
variables) give the run id yourself, ``--run-id nightly-1``: it stages every file (or the whole
file) as a run of one process. ``--run-id`` wins over ``CLOUD_RUN_EXECUTION``.

Configuration comes from the same variables as the ``vertexbatch`` command; with
``VERTEXBATCH_VERTEX_ENDPOINT`` and ``STORAGE_EMULATOR_HOST`` set it talks to the local stack.

Install: ``pip install .`` in a clone (no package index serves vertexbatch). The image of the
repository's ``Dockerfile`` runs this file; docs/cloud-run.md deploys it as a Cloud Run job.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import vertexbatch as vb


def run_id(given: str | None = None, env: dict[str, str] | None = None) -> str:
    """The run every task of this execution stages into: ``--run-id`` if given, else the
    execution id."""
    if given:
        return given
    env = dict(os.environ) if env is None else env
    execution = env.get("CLOUD_RUN_EXECUTION")
    if not execution:
        raise SystemExit(
            "CLOUD_RUN_EXECUTION is not set (not a Cloud Run job task): give the run id with "
            "--run-id ID"
        )
    return execution


def read_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The file's request lines, streamed."""
    with path.open("rb") as f:
        for raw in f:
            if raw.strip():
                yield json.loads(raw)


def main(argv: Sequence[str] | None = None, client: vb.Client | None = None) -> int:
    """Stage this task's part of the run; print where the run stands as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", choices=["claude", "gemini"], required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--run-id", help="the run's id (default: CLOUD_RUN_EXECUTION)")
    parser.add_argument("requests", help="a gs://bucket/path/ prefix of JSONL files, or a file")
    args = parser.parse_args(argv)

    rid = run_id(args.run_id)
    task = vb.Task.from_env()  # None outside Cloud Run: every request, one process
    # A client handed in is the caller's to close; one made here is closed when done.
    with contextlib.nullcontext(client) if client else vb.Client.from_env() as used:
        if args.requests.startswith("gs://"):
            # One listing, sorted by name; this task's contiguous share of the files by bytes
            # (possibly none: the task then registers an empty part, and the run completes).
            files = vb.list_request_files(used, args.requests).share(task)
            if args.provider == "claude":
                run = used.run_claude(rid, args.model, files.claude_requests(), task=task)
            else:
                run = used.run_gemini(rid, args.model, files.gemini_requests(), task=task)
        else:
            lines = read_lines(Path(args.requests))
            part = lines if task is None else task.take(lines)  # every N-th line, streamed
            if args.provider == "claude":
                claude = (vb.ClaudeRequest(d["key"], d["params"]) for d in part)
                run = used.run_claude(rid, args.model, claude, task=task)
            else:
                gemini = (vb.GeminiRequest(d["key"], d["contents"], d.get("config")) for d in part)
                run = used.run_gemini(rid, args.model, gemini, task=task)
        summary = run.status()
    # Cloud Run sends stdout to Cloud Logging: one JSON line a log query can pick up.
    record = {
        "message": "run part staged",
        "run": rid,
        "task": None if task is None else task.index,
        "keys": summary.keys,
        "waiting_for_tasks": list(summary.waiting),
    }
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
