"""Where a results pass spends its CPU, layer by layer, against the naive reader.

    python -m benchmarks.results_cpu --n 100000 --repeats 3 [--providers claude,gemini]
    python -m benchmarks.results_cpu --n 100000 --profile claude [--sort tottime]

For each provider one LocalStack runs a job of N benchmark requests (``benchmarks.workload``) to
its end; then, in this process, each reader below makes a whole pass over the job's output, and
its CPU seconds (``time.process_time``, the least of the rounds, each round every layer once)
are printed with their ratio to the naive reader's. Each layer adds one piece of
``client.results`` to the one before it:

- ``download``: ``download_as_bytes`` each output file and ``splitlines`` (the naive reader
  without its parse);
- ``naive``: and ``json.loads`` each line (what ``benchmarks.run`` calls the naive baseline);
- ``lines``: ``Staging.read_lines`` over each file (ranged reads and the split into lines);
- ``parsed``: and ``_json.load_json`` of each line (the bounded parse of a whole line);
- ``fields``: ``Staging.read_line_blocks`` and the pass's own line reader
  (``_job.correlate.parsed_lines``: ``_rows.fast_path.row_fields`` of a row its id matches, its
  nesting counted once a range, ``load_json`` of any other), the key map read before the clock
  starts: what a pass now does for *parsed*;
- ``key map``: ``_staged.read_key_map`` alone (the staged key map, read once per pass);
- ``results``: ``client.results(job)`` whole: the key map, correlation, classification and
  telemetry.

The local GCS server's CPU is not counted (it is another process). ``--profile PROVIDER``
prints cProfile's top functions of one ``client.results`` pass instead.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

from benchmarks import workload  # noqa: E402
from vertexbatch._job.correlate import parsed_lines  # noqa: E402
from vertexbatch._json import load_json  # noqa: E402
from vertexbatch._staged.read import read_key_map  # noqa: E402

LAYERS = ("download", "naive", "lines", "parsed", "fields", "key map", "results")


def _readers(client: Any, job: Any) -> dict[str, Callable[[], int]]:
    staging = client._cloud.staging
    bucket, _, prefix = job.output_prefix.removeprefix("gs://").partition("/")

    def files() -> list[str]:
        names = [n for n, _, _ in staging.list_names(job.output_prefix)]
        return sorted(n for n in names if n.endswith(".jsonl"))

    def whole(parse: Callable[[bytes], Any]) -> Callable[[], int]:
        def read() -> int:
            count = 0
            store = staging._client
            for blob in store.list_blobs(bucket, prefix=prefix.rstrip("/") + "/"):
                if blob.name.endswith(".jsonl"):
                    for raw in blob.download_as_bytes().splitlines():
                        if raw:
                            parse(raw)
                            count += 1
            return count

        return read

    def lines() -> int:
        limit = staging.limits.output_line
        return sum(1 for uri in files() for raw in staging.read_lines(uri, max_line=limit) if raw)

    def parsed() -> int:
        limit = staging.limits.output_line
        count = 0
        for uri in files():
            for raw in staging.read_lines(uri, max_line=limit):
                if raw:
                    load_json(raw)
                    count += 1
        return count

    keys = read_key_map(staging, job)

    def fields() -> int:
        limit = staging.limits.output_line
        return sum(
            1
            for uri in files()
            for _ in parsed_lines(staging.read_line_blocks(uri, max_line=limit), keys)
        )

    def key_map() -> int:
        return len(read_key_map(staging, job))

    def results() -> int:
        return sum(1 for _ in client.results(job))

    return {
        "download": whole(len),
        "naive": whole(json.loads),
        "lines": lines,
        "parsed": parsed,
        "fields": fields,
        "key map": key_map,
        "results": results,
    }


def _job(stack: Any, client: Any, provider: str, n: int) -> Any:
    requests = workload.claude_requests(n) if provider == "claude" else workload.gemini_requests(n)
    submit = client.submit_claude if provider == "claude" else client.submit_gemini
    model = workload.CLAUDE_MODEL if provider == "claude" else workload.GEMINI_MODEL
    job = submit(f"results-cpu-{provider}-{n}", model, requests)
    stack.wait_job(job.name, timeout=1800)
    return job


def measure(provider: str, n: int, repeats: int) -> dict[str, float]:
    """CPU seconds of each layer for one provider's job of ``n`` requests."""
    from vertexbatch.emulator import LocalStack

    figures: dict[str, float] = {}
    with LocalStack() as stack:
        client = stack.client()
        job = _job(stack, client, provider, n)
        readers = _readers(client, job)
        for read in readers.values():
            read()  # warm: imports, the connection, first-call caches
        # Round by round, every layer in each: a slow spell of this shared machine falls on all.
        for rep in range(repeats):
            for name in LAYERS:
                start = time.process_time()
                count = readers[name]()
                seconds = time.process_time() - start
                if count != n:
                    raise RuntimeError(f"{name} read {count} rows of {n}")
                figures[name] = min(figures.get(name, seconds), seconds)
                print(
                    f"{provider} N={n} #{rep + 1} {name}: {seconds:.3f}s",
                    file=sys.stderr,
                    flush=True,
                )
    return figures


def profile(provider: str, n: int, sort: str) -> None:
    from vertexbatch.emulator import LocalStack

    with LocalStack() as stack:
        client = stack.client()
        job = _job(stack, client, provider, n)
        sum(1 for _ in client.results(job))  # warm
        profiler = cProfile.Profile()
        profiler.enable()
        sum(1 for _ in client.results(job))
        profiler.disable()
    pstats.Stats(profiler, stream=sys.stdout).sort_stats(sort).print_stats(30)


def render(n: int, figures: dict[str, dict[str, float]]) -> str:
    rows = [
        "| provider | " + " | ".join(LAYERS) + " | results / naive |",
        "|---" * (len(LAYERS) + 2) + "|",
    ]
    for provider, layers in figures.items():
        cells = [f"{layers[name]:.3f}s" for name in LAYERS]
        rows.append(
            f"| {provider} | "
            + " | ".join(cells)
            + f" | {layers['results'] / layers['naive']:.2f}x |"
        )
    title = f"CPU seconds of one results pass of {n:,} rows (the least of the rounds)"
    return title + "\n\n" + "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--providers", default="claude,gemini")
    parser.add_argument("--profile", choices=("claude", "gemini"))
    parser.add_argument("--sort", default="cumulative")
    args = parser.parse_args(argv)
    if args.n < 1 or args.repeats < 1:
        parser.error("--n and --repeats must be at least 1")
    if args.profile:
        profile(args.profile, args.n, args.sort)
        return 0
    providers = [p.strip() for p in args.providers.split(",") if p.strip()]
    for provider in providers:
        if provider not in ("claude", "gemini"):
            parser.error(f"--providers: {provider!r} is not claude or gemini")
    figures = {p: measure(p, args.n, args.repeats) for p in providers}
    print(render(args.n, figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
