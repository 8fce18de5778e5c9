"""Benchmark vertexbatch against raw baselines on the local stack and print the tables.

    python -m benchmarks.run --sizes 10000,100000,200000 --repeats 3 \
        --providers claude,gemini,embeddings

For each provider (``embeddings``: Gemini embeddings, ``submit_embeddings`` and
``Result.embedding``, the baselines taking each row's vector out of the JSON) and N, this process
starts a LocalStack (fake-gcs-server and the local Vertex service; one at a time) and runs every
measurement in a fresh child process (``benchmarks.measure``) that only talks to the stack's
endpoints:

1. Staging, ``repeats`` rounds: the raw baseline (the same requests serialised with ``json`` and
   streamed as one object with google-cloud-storage), the naive baseline (every line
   ``json.dumps``-ed into one string, one ``upload_from_string``) and ``submit_*`` from a
   generator up to job creation (jobs are held PENDING, so the emulator does no work meanwhile).
   The order rotates between repeats.
2. Results, ``repeats`` rounds over the output the local Vertex service wrote for the last staged
   job (Vertex's ``predictions.jsonl`` format): the raw baseline downloads the file and
   ``json.loads`` every line, the naive one likewise with ``splitlines`` (the two differ only in
   how lines are split); vertexbatch iterates ``results()``.
3. Calls: Vertex calls (counted by the stack) and GCS requests (counted in the child's HTTP
   session) of one submit, one status and one results pass, also at N=1.

Then the cold start (``benchmarks.cold_start``, no stack): ``import vertexbatch`` and
``vertexbatch --help`` in fresh interpreters against the import of aiplatform's job service.
``--only import`` runs that alone (under a minute); ``--only batch`` leaves it out.
``--only stall`` runs ``benchmarks.loop_stall`` alone: the longest event-loop gap under
``client.aio`` during a ``--stall-size`` (default 20,000) request submit and results pass.
``--only cache`` runs the answer-cache and dedupe benchmark alone (``benchmarks.cache``).
``--only bigquery`` runs the BigQuery results benchmark alone (``benchmarks.bigquery_results``).
``--only cold`` runs the cold process alone (``benchmarks.cold_process``): each submit and results
pass in a fresh interpreter, imports included, against the hand-written way, with requests of
about ``--line-bytes`` (default 1,200) bytes a line.

``--baselines raw`` or ``--baselines naive`` measures one baseline only.

``--smoke`` is the tests' run (``integration_tests/test_benchmarks.py``): every table, row and cell
printed by the same code, its figures meaningless: each measurement runs in this process (the
stack's threads and this process's memory count against it) instead of a fresh child, the cold
start has no thrown-away round and runs each command in a fork of one process that imported
their libraries once (``cold_start.PRELOAD``), and the stack's start and stop are timed once.
With ``--only cold``: one long-lived child a side and provider, its imports measured first
(``cold_process.measure``); ``--only bigquery``: each reader in this process; ``--only tasks``:
the task processes forked from a preloaded forkserver. The header line says ``--smoke``.
Measure without it.

Figures are medians; ratios are taken pair by pair, then the median. Every object is deleted after
use and each (provider, N) gets a fresh stack and bucket, so fake-gcs-server's memory stays bounded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

from benchmarks import cold_start, workload  # noqa: E402  (after the path is set)
from benchmarks.children import run_child  # noqa: E402

__all__ = ["main", "parse_args", "render"]

MB = 1024 * 1024
TARGET_STAGING_RATIO = 1.3
TARGET_RESULTS_RATIO = 2.0
TARGET_RSS_MB = 150.0
TARGET_AT = 200_000
CALL_SIZES = (1,)
# Against the naive way (issue 16): time and peak RSS (VmHWM) ratios, vertexbatch / naive.
# Issue 30's targets (staging in parts): at most the naive time at at most 0.35x its peak RSS.
TARGET_NAIVE = {"staging": (1.0, 0.35), "results": (1.0, 0.35)}
BASELINES = ("raw", "naive")
# The cold process (--only cold) measures the chat providers only.
COLD_PROVIDERS = ("claude", "gemini")


@dataclass
class Case:
    """Every figure measured for one provider and N."""

    provider: str
    n: int
    stage_raw: list[dict[str, Any]] = field(default_factory=list)
    stage_naive: list[dict[str, Any]] = field(default_factory=list)
    stage_vb: list[dict[str, Any]] = field(default_factory=list)
    results_raw: list[dict[str, Any]] = field(default_factory=list)
    results_naive: list[dict[str, Any]] = field(default_factory=list)
    results_vb: list[dict[str, Any]] = field(default_factory=list)
    key_map: dict[str, Any] | None = None
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)  # op -> {vertex, gcs, ...}
    gcs_server_rss: int = 0
    timed: bool = True


def _log(message: str, out: TextIO) -> None:
    out.write(f"[bench {time.strftime('%H:%M:%S')}] {message}\n")
    out.flush()


def _child(spec: dict[str, Any], in_process: bool = False) -> dict[str, Any]:
    """The figures of one measurement: in a fresh child (a measurement), or in this process
    (``--smoke``: the same op and figures, through the same JSON as a child's, none of them
    meaningful)."""
    if not in_process:
        return run_child("benchmarks.measure", spec, "measurement")
    from benchmarks import measure

    result: dict[str, Any] = json.loads(json.dumps(measure.measure(spec)))
    return result


class Bench:
    """One provider and N on one LocalStack."""

    def __init__(
        self,
        stack: Any,
        provider: str,
        n: int,
        repeats: int,
        log: TextIO,
        baselines: Sequence[str] = BASELINES,
        in_process: bool = False,
    ) -> None:
        self.stack = stack
        self.in_process = in_process  # --smoke: each measurement in this process
        self.baselines = tuple(baselines)
        self.provider = provider
        self.n = n
        self.repeats = repeats
        self.log = log
        self.bucket = f"bench-{provider}-{n}-{os.getpid()}"
        self.prefix = "bench"
        self.gcs = stack.storage_client()
        self.jobs = stack.jobs_client()

    def spec(self, op: str, **extra: Any) -> dict[str, Any]:
        return {
            "op": op,
            "provider": self.provider,
            "n": self.n,
            "project": self.stack.project,
            "location": self.stack.location,
            "vertex_endpoint": self.stack.vertex_endpoint,
            "storage_endpoint": self.stack.storage_endpoint,
            "bucket": self.bucket,
            "prefix": self.prefix,
            "gcs_pid": self.stack.gcs_pid,
            **extra,
        }

    def counted(self, op: str, **extra: Any) -> dict[str, Any]:
        """Run one child, with the Vertex calls it made."""
        self.stack.reset_calls()
        result = _child(self.spec(op, **extra), self.in_process)
        result["vertex"] = dict(self.stack.calls())
        return result

    def delete(self, prefix: str) -> None:
        for blob in list(self.gcs.list_blobs(self.bucket, prefix=prefix)):
            blob.delete()

    def cancel(self, name: str) -> None:
        self.jobs.cancel_batch_prediction_job(name=name)

    def run(self, case: Case) -> None:
        self.stack.create_bucket(self.bucket)
        try:
            job = self._staging(case)
            self._results(case, job)
        finally:
            self.delete("")
            self.gcs.bucket(self.bucket).delete()
        case.gcs_server_rss = _process_rss(self.stack.gcs_pid)

    def _staging(self, case: Case) -> dict[str, Any]:
        job: dict[str, Any] = {}
        for rep in range(self.repeats):
            last = rep == self.repeats - 1
            sub_id = f"bench-{self.provider}-{self.n}-r{rep}"
            raw_object = f"raw/{sub_id}.jsonl"
            self.stack.faults.hold(display_name=sub_id, state="PENDING")
            pair: dict[str, dict[str, Any]] = {}
            for op in _rotated("stage", self.baselines, rep):
                pair[op] = self.counted(op, id=sub_id, object=raw_object)
                if op != "stage_vb":
                    self.delete(raw_object)
            lib = pair["stage_vb"]
            case.stage_vb.append(lib)
            for base in self.baselines:
                getattr(case, f"stage_{base}").append(pair[f"stage_{base}"])
            _log(f"{self.provider} N={self.n} staging #{rep + 1}: {_versus(pair)}", self.log)
            if last:
                job = lib["job"]
                case.calls["submit"] = {"vertex": lib["vertex"], **_gcs(lib)}
                self.stack.faults.release(sub_id)
            else:
                self.cancel(lib["job"]["name"])
                self.stack.wait_job(lib["job"]["name"], timeout=60)
                self.delete(f"{self.prefix}/{sub_id}/")
        start = time.perf_counter()
        self.stack.wait_job(job["name"], timeout=1800)
        _log(
            f"{self.provider} N={self.n}: the local Vertex service ran the job in "
            f"{time.perf_counter() - start:.1f}s",
            self.log,
        )
        return job

    def _results(self, case: Case, job: dict[str, Any]) -> None:
        status = self.counted("status", job=job)
        case.calls["status"] = {"vertex": status["vertex"], **_gcs(status)}
        case.key_map = _child(self.spec("key_map", job=job), self.in_process)
        for rep in range(self.repeats):
            ops = _rotated("results", self.baselines, rep)
            pair = {op: self.counted(op, job=job) for op in ops}
            lib = pair["results_vb"]
            case.results_vb.append(lib)
            for base in self.baselines:
                getattr(case, f"results_{base}").append(pair[f"results_{base}"])
            if lib["lines"] != self.n:
                raise RuntimeError(f"results yielded {lib['lines']} results for {self.n} keys")
            _same_values(self.provider, self.n, pair)
            _log(f"{self.provider} N={self.n} results #{rep + 1}: {_versus(pair)}", self.log)
        last = case.results_vb[-1]
        case.calls["results"] = {"vertex": last["vertex"], **_gcs(last)}


def _same_values(provider: str, n: int, pair: dict[str, dict[str, Any]]) -> None:
    """Embeddings: every side took out every vector, whole (the pair read the same output)."""
    if provider != "embeddings":
        return
    want = n * workload.EMBEDDING_DIMENSIONS
    got = {op: r.get("values", 0) for op, r in pair.items()}
    if any(v != want for v in got.values()):
        raise RuntimeError(f"vector values read {got}, expected {want:,} on every side")


def _rotated(step: str, baselines: Sequence[str], rep: int) -> list[str]:
    """The ops of one round, their order rotating between rounds."""
    ops = [f"{step}_{base}" for base in baselines] + [f"{step}_vb"]
    shift = rep % len(ops)
    return ops[shift:] + ops[:shift]


def _versus(pair: dict[str, dict[str, Any]]) -> str:
    """One round in words: vertexbatch against each baseline, time and peak RSS."""
    lib = next(r for op, r in pair.items() if op.endswith("_vb"))
    words = [f"vb {lib['seconds']:.2f}s RSS {lib['peak_rss'] / MB:.0f} MB"]
    for op, r in pair.items():
        if not op.endswith("_vb"):
            words.append(
                f"{op.split('_')[-1]} {r['seconds']:.2f}s ({lib['seconds'] / r['seconds']:.2f}x) "
                f"RSS {r['peak_rss'] / MB:.0f} MB ({lib['peak_rss'] / r['peak_rss']:.2f}x)"
            )
    return ", ".join(words)


def _gcs(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "gcs": result["gcs"],
        "read_bytes": result.get("read_bytes", {}),
        "read_requests": result.get("read_requests", {}),
        "object_sizes": result.get("object_sizes", {}),
    }


def _process_rss(pid: int) -> int:
    try:
        import psutil  # type: ignore[import-untyped,unused-ignore]

        return int(psutil.Process(pid).memory_info().rss)
    except Exception:
        return 0


# Rendering.


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _ratio(lib: list[dict[str, Any]], raw: list[dict[str, Any]], what: str = "seconds") -> float:
    return _median([a[what] / b[what] for a, b in zip(lib, raw, strict=True) if b[what] > 0])


def _cpu(lib: list[dict[str, Any]], raw: list[dict[str, Any]]) -> list[str]:
    """Client CPU seconds (the child's own threads) and their pairwise ratio."""
    return [
        f"{_median([r['cpu'] for r in raw]):.2f}",
        f"{_median([r['cpu'] for r in lib]):.2f}",
        f"{_ratio(lib, raw, 'cpu'):.2f}",
    ]


def _mb(value: float) -> str:
    return f"{value / MB:.0f}"


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISS"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), sep, *(line(r) for r in rows)])


STAGING_HEADERS = [
    "provider", "N", "input MB", "raw s", "vb s", "vb/raw", "raw CPU s", "vb CPU s", "CPU vb/raw",
    "raw RSS+ MB", "vb RSS+ MB", "target (<=1.3x, <=150 MB)",
]  # fmt: skip
RESULTS_HEADERS = [
    "provider", "N", "output MB", "raw s", "vb s", "raw lines/s", "vb lines/s", "vb/raw",
    "raw CPU s", "vb CPU s", "CPU vb/raw", "raw RSS+ MB", "vb RSS+ MB", "key map MB",
    "vb RSS+ beyond map MB", "target (<=2x, <=150 MB)",
]  # fmt: skip
NAIVE_HEADERS = [
    "provider", "N", "step", "naive s", "vb s", "vb/naive", "naive peak RSS MB",
    "vb peak RSS MB", "RSS vb/naive", "naive CPU s", "vb CPU s", "naive GCS CPU s",
    "vb GCS CPU s", "target", "verdict",
]  # fmt: skip
CALLS_HEADERS = ["provider", "N", "call", "Vertex", "GCS", "GCS by kind", "output read once"]


def _staging_rows(cases: list[Case]) -> list[list[str]]:
    rows = []
    for c in cases:
        ratio = _ratio(c.stage_vb, c.stage_raw)
        growth = _median([r["peak_growth"] for r in c.stage_vb])
        ok = ratio <= TARGET_STAGING_RATIO and growth / MB <= TARGET_RSS_MB
        rows.append([
            c.provider,
            f"{c.n:,}",
            _mb(_median([r["bytes"] for r in c.stage_raw])),
            f"{_median([r['seconds'] for r in c.stage_raw]):.2f}",
            f"{_median([r['seconds'] for r in c.stage_vb]):.2f}",
            f"{ratio:.2f}",
            *_cpu(c.stage_vb, c.stage_raw),
            _mb(_median([r["peak_growth"] for r in c.stage_raw])),
            _mb(growth),
            _verdict(ok),
        ])  # fmt: skip
    return rows


def _results_rows(cases: list[Case]) -> list[list[str]]:
    rows = []
    for c in cases:
        raw_s = _median([r["seconds"] for r in c.results_raw])
        vb_s = _median([r["seconds"] for r in c.results_vb])
        ratio = _ratio(c.results_vb, c.results_raw)
        growth = _median([r["peak_growth"] for r in c.results_vb])
        key_map = float(c.key_map["retained"]) if c.key_map else 0.0
        beyond = max(growth - key_map, 0.0)
        out_bytes = sum(
            size
            for name, size in c.results_raw[-1].get("object_sizes", {}).items()
            if name.endswith(".jsonl")
        )
        ok = ratio <= TARGET_RESULTS_RATIO and beyond / MB <= TARGET_RSS_MB
        rows.append([
            c.provider,
            f"{c.n:,}",
            _mb(out_bytes),
            f"{raw_s:.2f}",
            f"{vb_s:.2f}",
            f"{c.n / raw_s:,.0f}",
            f"{c.n / vb_s:,.0f}",
            f"{ratio:.2f}",
            *_cpu(c.results_vb, c.results_raw),
            _mb(_median([r["peak_growth"] for r in c.results_raw])),
            _mb(growth),
            _mb(key_map),
            _mb(beyond),
            _verdict(ok),
        ])  # fmt: skip
    return rows


def _naive_rows(cases: list[Case]) -> list[list[str]]:
    rows = []
    for c in cases:
        for step, naive, lib in (
            ("staging", c.stage_naive, c.stage_vb),
            ("results", c.results_naive, c.results_vb),
        ):
            if not naive:
                continue
            time_ratio = _ratio(lib, naive)
            rss_ratio = _ratio(lib, naive, "peak_rss")
            max_time, max_rss = TARGET_NAIVE[step]
            rows.append([
                c.provider,
                f"{c.n:,}",
                step,
                f"{_median([r['seconds'] for r in naive]):.2f}",
                f"{_median([r['seconds'] for r in lib]):.2f}",
                f"{time_ratio:.2f}",
                _mb(_median([r["peak_rss"] for r in naive])),
                _mb(_median([r["peak_rss"] for r in lib])),
                f"{rss_ratio:.2f}",
                f"{_median([r['cpu'] for r in naive]):.2f}",
                f"{_median([r['cpu'] for r in lib]):.2f}",
                f"{_median([r['gcs_cpu'] for r in naive]):.2f}",
                f"{_median([r['gcs_cpu'] for r in lib]):.2f}",
                f"<={max_time}x time, <={max_rss}x RSS",
                _verdict(time_ratio <= max_time and rss_ratio <= max_rss),
            ])  # fmt: skip
    return rows


def _read_once(call: dict[str, Any]) -> str:
    sizes = call.get("object_sizes", {})
    read = call.get("read_bytes", {})
    if not read:
        return "-"
    outputs = [name for name in read if "/output/" in name]
    parts = []
    for name in sorted(read):
        leaf = name.rsplit("/", 1)[-1]
        times = read[name] / sizes[name] if sizes.get(name) else float("nan")
        parts.append(f"{leaf} {times:.2f}x in {call['read_requests'].get(name, 0)}")
    once = all(abs(read[n] - sizes.get(n, -1)) == 0 for n in outputs) if outputs else False
    return ("yes: " if once else "NO: ") + ", ".join(parts)


def _by_kind(counts: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def _calls_rows(cases: list[Case]) -> list[list[str]]:
    rows = []
    for c in sorted(cases, key=lambda c: (c.provider, c.n)):
        for op in ("submit", "status", "results"):
            call = c.calls.get(op)
            if call is None:
                continue
            vertex = Counter(call["vertex"])
            gcs = Counter(call["gcs"])
            rows.append([
                c.provider,
                f"{c.n:,}",
                op,
                f"{sum(vertex.values())} ({_by_kind(vertex)})",
                str(sum(gcs.values())),
                _by_kind(gcs) or "-",
                _read_once(call) if op == "results" else "-",
            ])  # fmt: skip
    return rows


def render(cases: list[Case]) -> str:
    """The tables, as Markdown."""
    timed = [c for c in cases if c.timed]
    parts = []
    if any(c.stage_raw for c in timed):
        parts += [
            "Staging: submit_* from a generator up to job creation, vs json + one streamed upload",
            "",
            _table(STAGING_HEADERS, _staging_rows(timed)),
            "",
            "Results: iterating results() over Vertex-format output, vs download + json.loads per "
            "line",
            "",
            _table(RESULTS_HEADERS, _results_rows(timed)),
            "",
        ]
    if any(c.stage_naive for c in timed):
        parts += [
            "Against the naive way: json.dumps every line into one string + upload_from_string; "
            "download_as_bytes + splitlines + json.loads (embeddings: and each row's vector "
            "values; vertexbatch reads Result.embedding) (peak RSS: each process's VmHWM; CPU: "
            "the measuring process's, and fake-gcs-server's meanwhile)",
            "",
            _table(NAIVE_HEADERS, _naive_rows(timed)),
            "",
        ]
    parts += [
        "Calls: one submit, one status, one full results pass",
        "",
        _table(CALLS_HEADERS, _calls_rows(cases)),
    ]
    return "\n".join(parts)


def _sizes(text: str, *, allow_none: bool = False) -> list[int]:
    try:
        sizes = [int(s.strip().replace("_", "")) for s in text.split(",") if s.strip()]
    except ValueError:
        sizes = [0]
    if (not sizes and not allow_none) or any(s < 1 for s in sizes):
        raise argparse.ArgumentTypeError("sizes are positive integers, comma-separated")
    return sizes


def _baselines(text: str) -> list[str]:
    names = [b.strip() for b in text.split(",") if b.strip()]
    if not names or any(b not in BASELINES for b in names):
        raise argparse.ArgumentTypeError("baselines are raw and/or naive")
    return [b for b in BASELINES if b in names]


def _call_sizes(text: str) -> list[int]:
    return _sizes(text, allow_none=True)


def _providers(text: str) -> list[str]:
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names or any(p not in workload.PROVIDERS for p in names):
        raise argparse.ArgumentTypeError(
            f"providers are one or more of {', '.join(workload.PROVIDERS)}, comma-separated"
        )
    return names


def stack_lifetime(repeats: int) -> tuple[float, float]:
    """Median seconds to start a LocalStack (both servers ready) and to stop it."""
    from vertexbatch.emulator import LocalStack

    starts: list[float] = []
    stops: list[float] = []
    for _ in range(repeats):
        began = time.perf_counter()
        with LocalStack():
            ready = time.perf_counter()
        starts.append(ready - began)
        stops.append(time.perf_counter() - ready)
    return _median(starts), _median(stops)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command's arguments, checked, ``providers`` resolved (``--only cold``: the chat ones)."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--sizes", type=_sizes, default=[10_000, 100_000, 200_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--providers", type=_providers, default=None,
        help=f"default {','.join(workload.PROVIDERS)} ({','.join(COLD_PROVIDERS)} for --only cold)",
    )  # fmt: skip
    parser.add_argument(
        "--call-sizes", type=_call_sizes, default=list(CALL_SIZES),
        help='extra N counted for calls only (default 1; "" for none)',
    )  # fmt: skip
    parser.add_argument(
        "--baselines", type=_baselines, default=list(BASELINES),
        help="raw (streamed) and/or naive (one string, one download); default both",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write every raw figure here")
    parser.add_argument(
        "--only", choices=["import", "batch", "stall", "cache", "bigquery", "tasks", "cold"],
        help="import: the cold start alone; batch: staging, results and calls alone; "
        "stall: the event loop's longest gap under client.aio alone; "
        "cache: the answer cache and dedupe alone (benchmarks.cache, Claude, each size); "
        "bigquery: results of a BigQuery output table against list_rows and a query "
        "(benchmarks.bigquery_results, each size); "
        "tasks: one run staged from 1 and 2 task processes (benchmarks.run_tasks, each size); "
        "cold: submit and results in fresh interpreters, imports included, against the "
        "hand-written way (benchmarks.cold_process, each provider and size)",
    )  # fmt: skip
    parser.add_argument(
        "--line-bytes", type=int, default=1200,
        help="--only cold: requests of about this many bytes a JSONL line (default 1200)",
    )  # fmt: skip
    parser.add_argument("--stall-size", type=int, default=20_000)
    parser.add_argument(
        "--import-repeats", type=int, default=7,
        help="rounds of the cold start (default 7, after one thrown away)",
    )  # fmt: skip
    parser.add_argument(
        "--smoke", action="store_true",
        help="the tests' run: every table and cell, no figure meaningful (measurements in this "
        "process, no thrown-away cold-start round and its commands forked from one preloaded "
        "process, the stack's lifetime timed once; --only cold: one child a side and provider; "
        "--only bigquery: readers in this process; --only tasks: tasks from a forkserver)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.import_repeats < 1:
        parser.error("--repeats and --import-repeats must be >= 1")
    if args.providers is None:
        args.providers = list(COLD_PROVIDERS if args.only == "cold" else workload.PROVIDERS)
    elif args.only == "cold" and not set(args.providers) <= set(COLD_PROVIDERS):
        parser.error(
            f"--only cold measures {' and '.join(COLD_PROVIDERS)} only, not "
            f"{', '.join(p for p in args.providers if p not in COLD_PROVIDERS)}"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    if args.only == "stall":
        from benchmarks import loop_stall  # imports vertexbatch: only the runs that use it

        print(f"# python -m benchmarks.run --only stall --stall-size {args.stall_size}")
        print(loop_stall.run(args.stall_size))
        return 0
    if args.only == "cache":
        return _cache(args.sizes, args.repeats)
    if args.only == "bigquery":
        return _bigquery(args.sizes, args.repeats, args.smoke)
    if args.only == "cold":
        return _cold(args)
    if args.only == "tasks":
        from benchmarks import run_tasks

        for n in args.sizes:
            run_tasks.main(
                ["--n", str(n), "--tasks", "1,2", "--repeats", str(args.repeats)]
                + (["--smoke"] if args.smoke else [])
            )
        return 0
    started = time.perf_counter()
    load_before = os.getloadavg()
    cases = [] if args.only == "import" else _batch(args)
    load_after = os.getloadavg()
    cold = None if args.only == "batch" else _cold_start(args.import_repeats, args.smoke)
    elapsed = time.perf_counter() - started
    words = [] if args.only == "import" else [
        f"--sizes {','.join(str(n) for n in args.sizes)}",
        f"--repeats {args.repeats}",
        f"--providers {','.join(args.providers)}",
    ]  # fmt: skip
    if cases and args.baselines != list(BASELINES):
        words.append(f"--baselines {','.join(args.baselines)}")
    if args.only:
        words.append(f"--only {args.only}")
    if cold is not None:
        words.append(f"--import-repeats {args.import_repeats}")
    if args.smoke:
        words.append("--smoke")
    command = " ".join(["python -m benchmarks.run", *words])
    print(f"# {command}  ({elapsed:.0f}s, {os.cpu_count()} CPUs, Python {sys.version.split()[0]})")
    # A shared machine's other work moves every wall-time ratio: say how loaded it was.
    print(
        "# load average (1, 5, 15 min): before "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after "
        + ", ".join(f"{x:.2f}" for x in load_after)
    )
    if cases:
        print()
        print(render(cases))
        lifetimes = 1 if args.smoke else max(args.repeats, 3)
        start, stop = stack_lifetime(lifetimes)
        print()
        print(
            f"Local stack: start {start:.2f} s, stop {stop:.2f} s "
            f"(median of {lifetimes}; target well under 1 s)"
        )
    if cold is not None:
        print()
        print(cold_start.render(cold, _table))
    if args.json:
        raw: dict[str, Any] = {"cases": [c.__dict__ for c in cases]}
        if cold is not None:
            raw["cold_start"] = [f.__dict__ for f in cold]
        args.json.write_text(json.dumps(raw, indent=1, default=str))
    return 0


def _cache(sizes: list[int], repeats: int) -> int:
    """The answer cache and dedupe figures (``benchmarks.cache``), one stack per size."""
    from benchmarks import cache

    for n in sizes:
        started = time.perf_counter()
        figures = cache.measure_cache(n, repeats)
        print(
            f"# python -m benchmarks.run --only cache --sizes {n} --repeats {repeats}  "
            f"({time.perf_counter() - started:.0f}s, {os.cpu_count()} CPUs)"
        )
        print()
        print(cache.render(figures))
        print()
    return 0


def _bigquery(sizes: list[int], repeats: int, smoke: bool = False) -> int:
    """The BigQuery results figures (``benchmarks.bigquery_results``), one stack per size
    (``smoke``: each reader in this process)."""
    from benchmarks import bigquery_results

    for n in sizes:
        started = time.perf_counter()
        figures = bigquery_results.measure(n, repeats, smoke=smoke)
        print(
            f"# python -m benchmarks.run --only bigquery --sizes {n} --repeats {repeats}"
            f"{' --smoke' if smoke else ''}  "
            f"({time.perf_counter() - started:.0f}s, {os.cpu_count()} CPUs)"
        )
        print()
        print(bigquery_results.render(figures))
        print()
    return 0


def _cold(args: argparse.Namespace) -> int:
    """The cold-process figures (``benchmarks.cold_process``), one LocalStack per case."""
    from benchmarks import cold_process
    from vertexbatch.emulator import LocalStack

    if args.line_bytes < 100:
        raise SystemExit("--line-bytes must be at least 100")
    started = time.perf_counter()
    load_before = os.getloadavg()
    cases = []
    for provider in args.providers:
        for n in args.sizes:
            with LocalStack(claude_concurrency=1000) as stack:
                cases.append(
                    cold_process.measure(
                        stack,
                        provider,
                        n,
                        args.repeats,
                        args.line_bytes,
                        sys.stderr,
                        smoke=args.smoke,
                    )
                )
    words = [
        f"--sizes {','.join(str(n) for n in args.sizes)}",
        f"--repeats {args.repeats}",
        f"--providers {','.join(args.providers)}",
        f"--line-bytes {args.line_bytes}",
        *(["--smoke"] if args.smoke else []),
    ]
    print(
        f"# python -m benchmarks.run --only cold {' '.join(words)}  "
        f"({time.perf_counter() - started:.0f}s, {os.cpu_count()} CPUs, "
        f"Python {sys.version.split()[0]})"
    )
    print(
        "# load average (1, 5, 15 min): before "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after "
        + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    print()
    print(cold_process.render(cases, _table))
    if args.json:
        args.json.write_text(json.dumps([c.__dict__ for c in cases], indent=1, default=str))
    return 0


def _cold_start(repeats: int, smoke: bool = False) -> list[cold_start.Figures]:
    _log(f"cold start: {repeats} rounds of {len(cold_start.COMMANDS)} commands", sys.stderr)
    figures = cold_start.measure_apart(repeats, smoke=smoke)
    for name, (ratio, met) in cold_start.verdicts(figures).items():
        _log(f"cold start: {name} {ratio:.2f}x the floor ({'MET' if met else 'MISS'})", sys.stderr)
    return figures


def _batch(args: argparse.Namespace) -> list[Case]:
    """Staging, results and calls for every provider and size, one LocalStack per case."""
    from vertexbatch.emulator import LocalStack

    cases: list[Case] = []
    plan = [(n, False) for n in args.call_sizes if n not in args.sizes]
    plan += [(n, True) for n in args.sizes]
    for provider in args.providers:
        for n, timed in plan:
            # One stack per case, one at a time: fake-gcs-server's memory backend keeps the memory
            # of deleted objects (3.5 GB RSS after two 200k cases, every object deleted).
            with LocalStack(claude_concurrency=1000) as stack:
                case = Case(provider, n, timed=timed)
                repeats = args.repeats if timed else 1
                Bench(stack, provider, n, repeats, sys.stderr, args.baselines, args.smoke).run(case)
            cases.append(case)
            _log(
                f"{provider} N={n} done; fake-gcs-server RSS at the end "
                f"{case.gcs_server_rss / MB:.0f} MB",
                sys.stderr,
            )
    return cases


if __name__ == "__main__":
    raise SystemExit(main())
