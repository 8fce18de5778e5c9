"""Benchmark reading a BigQuery-sink job's results against what a user writes by hand.

    python -m benchmarks.bigquery_results --n 100000 --repeats 3
    python -m benchmarks.run --only bigquery --sizes 100000 --repeats 3   (the same, from run.py)

On one ``LocalStack(bigquery=True)``, for N Claude requests of the benchmark workload:

1. The job: ``submit_claude(..., dest="bq://P.D.out")`` stages the N requests (input, key map,
   manifest in GCS) and creates the job, which the stack runs as Vertex does: its local model
   answers every line and its runner writes the N output rows (``custom_id``, ``request``,
   ``response``, ``status``, ``processed_time``) into the named table with one load job at the
   end (``emulator/_bq_run.py``). The job must end SUCCEEDED and report its table in
   ``outputInfo.bigqueryOutputDataset`` and ``outputInfo.bigqueryOutputTable``, the table the
   hand-written readers read, and the table must hold N rows.
2. ``repeats`` rounds, the order rotating, each reader in a fresh child process (its peak RSS,
   ``VmHWM``, reset just before it reads, is its own): **vertexbatch**, ``client.results(job)``
   (the Storage Read API, each row correlated and classified); **list_rows**,
   ``bigquery.Client.list_rows(table)`` then ``json.loads`` of each row's text cells (what the
   client leaves as text); **query**, ``SELECT custom_id, response, status`` then the same.
   Each counts its answers (vertexbatch: results with outcome ``ok`` and a text; by hand: rows
   with ``status`` "" and a text block in ``response``) and their text's characters, and the
   benchmark stops unless every reader has N answers and the same characters: the readers do
   the same work.

Figures are medians of the repeats: wall and CPU seconds, and the child's peak RSS and its
growth while reading; ratios are vertexbatch's against each hand-written reader, pair by pair,
then the median. The table goes to stdout, progress to stderr.

``smoke`` (``python -m benchmarks.run --only bigquery --smoke``, the tests' run): every reader
reads every row through the same code, with the same checks, but in this process (the stack's
environment set while it reads) instead of a fresh child: the same table, no figure meaningful.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

from benchmarks import workload  # noqa: E402  (after the path is set, run as a script)

__all__ = ["READERS", "main", "measure", "render"]

READERS = ("vertexbatch", "list_rows", "query")
MB = 1024 * 1024
JOB_ID = "bq-bench"


def _log(message: str) -> None:
    sys.stderr.write(f"[bench bigquery {time.strftime('%H:%M:%S')}] {message}\n")
    sys.stderr.flush()


def _job(stack: Any, bucket: str, n: int) -> tuple[str, float]:
    """Stage N requests to a named table and let the stack run the job to its end, as Vertex
    does. Returns the output table's ``P.D.T``, as the job reports it, and the job's seconds
    (staging, running and writing the rows)."""
    from google.cloud import bigquery

    bq = stack.bigquery_client()
    dataset = bigquery.Dataset(f"{stack.project}.bench_{uuid.uuid4().hex[:8]}")
    dataset.location = stack.location
    bq.create_dataset(dataset)
    stack.create_bucket(bucket)
    started = time.perf_counter()
    with stack.client(bucket=bucket, prefix="bench") as client:
        _log(f"staging {n:,} requests")
        named = f"{dataset.project}.{dataset.dataset_id}.out"
        job = client.submit_claude(
            JOB_ID, workload.CLAUDE_MODEL, workload.claude_requests(n), dest=f"bq://{named}"
        )
        _log("the stack runs the job")
        done = stack.wait_job(job.name, timeout=3600)
    seconds = time.perf_counter() - started
    table = _reported_table(done)
    rows = bq.get_table(table).num_rows
    bq.close()
    if table != named or rows != n:
        raise RuntimeError(f"the job wrote {rows} rows to {table}, not {n} to {named}")
    return table, seconds


def _reported_table(job: dict[str, Any]) -> str:
    """The output table a finished job reports (``outputInfo``), as ``P.D.T``; an error naming
    the state unless the job SUCCEEDED and reports one."""
    info = job.get("outputInfo", {})
    dataset = info.get("bigqueryOutputDataset", "")
    name = info.get("bigqueryOutputTable", "")
    if job.get("state") != "JOB_STATE_SUCCEEDED" or not dataset.startswith("bq://") or not name:
        raise RuntimeError(
            f"the benchmark's job ended {job.get('state')} with outputInfo {sorted(info)}: "
            "it must end JOB_STATE_SUCCEEDED and report its BigQuery output table"
        )
    return f"{dataset.removeprefix('bq://')}.{name}"


# -- a reader, in its own process ---------------------------------------------------------------


def _text(value: Any) -> Any:
    """What a hand-written reader does with a cell: ``json.loads`` it when it is JSON text."""
    return json.loads(value) if isinstance(value, str) and value[:1] in ('"', "{", "[") else value


def _answer_text(cells: dict[str, Any]) -> str:
    """A hand-written reader's answer: the text blocks of a row's ``response`` when its
    ``status`` is "" (an answered row), else ""."""
    response = cells.get("response")
    if cells.get("status") != "" or not isinstance(response, dict):
        return ""
    blocks = response.get("content") or []
    return "".join(b.get("text", "") for b in blocks if b.get("type") == "text")


def _read(reader: str, table: str) -> tuple[int, int]:
    """Read every row of the job's results as ``reader`` does: the answers with a text, and
    the characters of their texts."""
    answers = chars = 0
    if reader == "vertexbatch":
        import vertexbatch as vb

        with vb.Client.from_env() as client:
            job = client.find(JOB_ID)
            assert job is not None
            for result in client.results(job):
                if result.outcome == "ok" and result.text:
                    answers += 1
                    chars += len(result.text)
        return answers, chars
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import bigquery

    bq = bigquery.Client(
        project=os.environ["GOOGLE_CLOUD_PROJECT"],
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
    )
    try:
        if reader == "list_rows":
            rows = bq.list_rows(table)
        else:
            rows = bq.query(f"SELECT custom_id, response, status FROM `{table}`").result()
        for row in rows:
            text = _answer_text({name: _text(value) for name, value in row.items()})
            if text:
                answers += 1
                chars += len(text)
        return answers, chars
    finally:
        bq.close()


def _figures(reader: str, table: str) -> dict[str, Any]:
    """One reader's rows and figures, in this process (a child's, or a smoke run's)."""
    from benchmarks.measure import _peak, _reset_peak, _rss

    # Each reader's imports before the peak is reset (vertexbatch's of the bigquery extra are
    # lazy, at the first read of a sink: taken here so that only reading is measured).
    if reader == "vertexbatch":
        import pyarrow  # noqa: F401
        from google.cloud import bigquery_storage_v1  # noqa: F401

        import vertexbatch  # noqa: F401
    else:
        from google.cloud import bigquery  # noqa: F401
    before = _rss()
    reset = _reset_peak()
    started, cpu = time.perf_counter(), time.process_time()
    answers, chars = _read(reader, table)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = _peak()
    return {
        "answers": answers,
        "chars": chars,
        "seconds": seconds,
        "cpu": cpu,
        "peak": peak,
        "growth": peak - before,
        "reset": reset,
    }


def _in_this_process(reader: str, table: str, env: dict[str, str]) -> dict[str, Any]:
    """A smoke run's reader: ``_figures`` here, with the stack's environment set meanwhile."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        figures: dict[str, Any] = json.loads(json.dumps(_figures(reader, table)))
        return figures
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _measured(reader: str, table: str, env: dict[str, str], smoke: bool) -> dict[str, Any]:
    if smoke:
        return _in_this_process(reader, table, env)
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.bigquery_results", "--child", reader, "--table", table],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"reader {reader} failed: {proc.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return figures


def measure(n: int, repeats: int, *, smoke: bool = False) -> dict[str, Any]:
    """Every figure for N rows: the load's seconds and each reader's rounds (``smoke``: each
    reader in this process, the module docstring says why)."""
    from vertexbatch.emulator import LocalStack

    bucket = f"bench-bq-{uuid.uuid4().hex[:8]}"
    rounds: dict[str, list[dict[str, Any]]] = {reader: [] for reader in READERS}
    with LocalStack(bigquery=True) as stack:
        table, job_seconds = _job(stack, bucket, n)
        env = stack.environment(bucket, prefix="bench")
        chars: int | None = None
        for repeat in range(repeats):
            order = READERS[repeat % len(READERS) :] + READERS[: repeat % len(READERS)]
            for reader in order:
                figures = _measured(reader, table, env, smoke)
                chars = _check(reader, figures, n, chars)
                rounds[reader].append(figures)
                _log(f"N={n:,} round {repeat + 1}: {reader} {figures['seconds']:.2f} s")
    return {
        "n": n,
        "repeats": repeats,
        "job_seconds": job_seconds,
        "chars": chars,
        "rounds": rounds,
    }


def _check(reader: str, figures: dict[str, Any], n: int, chars: int | None) -> int:
    """Every reader does the same work: N answers, and the same characters of answer text as
    the readers before it. Returns the characters."""
    if figures["answers"] != n:
        raise RuntimeError(f"reader {reader} yielded {figures['answers']} answers, not {n}")
    if chars is not None and figures["chars"] != chars:
        raise RuntimeError(
            f"reader {reader} read {figures['chars']} characters of answer text, not {chars}"
        )
    seen: int = figures["chars"]
    return seen


def render(figures: dict[str, Any]) -> str:
    """The table of one measurement, Markdown."""
    rounds = figures["rounds"]
    mine = rounds["vertexbatch"]

    def median(reader: str, name: str) -> float:
        return statistics.median(r[name] for r in rounds[reader])

    def ratio(reader: str, name: str) -> str:
        if reader == "vertexbatch":
            return "1.00x"
        pairs = [m[name] / o[name] for m, o in zip(mine, rounds[reader], strict=True) if o[name]]
        return f"{statistics.median(pairs):.2f}x" if pairs else "n/a"

    n = figures["n"]
    lines = [
        f"Results of a {n:,}-row BigQuery output table (the stack's job, staged, run and "
        f"written: {figures['job_seconds']:.1f} s), medians of {figures['repeats']}, each "
        f"reader in its own process; every reader yielded {n:,} answers, "
        f"{figures['chars']:,} characters of text:",
        "",
        "| reader | seconds | CPU seconds | rows/s | peak RSS | RSS growth | "
        "vertexbatch time / this | vertexbatch CPU / this | vertexbatch peak / this |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    names = {
        "vertexbatch": "vertexbatch `client.results(job)` (Storage Read API, correlated)",
        "list_rows": "by hand: `list_rows`, `json.loads` per cell",
        "query": "by hand: a query, `json.loads` per cell",
    }
    for reader in READERS:
        seconds = median(reader, "seconds")
        lines.append(
            f"| {names[reader]} | {seconds:.2f} s | {median(reader, 'cpu'):.2f} s | "
            f"{n / seconds:,.0f} | {median(reader, 'peak') / MB:.0f} MB | "
            f"{median(reader, 'growth') / MB:.0f} MB | {ratio(reader, 'seconds')} | "
            f"{ratio(reader, 'cpu')} | {ratio(reader, 'peak')} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", choices=READERS, help=argparse.SUPPRESS)
    parser.add_argument("--table", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_figures(args.child, args.table)))
        return 0
    if args.n < 1 or args.repeats < 1:
        parser.error("--n and --repeats must be >= 1")
    started = time.perf_counter()
    figures = measure(args.n, args.repeats)
    print(
        f"# python -m benchmarks.bigquery_results --n {args.n} --repeats {args.repeats}  "
        f"({time.perf_counter() - started:.0f}s, {os.cpu_count()} CPUs)"
    )
    print()
    print(render(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
