"""Benchmark staging one run from 1 and from 2 task processes over the same requests.

    python -m benchmarks.run_tasks --n 200000 --tasks 1,2 --repeats 1
    python -m benchmarks.run --only tasks --sizes 200000 --repeats 1     (the same, from run.py)

On one LocalStack, for N Claude requests of the benchmark workload (1-2 KB lines): for each
task count K, K spawned processes each build their part of the N requests (``Task.bounds``)
and, released together by a barrier, call ``run_claude(RUN, ..., task=Task(i, K))`` with the
default shard size: stage their shards, write their keys file and record, and take the first
step (the last to register makes the ledger after the keys check, and creates the first jobs,
held PENDING). The wall time runs from the barrier to the last process's return. The machine's
cores bound the ratio: on 2 cores, 2 tasks share them with the local stack.

``--smoke`` (``python -m benchmarks.run --only tasks --smoke``, the tests' run): the task
processes are forked from one forkserver that imported the client's libraries once
(``PRELOAD``), instead of spawned interpreters that each import them; the same staging from the
barrier on, no figure meaningful.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import multiprocessing.forkserver
import os
import queue
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

from benchmarks import workload  # noqa: E402  (after the path is set, run as a script)

__all__ = ["HEADERS", "main", "measure", "render"]

HEADERS = ["tasks", "requests", "wall s", "requests/s", "slowest task s", "vs 1 task"]
# --smoke: what a task process imports, imported once by the forkserver its tasks fork from.
PRELOAD = [
    "benchmarks.run_tasks", "vertexbatch", "google.cloud.storage", "google.cloud.aiplatform_v1",
]  # fmt: skip


def _task(endpoints: dict[str, str], run_id: str, n: int, index: int, count: int, barrier: Any,
          out: Any) -> None:  # fmt: skip
    """One task process: build its part, wait for the others, stage it; report its seconds."""
    import vertexbatch as vb

    task = vb.Task(index, count)
    start, stop = task.bounds(n)
    part = [vb.ClaudeRequest(*workload.request_parts("claude", i)) for i in range(start, stop)]
    client = vb.Client.for_endpoints(
        vertex_endpoint=endpoints["vertex"],
        storage_endpoint=endpoints["storage"],
        project=endpoints["project"],
        location=endpoints["location"],
        bucket=endpoints["bucket"],
        prefix="bench",
        retry=vb.RetryPolicy.no_wait(20),
    )
    barrier.wait(timeout=600)
    began = time.time()
    client.run_claude(run_id, workload.CLAUDE_MODEL, part, task=task)
    out.put((began, time.time()))


def _spans(out: Any, procs: list[Any], timeout: float = 1800) -> list[tuple[float, float]]:
    """Each task's (start, end) from ``out``; a task process that died first ends the wait at
    once (the others, left at the barrier or waiting for it, are killed)."""
    spans: list[tuple[float, float]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(spans) < len(procs):
            try:
                spans.append(out.get(timeout=0.5))
            except queue.Empty:
                failed = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                if failed:
                    raise SystemExit(f"a task process failed (exit {failed[0]})") from None
                if time.monotonic() > deadline:
                    raise SystemExit(f"the task processes took over {timeout:.0f} s") from None
    except BaseException:
        for p in procs:
            p.kill()
            p.join(timeout=60)
        raise
    return spans


def measure(n: int, counts: list[int], repeats: int, smoke: bool = False) -> list[dict[str, Any]]:
    """Wall seconds (median of ``repeats``) of staging N requests from each task count (``smoke``:
    task processes forked from a forkserver, the module docstring says why)."""
    from vertexbatch.emulator import LocalStack

    rows: list[dict[str, Any]] = []
    spawn = multiprocessing.get_context("forkserver" if smoke else "spawn")
    if smoke:
        spawn.set_forkserver_preload(PRELOAD)
    with contextlib.ExitStack() as cleanup, LocalStack(claude_concurrency=1000) as stack:
        if smoke:  # the forkserver waited for at the end: its CPU and its tasks' count as ours
            cleanup.callback(multiprocessing.forkserver._forkserver._stop)  # type: ignore[attr-defined]
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        stack.create_bucket(bucket)
        stack.faults.hold(state="PENDING")  # timed up to job creation only
        endpoints = {
            "vertex": stack.vertex_endpoint,
            "storage": stack.storage_endpoint,
            "project": stack.project,
            "location": stack.location,
            "bucket": bucket,
        }
        for count in counts:
            walls, slowest = [], []
            for _ in range(repeats):
                run_id = f"tasks-{count}-{uuid.uuid4().hex[:8]}"
                barrier, out = spawn.Barrier(count), spawn.Queue()
                procs = [
                    spawn.Process(target=_task, args=(endpoints, run_id, n, i, count, barrier, out))
                    for i in range(count)
                ]
                for p in procs:
                    p.start()
                spans = _spans(out, procs)
                for p in procs:
                    p.join(timeout=60)
                    if p.exitcode != 0:
                        raise SystemExit(f"a task process failed (exit {p.exitcode})")
                walls.append(max(e for _, e in spans) - min(b for b, _ in spans))
                slowest.append(max(e - b for b, e in spans))
                print(f"tasks={count} N={n}: {walls[-1]:.1f}s", file=sys.stderr)
            rows.append(
                {
                    "tasks": count,
                    "requests": n,
                    "wall": statistics.median(walls),
                    "slowest": statistics.median(slowest),
                }
            )
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    one = next((r["wall"] for r in rows if r["tasks"] == 1), None)
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for r in rows:
        ratio = f"{one / r['wall']:.2f}x" if one else "-"
        cells = [
            str(r["tasks"]),
            f"{r['requests']:,}",
            f"{r['wall']:.1f}",
            f"{r['requests'] / r['wall']:,.0f}",
            f"{r['slowest']:.1f}",
            ratio,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _counts(text: str) -> list[int]:
    counts = [int(x) for x in text.split(",") if x]
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("task counts are whole numbers of at least 1")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run_tasks", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--tasks", type=_counts, default=[1, 2])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--smoke", action="store_true",
        help="the tests' run: task processes forked from a forkserver, no figure meaningful",
    )  # fmt: skip
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows = measure(args.n, args.tasks, args.repeats, args.smoke)
    print(
        f"# python -m benchmarks.run_tasks --n {args.n} --tasks "
        f"{','.join(map(str, args.tasks))} --repeats {args.repeats}"
        f"{' --smoke' if args.smoke else ''}  "
        f"({time.perf_counter() - started:.0f}s, {os.cpu_count()} CPUs)"
    )
    print()
    print(render(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
