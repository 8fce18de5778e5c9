"""A Cloud Run job that starts a run from a JSONL file of Claude requests.

A run shards the requests past one job's limits and retries each key up to ``--attempts`` times;
re-running this job with the same run id rejoins the run instead of starting another. Drive it
to the end with ``examples/run_advancer.py`` on a Cloud Scheduler trigger, or with
``vertexbatch run advance RUN_ID``.

Usage: ``python examples/nightly_run.py --model claude-sonnet-4-5 RUN_ID FILE``
(one request per line: ``{"key": ..., "params": {...}}``).

Install: ``pip install .`` in a clone (no package index serves vertexbatch).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import vertexbatch as vb


def read_requests(path: Path) -> Iterator[vb.ClaudeRequest]:
    """Stream the file's requests: a run never needs them all in memory."""
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                data = json.loads(line)
                yield vb.ClaudeRequest(data["key"], data["params"])


def main(argv: Sequence[str] | None = None, client: vb.Client | None = None) -> int:
    """Start (or rejoin) the run and print its first summary as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--shard-size", type=int, default=100_000)
    parser.add_argument("--attempts", type=int, default=3)
    parser.add_argument("run_id")
    parser.add_argument("file", type=Path)
    args = parser.parse_args(argv)

    if client is None:  # ours: closed when done (one handed in is the caller's)
        with vb.Client.from_env() as own:
            return start(own, args)
    return start(client, args)


def start(client: vb.Client, args: argparse.Namespace) -> int:
    run = client.run_claude(
        args.run_id,
        args.model,
        read_requests(args.file),
        shard_size=args.shard_size,
        max_attempts=args.attempts,
    )
    summary = run.status()
    print(
        json.dumps({"run": run.id, "shards": len(run.shards), "outcomes": dict(summary.outcomes)})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
