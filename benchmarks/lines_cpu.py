"""Per-line CPU of building staged lines, with no I/O, against ``json.dumps`` of the same lines.

    python -m benchmarks.lines_cpu --n 100000 --repeats 3 [--profile claude|gemini]

For each provider: N requests of the benchmark workload are made first (not timed), then turned
into staged lines as ``submit`` does (``_staged_lines``: type and key checks, the line, the field
types across lines) and counted into a ``Tally`` (key record and MD5s), against ``json.dumps`` of
the same N line objects (``workload.raw_lines``, made first too); then both again with the
requests and the line objects made as they are consumed (as a submit of a generator, and as the
brief of issue 16 measured). Figures are CPU seconds (``time.process_time``), the best of the
repeats, and the ratios to ``json.dumps``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

from benchmarks import workload  # noqa: E402
from vertexbatch._providers import by_command  # noqa: E402
from vertexbatch._rules import DEFAULT_LIMITS  # noqa: E402
from vertexbatch._staged.manifest import Tally  # noqa: E402
from vertexbatch._submission.lines import staged_lines  # noqa: E402


def _stage(provider: str, requests: Iterable[Any]) -> Tally:
    row = by_command(provider)
    tally = Tally(DEFAULT_LIMITS)
    for line in staged_lines(requests, row.request, row.line):
        tally.add(line, line.key_record())
    return tally


def _dumps(lines: Iterable[Any]) -> int:
    size = 0
    for line in lines:
        size += len(json.dumps(line))
    return size


def _best(run: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def _made_first(provider: str, n: int, repeats: int) -> tuple[float, float]:
    """CPU seconds of the lines and of ``json.dumps``, their inputs made before timing."""
    maker = workload.claude_requests if provider == "claude" else workload.gemini_requests
    requests = list(maker(n))
    raw = list(workload.raw_lines(provider, n))
    _stage(provider, requests[:1000])  # imports and caches warmed, not timed
    return _best(lambda: _stage(provider, requests), repeats), _best(lambda: _dumps(raw), repeats)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--providers", default="claude,gemini")
    parser.add_argument("--profile", choices=["claude", "gemini"])
    args = parser.parse_args(argv)
    if args.profile:
        maker = workload.claude_requests if args.profile == "claude" else workload.gemini_requests
        requests = list(maker(args.n))
        profile = cProfile.Profile()
        profile.runcall(_stage, args.profile, requests)
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
        return
    print(
        "| provider | N | lines (s) | json.dumps (s) | ratio | made + lines (s) "
        "| made + json.dumps (s) | ratio |\n|---|---|---|---|---|---|---|---|"
    )
    for provider in args.providers.split(","):
        maker = workload.claude_requests if provider == "claude" else workload.gemini_requests
        ours, base = _made_first(provider, args.n, args.repeats)
        made = _best(lambda: _stage(provider, maker(args.n)), args.repeats)  # noqa: B023
        naive = _best(
            lambda: _dumps(workload.raw_lines(provider, args.n)),  # noqa: B023
            args.repeats,
        )
        print(
            f"| {provider} | {args.n:,} | {ours:.3f} | {base:.3f} | {ours / base:.2f}x "
            f"| {made:.3f} | {naive:.3f} | {made / naive:.2f}x |"
        )


if __name__ == "__main__":
    main()
