"""What a progress callback costs a submit: ``python -m benchmarks.progress --n 200000``.

The same ``submit_claude`` (or ``--provider gemini``) of N requests, staged on the local stack
with and without ``progress=`` (a callback that keeps every ``Progress`` it is given), in
alternating order, each in a fresh child process (``benchmarks.measure``'s ``stage_vb``, as
``benchmarks.run`` measures staging). Prints the medians, their ratio, and how often the
callback was called (at most ten times a second, then twice at the end).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

from benchmarks.run import Bench


def main(argv: list[str] | None = None) -> int:
    from vertexbatch.emulator import LocalStack

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--provider", choices=("claude", "gemini"), default="claude")
    args = parser.parse_args(argv)
    figures: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    with LocalStack() as stack:
        bench = Bench(stack, args.provider, args.n, args.repeats, sys.stderr)
        stack.create_bucket(bench.bucket)
        try:
            for rep in range(args.repeats):
                order = (False, True) if rep % 2 == 0 else (True, False)
                for with_progress in order:
                    sub_id = f"progress-{int(with_progress)}-{rep}-{os.getpid()}"
                    stack.faults.hold(display_name=sub_id, state="PENDING")
                    result = bench.counted("stage_vb", id=sub_id, progress=with_progress)
                    figures[with_progress].append(result)
                    sys.stderr.write(
                        f"[progress {time.strftime('%H:%M:%S')}] #{rep + 1} "
                        f"{'with' if with_progress else 'without'}: {result['seconds']:.2f}s "
                        f"({result['cpu']:.2f}s CPU, {result['progress_calls']} calls)\n"
                    )
                    bench.cancel(result["job"]["name"])
                    stack.wait_job(result["job"]["name"], timeout=60)
                    bench.delete(f"{bench.prefix}/{sub_id}/")
        finally:
            bench.delete("")
            bench.gcs.bucket(bench.bucket).delete()

    def median(with_progress: bool, what: str) -> float:
        return statistics.median(r[what] for r in figures[with_progress])

    print(f"| {args.provider} N={args.n:,} | seconds | CPU seconds | callback calls |")
    print("|---|---|---|---|")
    for with_progress in (False, True):
        calls = statistics.median(r["progress_calls"] for r in figures[with_progress])
        print(
            f"| {'with' if with_progress else 'without'} progress= | "
            f"{median(with_progress, 'seconds'):.2f} | {median(with_progress, 'cpu'):.2f} | "
            f"{calls:.0f} |"
        )
    print(
        f"| ratio (with / without) | {median(True, 'seconds') / median(False, 'seconds'):.3f} | "
        f"{median(True, 'cpu') / median(False, 'cpu'):.3f} | |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
