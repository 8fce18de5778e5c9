"""A Cloud Run job that submits a batch from a JSONL file, safely retried.

Cloud Run retries a failed task with the same execution id (``CLOUD_RUN_EXECUTION``). Using it as
the submission id makes the retry adopt the job the first attempt created (or staged and never
created) instead of creating a second one, whatever happened to the first attempt.

With several tasks (``CLOUD_RUN_TASK_COUNT`` > 1) each task submits every N-th line under
``EXECUTION-tINDEX``.

Run it as a Cloud Run job with ``--max-retries`` above 0, the command being
``python examples/cloud_run_job.py --provider claude --model claude-opus-5-5@default FILE``
(one request per line: ``{"key": ..., "params": {...}}`` for Claude,
``{"key": ..., "contents": [...], "config": {...}}`` for Gemini).

Configuration comes from the same variables as the ``vertexbatch`` command; with
``VERTEXBATCH_VERTEX_ENDPOINT`` and ``STORAGE_EMULATOR_HOST`` set it talks to the local stack.
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


def submission_id(env: dict[str, str] | None = None) -> str:
    """The id of this task's submission: the execution id, plus the task index if several."""
    env = dict(os.environ) if env is None else env
    execution = env.get("CLOUD_RUN_EXECUTION")
    if not execution:
        raise SystemExit("CLOUD_RUN_EXECUTION is not set: run this as a Cloud Run job task")
    if int(env.get("CLOUD_RUN_TASK_COUNT", "1")) > 1:
        return f"{execution}-t{env.get('CLOUD_RUN_TASK_INDEX', '0')}"
    return execution


def read_lines(path: Path, task_index: int, task_count: int) -> Iterator[dict[str, Any]]:
    """This task's share of the file's request lines, streamed."""
    with path.open("rb") as f:
        for number, raw in enumerate(f):
            if raw.strip() and number % task_count == task_index:
                yield json.loads(raw)


def main(argv: Sequence[str] | None = None, client: vb.Client | None = None) -> int:
    """Submit this task's requests under the execution id; print the job as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", choices=["claude", "gemini"], required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("file", type=Path)
    args = parser.parse_args(argv)

    task_index = int(os.environ.get("CLOUD_RUN_TASK_INDEX", "0"))
    task_count = int(os.environ.get("CLOUD_RUN_TASK_COUNT", "1"))
    sid = submission_id()
    lines = read_lines(args.file, task_index, task_count)
    # A client handed in is the caller's to close; one made here is closed when done.
    with contextlib.nullcontext(client) if client else vb.Client.from_env() as used:
        if args.provider == "claude":
            claude = (vb.ClaudeRequest(d["key"], d["params"]) for d in lines)
            job = used.submit_claude(sid, args.model, claude)
        else:
            gemini = (vb.GeminiRequest(d["key"], d["contents"], d.get("config")) for d in lines)
            job = used.submit_gemini(sid, args.model, gemini)
    # Cloud Run sends stdout to Cloud Logging: one JSON line a log query can pick up.
    print(json.dumps({"message": "batch submitted", "job": job.to_dict()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
