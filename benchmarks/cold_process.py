"""The cold process: a submit and a results pass as a Cloud Run task or a scheduled function runs
them, each in a fresh interpreter, imports included, against the hand-written equivalent.

    python -m benchmarks.run --only cold --sizes 100000,200000 --repeats 3 --line-bytes 1200

For each provider and N, this process starts a LocalStack and runs every measurement in a fresh
child (``benchmarks.cold_child``, timed from before its first import of the code measured to the
end of the call; the stack never counts against it):

1. Staging, ``repeats`` rounds: the hand-written way (``json.dumps`` every line,
   ``upload_from_string``, one ``create_batch_prediction_job`` with aiplatform_v1, as vertexbatch
   creates its jobs) and ``submit_*`` from a generator, their order alternating. Jobs are held
   PENDING, so the local Vertex service does no work meanwhile; the last submit's job is then run.
2. vertexbatch's fixed per-call work, each once a round in a cold process of its own, timed alone
   after the imports and the client: the listing of the id's jobs and the manifest read (a
   submit's), the key map read (a results pass's).
3. Results, ``repeats`` rounds over that job's output: the hand-written way
   (``get_batch_prediction_job``, ``download_as_bytes``, ``json.loads`` every line) and
   iterating ``client.results(job)``.
4. The imports and clients alone, ``repeats`` rounds: google-cloud-storage and aiplatform_v1
   (the hand-written way's), against ``import vertexbatch`` and ``Client.for_endpoints``.

Before the first child, the library's bytecode is written (``compile_library``), as installing
it writes it: a cold process of an installed vertexbatch reads its modules' bytecode, as the
hand-written way reads Google's libraries'. Under ``PYTHONDONTWRITEBYTECODE`` no import writes
it, and every child would compile vertexbatch's 120-odd modules from source (about 0.4 s of CPU
a process, measured on the shared 2-core machine) where the other side compiles nothing.

Figures are medians; each ratio is taken within a round (the two sides back to back), then the
median over rounds.
"""

from __future__ import annotations

import compileall
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from benchmarks.children import Served, run_child

__all__ = ["CALLS_HEADERS", "HEADERS", "ColdCase", "compile_library", "measure", "render"]

ROOT = Path(__file__).resolve().parents[1]
MB = 1024 * 1024
# Issue 44's targets: at most the hand-written cold process's time at at most 0.35x its peak RSS.
TARGET = (1.0, 0.35)
STEPS = (("import + clients", "import"), ("staging", "stage"), ("results", "results"))
# Per-call work: (row name, child op, the step it is part of).
CALLS = (
    ("listing (an id's jobs)", "call_listing", "staging"),
    ("manifest read", "call_manifest", "staging"),
    ("key map read", "call_key_map", "results"),
)
HEADERS = [
    "provider", "N", "step", "hand s", "vb s", "vb/hand", "hand CPU s", "vb CPU s",
    "CPU vb/hand", "hand peak RSS MB", "vb peak RSS MB", "RSS vb/hand", "target", "verdict",
]  # fmt: skip
CALLS_HEADERS = ["provider", "N", "call", "in step", "s", "CPU s", "share of vb step CPU"]


@dataclass
class ColdCase:
    """Every round's figures of one provider and N, by child op."""

    provider: str
    n: int
    line_bytes: int
    rounds: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, result: dict[str, Any]) -> None:
        self.rounds.setdefault(result["op"], []).append(result)


def _log(message: str, out: TextIO) -> None:
    out.write(f"[cold {time.strftime('%H:%M:%S')}] {message}\n")
    out.flush()


def compile_library(root: Path = ROOT / "vertexbatch") -> None:
    """Write the bytecode of every module under ``root`` that lacks a current one, as installing
    the library does (pip compiles a wheel's modules), whatever ``PYTHONDONTWRITEBYTECODE`` says."""
    if not compileall.compile_dir(root, quiet=1):
        raise RuntimeError(f"could not write the bytecode of {root}: a module failed to compile")


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    return run_child("benchmarks.cold_child", spec, "cold measurement")


def _pair(step: str, rep: int) -> list[str]:
    ops = [f"{step}_hand", f"{step}_vb"]
    return ops if rep % 2 == 0 else ops[::-1]


def measure(
    stack: Any,
    provider: str,
    n: int,
    repeats: int,
    line_bytes: int,
    log: TextIO,
    *,
    smoke: bool = False,
) -> ColdCase:
    """Every cold figure of one provider and N on ``stack`` (a running LocalStack).

    ``smoke`` (``--smoke``, the tests' run): every step and call of every round, the same work
    on each side, but in one long-lived child a side (``Served``) instead of a fresh one a
    measurement, each side's imports measured first: only they are of a cold process, and no
    figure means anything."""
    case = ColdCase(provider, n, line_bytes)
    compile_library()  # as an install leaves it: the children read the library's bytecode
    bucket = f"cold-{provider}-{n}-{os.getpid()}"
    spec = {
        "provider": provider, "n": n, "line_bytes": line_bytes, "project": stack.project,
        "location": stack.location, "vertex_endpoint": stack.vertex_endpoint,
        "storage_endpoint": stack.storage_endpoint, "bucket": bucket, "prefix": "cold",
    }  # fmt: skip
    store, jobs = stack.storage_client(), stack.jobs_client()

    def delete(prefix: str) -> None:
        for blob in list(store.list_blobs(bucket, prefix=prefix)):
            blob.delete()

    def cancel(name: str) -> None:
        jobs.cancel_batch_prediction_job(name=name)
        stack.wait_job(name, timeout=60)

    sides: dict[str, Served] = {}  # --smoke: a long-lived child a side

    def child(spec: dict[str, Any]) -> dict[str, Any]:
        if not smoke:
            return _child(spec)
        return sides["hand" if spec["op"].endswith("_hand") else "vb"](spec)

    stack.create_bucket(bucket)
    try:
        for side in ("hand", "vb") if smoke else ():
            sides[side] = Served("benchmarks.cold_child", "cold measurement")
        job: dict[str, Any] = {}
        sub_id = ""
        for rep in range(repeats if smoke else 0):  # first in each side's child: still cold
            for op in _pair("import", rep):
                case.add(child({**spec, "op": op}))
        for rep in range(repeats):
            sub_id = f"cold-{provider}-{n}-r{rep}"
            hand_id = f"{sub_id}-hand"
            for name in (sub_id, hand_id):
                stack.faults.hold(display_name=name, state="PENDING")
            found: dict[str, dict[str, Any]] = {}
            for op in _pair("stage", rep):
                found[op] = child(
                    {**spec, "op": op, "id": hand_id if op == "stage_hand" else sub_id,
                     "object": f"hand/{hand_id}.jsonl"}
                )  # fmt: skip
                case.add(found[op])
            _log(f"{provider} N={n} staging #{rep + 1}: {_pair_words(found, 'stage')}", log)
            cancel(found["stage_hand"]["job_name"])
            stack.faults.release(hand_id)
            delete("hand/")
            job = found["stage_vb"]["job"]
            if rep < repeats - 1:
                cancel(job["name"])
                stack.faults.release(sub_id)
                delete(f"cold/{sub_id}/")
        stack.faults.release(sub_id)
        stack.wait_job(job["name"], timeout=1800)
        for rep in range(repeats):
            for _, op, _ in CALLS:
                case.add(child({**spec, "op": op, "id": sub_id, "job": job}))
            found = {}
            for op in _pair("results", rep):
                found[op] = child({**spec, "op": op, "job": job})
                if found[op]["lines"] != n:
                    raise RuntimeError(f"{op} read {found[op]['lines']} rows for {n} requests")
                case.add(found[op])
            _log(f"{provider} N={n} results #{rep + 1}: {_pair_words(found, 'results')}", log)
            for op in _pair("import", rep) if not smoke else ():
                case.add(child({**spec, "op": op}))
    finally:
        for served in sides.values():
            served.close()
        delete("")
        store.bucket(bucket).delete()
    return case


def _pair_words(found: dict[str, dict[str, Any]], step: str) -> str:
    hand, vb = found[f"{step}_hand"], found[f"{step}_vb"]
    return (
        f"hand {hand['seconds']:.2f}s {hand['cpu']:.2f} CPU s {hand['peak_rss'] / MB:.0f} MB, "
        f"vb {vb['seconds']:.2f}s {vb['cpu']:.2f} CPU s {vb['peak_rss'] / MB:.0f} MB"
    )


def _median(values: Sequence[float]) -> float:
    return statistics.median(values)


def _ratio(case: ColdCase, step: str, key: str) -> float:
    hand, vb = case.rounds[f"{step}_hand"], case.rounds[f"{step}_vb"]
    return _median([v[key] / h[key] for v, h in zip(vb, hand, strict=True)])


def rows(cases: Sequence[ColdCase]) -> list[list[str]]:
    """The main table's rows: each step of each case, hand-written against vertexbatch."""
    out = []
    for c in cases:
        for name, step in STEPS:
            hand, vb = c.rounds[f"{step}_hand"], c.rounds[f"{step}_vb"]
            wall, rss = _ratio(c, step, "seconds"), _ratio(c, step, "peak_rss")
            targeted = step != "import"
            out.append([
                c.provider,
                f"{c.n:,}",
                name,
                f"{_median([r['seconds'] for r in hand]):.2f}",
                f"{_median([r['seconds'] for r in vb]):.2f}",
                f"{wall:.2f}",
                f"{_median([r['cpu'] for r in hand]):.2f}",
                f"{_median([r['cpu'] for r in vb]):.2f}",
                f"{_ratio(c, step, 'cpu'):.2f}",
                f"{_median([r['peak_rss'] for r in hand]) / MB:.0f}",
                f"{_median([r['peak_rss'] for r in vb]) / MB:.0f}",
                f"{rss:.2f}",
                f"<={TARGET[0]}x time, <={TARGET[1]}x RSS" if targeted else "-",
                ("ok" if wall <= TARGET[0] and rss <= TARGET[1] else "MISS") if targeted else "-",
            ])  # fmt: skip
    return out


def call_rows(cases: Sequence[ColdCase]) -> list[list[str]]:
    """The per-call table: each call's own seconds in a cold process, and its share of the
    vertexbatch step's CPU (both medians)."""
    out = []
    for c in cases:
        for name, op, step in CALLS:
            runs = c.rounds[op]
            cpu = _median([r["call_cpu"] for r in runs])
            step_cpu = _median([r["cpu"] for r in c.rounds[f"{dict(STEPS)[step]}_vb"]])
            out.append([
                c.provider,
                f"{c.n:,}",
                name,
                step,
                f"{_median([r['call_seconds'] for r in runs]):.3f}",
                f"{cpu:.3f}",
                f"{cpu / step_cpu:.1%}",
            ])  # fmt: skip
    return out


def render(cases: Sequence[ColdCase], table: Callable[[list[str], list[list[str]]], str]) -> str:
    """The two tables, as Markdown; ``table`` draws a table from headers and rows."""
    repeats = len(cases[0].rounds["stage_vb"]) if cases else 0
    sizes = sorted({c.line_bytes for c in cases})
    return "\n".join(
        [
            f"Cold process: each step in a fresh interpreter, imports included, against the "
            f"hand-written way (requests of about {', '.join(map(str, sizes))} bytes a line; "
            f"median of {repeats} rounds, ratios within a round; peak RSS: each process's VmHWM; "
            "the library's bytecode written first, as an install writes it)",
            "",
            table(HEADERS, rows(cases)),
            "",
            "Cold process, vertexbatch's per-call work: each call alone in a fresh interpreter, "
            "after the imports and the client",
            "",
            table(CALLS_HEADERS, call_rows(cases)),
        ]
    )
