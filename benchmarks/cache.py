"""Benchmark the answer cache and dedupe against staging the same requests, in one run.

    python -m benchmarks.cache --n 100000 --repeats 3
    python -m benchmarks.run --only cache --sizes 100000 --repeats 3     (the same, from run.py)

On one LocalStack, for N Claude requests of the benchmark workload (1-2 KB lines):

1. Fill: N ok answers written to the cache through ``AnswerCache.fill`` (the path ``results``
   takes once a ``cache=True`` job is read to the end): 256 create-only shard objects.
2. ``repeats`` pairs, order alternating: *staging* — ``submit_claude`` of the N requests up to
   job creation (the job is held PENDING) — and *lookup* — ``AnswerCache.lookup`` of the N
   requests' exact digests against the N entries (one listing, the shards read in
   parallel). The ratio lookup / staging is the issue's target (at most 1.0).
3. The same lookup against the same N entries filled by ``WRITERS`` jobs instead of one (up to
   256 objects each): a lookup reads every object of the shards it needs; then a lookup that
   may write (a submit's, on a clock past ``COMPACT_MARGIN``) merges each shard's objects into
   one, and the same lookup again after the merge.
4. Once: ``submit_claude(..., cache=True)`` of the same N requests, answered whole from the
   cache (no job): building the lines, the lookup, staging the cached answers and the key map.
5. Dedupe: N requests of which only N/10 are distinct, ``submit_claude(..., dedupe=True)``
   against the plain submit of the same requests (lines staged and seconds).

Figures are wall seconds, medians of the repeats; the table goes to stdout.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

from benchmarks import workload  # noqa: E402  (after the path is set, run as a script)

__all__ = ["main", "measure_cache"]

TARGET_LOOKUP_RATIO = 1.0
# Jobs that fill the cache in the many-writers row.
WRITERS = 40


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = action()
    return time.perf_counter() - started, value


def _lookups(cache: Any, digests: list[str], repeats: int) -> list[float]:
    """Seconds of ``repeats`` lookups of every digest, each finding them all."""
    seconds = []
    for _ in range(repeats):
        took, found = _timed(lambda: cache.lookup(digests))
        assert len(found) == len(digests), len(found)
        seconds.append(took)
    return seconds


def _log(message: str) -> None:
    sys.stderr.write(f"[bench cache {time.strftime('%H:%M:%S')}] {message}\n")
    sys.stderr.flush()


def _answer(i: int) -> dict[str, Any]:
    return {
        "id": f"msg_{i:07d}",
        "type": "message",
        "role": "assistant",
        "model": workload.CLAUDE_MODEL,
        "content": [{"type": "text", "text": f"Answer {i}: the supplier owes the customer."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 400, "output_tokens": 12},
    }


def _repeated(n: int, distinct: int) -> Iterator[Any]:
    """``n`` requests with distinct keys cycling through ``distinct`` request bodies."""
    import vertexbatch as vb

    for i in range(n):
        _, params = workload.request_parts("claude", i % distinct)
        yield vb.ClaudeRequest(f"rep-{i:07d}", params)


def _many_writers(stack: Any, bucket: str, digests: list[str], repeats: int) -> dict[str, Any]:
    """The same entries filled by ``WRITERS`` jobs (up to 256 objects each) and looked up: a
    lookup reads every object of the shards it needs, so it grows with the jobs that filled
    the cache (nothing compacts it), not with the requests."""
    import vertexbatch as vb
    from vertexbatch._cache.store import COMPACT_MARGIN, AnswerCache

    client = stack.client(bucket=bucket, prefix="bench-writers", retry=vb.RetryPolicy.no_wait())
    staging = client._cloud.staging
    cache = AnswerCache(staging, "anthropic", workload.CLAUDE_MODEL)
    per = -(-len(digests) // WRITERS)
    for w in range(WRITERS):
        part = digests[w * per : (w + 1) * per]
        cache.fill(f"bench-fill-{w}", {d: _answer(w * per + i) for i, d in enumerate(part)})
    objects = len(staging.list_names(cache.uri + "/"))
    lookups = _lookups(cache, digests, repeats)
    _log(f"{WRITERS} writers, {objects} objects: lookup {statistics.median(lookups):.2f} s")
    # A submit's lookup may merge a shard's objects; only objects older than the margin are
    # merged, so it runs on a clock past it (as a submit made later would).
    later = AnswerCache(
        staging,
        "anthropic",
        workload.CLAUDE_MODEL,
        clock=lambda: time.time() + COMPACT_MARGIN + 60,
    )
    merge, found = _timed(lambda: later.lookup(digests, compact=True))
    assert len(found) == len(digests), len(found)
    merged = _lookups(later, digests, repeats)
    _log(f"merging lookup {merge:.2f} s, then {statistics.median(merged):.2f} s")
    return {
        "writers": WRITERS,
        "objects": objects,
        "lookup": lookups,
        "merge": merge,
        "merged": merged,
    }


def measure_cache(n: int, repeats: int) -> dict[str, Any]:
    """Every figure of the cache benchmark for ``n`` requests (see the module docstring)."""
    import vertexbatch as vb
    from vertexbatch._cache.store import AnswerCache
    from vertexbatch._requests.dedupe import exact_digest
    from vertexbatch._requests.lines import claude_line
    from vertexbatch.emulator import LocalStack

    figures: dict[str, Any] = {"n": n, "repeats": repeats, "staging": [], "lookup": []}
    with LocalStack(claude_concurrency=1000) as stack:
        bucket = f"bench-cache-{uuid.uuid4().hex[:8]}"
        stack.create_bucket(bucket)
        stack.faults.hold(state="PENDING")  # staging is timed up to job creation only
        client = stack.client(bucket=bucket, prefix="bench", retry=vb.RetryPolicy.no_wait())
        staging = client._cloud.staging
        digests = [exact_digest(claude_line(r).data)[1] for r in workload.claude_requests(n)]
        cache = AnswerCache(staging, "anthropic", workload.CLAUDE_MODEL)
        fill, written = _timed(
            lambda: cache.fill("bench-fill", {d: _answer(i) for i, d in enumerate(digests)})
        )
        figures["fill"] = fill
        _log(f"filled {written} entries in {fill:.2f} s")
        for repeat in range(repeats):

            def stage(repeat: int = repeat) -> float:
                seconds, _ = _timed(
                    lambda: client.submit_claude(
                        f"stage-{repeat}", workload.CLAUDE_MODEL, workload.claude_requests(n)
                    )
                )
                return seconds

            def lookup() -> float:
                seconds, found = _timed(lambda: cache.lookup(digests))
                assert len(found) == n, len(found)
                return seconds

            order = [("staging", stage), ("lookup", lookup)]
            for name, action in order if repeat % 2 == 0 else reversed(order):
                figures[name].append(action())
            _log(
                f"repeat {repeat + 1}: staging {figures['staging'][-1]:.2f} s, "
                f"lookup {figures['lookup'][-1]:.2f} s"
            )
        figures["writers"] = _many_writers(stack, bucket, digests, repeats)
        seconds, job = _timed(
            lambda: client.submit_claude(
                "all-cached", workload.CLAUDE_MODEL, workload.claude_requests(n), cache=True
            )
        )
        assert job.name == "cached:all-cached"
        figures["submit_all_cached"] = seconds
        _log(f"submit answered whole from the cache: {seconds:.2f} s")
        distinct = max(1, n // 10)
        plain, _ = _timed(
            lambda: client.submit_claude("dup-plain", workload.CLAUDE_MODEL, _repeated(n, distinct))
        )
        deduped, job = _timed(
            lambda: client.submit_claude(
                "dup-dedupe", workload.CLAUDE_MODEL, _repeated(n, distinct), dedupe=True
            )
        )
        figures["dedupe"] = {"distinct": distinct, "plain": plain, "dedupe": deduped}
        _log(f"dedupe: plain {plain:.2f} s, dedupe {deduped:.2f} s ({distinct} distinct)")
        stack.faults.release()
    return figures


def render(figures: dict[str, Any]) -> str:
    """The Markdown table of one run."""
    n = figures["n"]
    stage = statistics.median(figures["staging"])
    look = statistics.median(figures["lookup"])
    ratios = [lk / st for lk, st in zip(figures["lookup"], figures["staging"], strict=True)]
    ratio = statistics.median(ratios)
    verdict = "MET" if ratio <= TARGET_LOOKUP_RATIO else "MISSED"
    dedupe = figures["dedupe"]
    spread = figures["writers"]
    rows = [
        ("fill the cache with N entries (256 shard objects)", f"{figures['fill']:.2f} s", ""),
        ("staging N requests (submit up to job creation)", f"{stage:.2f} s", "1.00x"),
        (
            "lookup of N requests against N entries",
            f"{look:.2f} s",
            f"{ratio:.2f}x (target <= {TARGET_LOOKUP_RATIO:.1f}: {verdict})",
        ),
        (
            f"the same lookup, the N entries filled by {spread['writers']} jobs "
            f"({spread['objects']:,} objects)",
            f"{statistics.median(spread['lookup']):.2f} s",
            f"{statistics.median(spread['lookup']) / stage:.2f}x",
        ),
        (
            "the first lookup that may write (a submit's): merges each shard's objects",
            f"{spread['merge']:.2f} s",
            f"{spread['merge'] / stage:.2f}x",
        ),
        (
            "the same lookup after the merge",
            f"{statistics.median(spread['merged']):.2f} s",
            f"{statistics.median(spread['merged']) / stage:.2f}x",
        ),
        (
            "submit(cache=True), every request cached (no job)",
            f"{figures['submit_all_cached']:.2f} s",
            f"{figures['submit_all_cached'] / stage:.2f}x",
        ),
        (
            f"submit, N keys / {dedupe['distinct']:,} distinct requests",
            f"{dedupe['plain']:.2f} s",
            "",
        ),
        (
            f"submit(dedupe=True), the same: {dedupe['distinct']:,} lines staged",
            f"{dedupe['dedupe']:.2f} s",
            f"{dedupe['dedupe'] / dedupe['plain']:.2f}x the plain submit",
        ),
    ]
    lines = [
        f"Answer cache and dedupe, N = {n:,} Claude requests (median of {figures['repeats']})",
        "",
        "| what | seconds | ratio to staging |",
        "|---|---|---|",
    ]
    lines += [f"| {what} | {seconds} | {ratio_text} |" for what, seconds, ratio_text in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.cache", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.n < 10 or args.repeats < 1:
        parser.error("--n must be >= 10 and --repeats >= 1")
    started = time.perf_counter()
    figures = measure_cache(args.n, args.repeats)
    print(
        f"# python -m benchmarks.cache --n {args.n} --repeats {args.repeats}  "
        f"({time.perf_counter() - started:.0f}s)"
    )
    print()
    print(render(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
