"""Peak Python memory of one results pass of a ``cache=True`` job, against the same pass without.

    python -m benchmarks.cache_memory --n 20000 [--buffer BYTES]

On one LocalStack: N short Claude requests submitted twice (``cache=False``, then
``cache=True``), each job waited for, then one full ``results`` pass of each, traced with
``tracemalloc`` (Python allocations only). ``--buffer`` sets ``FILL_BUFFER`` (the most answer
text a pass holds before writing a part). Prints one line.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

CLAUDE = "claude-opus-5-5@default"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cache_memory")
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--buffer", type=int, default=0)
    args = parser.parse_args(argv)
    import vertexbatch as vb
    from vertexbatch._cache import fill as _cache_fill
    from vertexbatch.emulator import LocalStack

    if args.buffer:
        _cache_fill.FILL_BUFFER = args.buffer
    text = "Summarise item {i} of the ledger, please, in one line."
    requests = [
        vb.ClaudeRequest(
            f"k{i}", {"max_tokens": 64, "messages": [{"role": "user", "content": text.format(i=i)}]}
        )
        for i in range(args.n)
    ]
    figures = {}
    with LocalStack(claude_concurrency=1000) as stack:
        bucket = f"bench-mem-{uuid.uuid4().hex[:8]}"
        stack.create_bucket(bucket)
        client = stack.client(bucket=bucket, prefix="jobs", retry=vb.RetryPolicy.no_wait())
        for cache in (False, True):
            job = client.submit_claude(f"mem-{int(cache)}", CLAUDE, requests, cache=cache)
            stack.wait_job(job.name, timeout=600)
            tracemalloc.start()
            started = time.perf_counter()
            count = sum(1 for _ in client.results(job))
            seconds = time.perf_counter() - started
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            assert count == args.n
            figures[cache] = (peak / 2**20, seconds)
    print(
        f"N={args.n:,}, FILL_BUFFER={_cache_fill.FILL_BUFFER:,}: results pass peak "
        f"{figures[False][0]:.1f} MB ({figures[False][1]:.2f} s) without the cache, "
        f"{figures[True][0]:.1f} MB ({figures[True][1]:.2f} s) with cache=True"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
