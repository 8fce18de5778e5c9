"""One results pass by two vertexbatch trees, in one process, over one job, rounds alternating.

    git worktree add /tmp/before HEAD~1
    python -m benchmarks.results_ab --base /tmp/before --n 100000 --rounds 8 [--providers ...]

A change to the results path moves its CPU by a few percent; this shared machine moves from one
run to the next by more. Here both sides read the same job of N benchmark requests
(``benchmarks.workload``) on one LocalStack in the same process, round by round and in turn
(the first side alternating), so a slow spell falls on both. ``--base`` is another checkout of
the repository (its ``vertexbatch`` is loaded under another name); this tree is the other side.
Printed: the least and the median CPU seconds (``time.process_time``) of each side's passes,
and this tree's least over the base's.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

from benchmarks.results_cpu import _job  # noqa: E402


def _load_base(tree: Path) -> Any:
    """The base tree's ``vertexbatch`` package, as module ``vertexbatch_base``."""
    package = tree / "vertexbatch"
    spec = importlib.util.spec_from_file_location(
        "vertexbatch_base", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    if spec is None or spec.loader is None or not (package / "__init__.py").is_file():
        raise SystemExit(f"--base {tree}: no vertexbatch package there")
    module = importlib.util.module_from_spec(spec)
    sys.modules["vertexbatch_base"] = module
    spec.loader.exec_module(module)
    return module


def measure(base_tree: Path, provider: str, n: int, rounds: int) -> dict[str, list[float]]:
    """CPU seconds of each side's passes over one job of ``n`` requests."""
    from vertexbatch.emulator import LocalStack

    base = _load_base(base_tree)
    with LocalStack() as stack:
        client = stack.client()
        job = _job(stack, client, provider, n)
        other = base.Client.for_endpoints(
            vertex_endpoint=stack.vertex_endpoint,
            storage_endpoint=stack.storage_endpoint,
            project=stack.project,
            location=stack.location,
            bucket="vertexbatch-local",
        )
        sides = {"base": (other, base.Job.from_dict(job.to_dict())), "this": (client, job)}
        for reader, each in sides.values():
            sum(1 for _ in reader.results(each))  # warm
        seconds: dict[str, list[float]] = {"base": [], "this": []}
        for round_ in range(rounds):
            order = ["base", "this"] if round_ % 2 == 0 else ["this", "base"]
            for side in order:
                reader, each = sides[side]
                start = time.process_time()
                count = sum(1 for _ in reader.results(each))
                seconds[side].append(time.process_time() - start)
                if count != n:
                    raise RuntimeError(f"{side} read {count} results of {n}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--providers", default="claude,gemini")
    args = parser.parse_args(argv)
    providers = [p.strip() for p in args.providers.split(",") if p.strip()]
    for provider in providers:
        if provider not in ("claude", "gemini"):
            parser.error(f"--providers: {provider!r} is not claude or gemini")
    if args.n < 1 or args.rounds < 1:
        parser.error("--n and --rounds must be at least 1")
    print(f"CPU seconds of one results pass of {args.n:,} rows, {args.rounds} rounds each\n")
    print("| provider | base least | base median | this least | this median | this / base |")
    print("|---|---|---|---|---|---|")
    for provider in providers:
        s = measure(args.base, provider, args.n, args.rounds)
        least = {side: min(values) for side, values in s.items()}
        print(
            f"| {provider} | {least['base']:.3f}s | {statistics.median(s['base']):.3f}s | "
            f"{least['this']:.3f}s | {statistics.median(s['this']):.3f}s | "
            f"{least['this'] / least['base']:.2f}x |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
