"""Benchmark reading a BigQuery-sink job's results against what a user writes by hand.

    python -m benchmarks.bigquery_results --n 100000 --repeats 3
    python -m benchmarks.run --only bigquery --sizes 100000 --repeats 3   (the same, from run.py)

On one ``LocalStack(bigquery=True)``, for N Claude requests of the benchmark workload:

1. The job: ``submit_claude(..., dest="bq://P.D.out")`` stages the N requests (input, key map,
   manifest in GCS) and creates the job, held RUNNING by the stack and then cancelled, so it is
   terminal and reports its output table having written none of it.
2. The table: N rows shaped as the local Vertex writes Claude output rows (``custom_id`` JSON,
   ``request`` JSON, ``response`` JSON, ``status`` "", ``processed_time``), one for each staged
   line (its own ``custom_id`` and request), written by one BigQuery load job of
   newline-delimited JSON into the job's table (the emulator's columns), in seconds.
3. ``repeats`` rounds, the order rotating, each reader in a fresh child process (its peak RSS,
   ``VmHWM``, reset just before it reads, is its own): **vertexbatch**, ``client.results(job)``
   (the Storage Read API, each row correlated and classified); **list_rows**,
   ``bigquery.Client.list_rows(table)`` then ``json.loads`` of each row's text cells (what the
   client leaves as text); **query**, ``SELECT custom_id, response, status`` then the same. Each
   counts its rows, so every reader is checked to see all N.

Figures are medians of the repeats: wall seconds, and the child's peak RSS and its growth while
reading; ratios are vertexbatch's against each hand-written reader, pair by pair, then the
median. The table goes to stdout, progress to stderr.

``smoke`` (``python -m benchmarks.run --only bigquery --smoke``, the tests' run): every reader
reads every row through the same code, but in this process (the stack's environment set while
it reads) instead of a fresh child: the same table, no figure meaningful.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
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
COLUMNS = (
    ("custom_id", "JSON"),
    ("request", "JSON"),
    ("response", "JSON"),
    ("status", "STRING"),
    ("processed_time", "TIMESTAMP"),
)


def _log(message: str) -> None:
    sys.stderr.write(f"[bench bigquery {time.strftime('%H:%M:%S')}] {message}\n")
    sys.stderr.flush()


def _answer(i: int) -> dict[str, Any]:
    """A Claude answer as the local model writes one (the response cell)."""
    return {
        "id": f"msg_vrtx_{i:07d}",
        "type": "message",
        "role": "assistant",
        "model": workload.CLAUDE_MODEL,
        "content": [{"type": "text", "text": f"Answer {i}: the supplier owes the customer."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 400, "output_tokens": 12},
    }


def _job_and_table(stack: Any, bucket: str, n: int) -> tuple[str, float]:
    """Stage N requests to a named table, end the job, and load N output rows into the table.
    Returns the table's ``P.D.T`` and the load's seconds."""
    from google.cloud import bigquery

    bq = stack.bigquery_client()
    dataset = bigquery.Dataset(f"{stack.project}.bench_{uuid.uuid4().hex[:8]}")
    dataset.location = stack.location
    bq.create_dataset(dataset)
    table = f"{dataset.project}.{dataset.dataset_id}.out"
    stack.create_bucket(bucket)
    stack.faults.hold(display_name=JOB_ID, state="RUNNING")
    with stack.client(bucket=bucket, prefix="bench") as client:
        _log(f"staging {n:,} requests")
        job = client.submit_claude(
            JOB_ID, workload.CLAUDE_MODEL, workload.claude_requests(n), dest=f"bq://{table}"
        )
        client.cancel(job)
        stack.wait_job(job.name, timeout=1800)  # CANCELLED, having written no row
    staged = stack.storage_client().bucket(bucket).blob(f"bench/{JOB_ID}/input.jsonl")
    moment = datetime.now(UTC).isoformat()
    data = io.BytesIO()
    with staged.open("rb") as lines:
        for i, line in enumerate(lines):
            given = json.loads(line)
            row = {
                "custom_id": json.dumps(given["custom_id"]),
                "request": json.dumps(given["request"]),
                "response": json.dumps(_answer(i)),
                "status": "",
                "processed_time": moment,
            }
            data.write(json.dumps(row).encode() + b"\n")
    data.seek(0)
    # The columns the local Vertex writes for a Claude JSONL input (``emulator/_bq_run.py``).
    schema = [bigquery.SchemaField(name, kind) for name, kind in COLUMNS]
    target = bq.create_table(bigquery.Table(table, schema), exists_ok=True)
    config = bigquery.LoadJobConfig(
        schema=target.schema,
        source_format=bigquery.SourceFormat.NEWLINE_DELIMITED_JSON,
        write_disposition=bigquery.WriteDisposition.WRITE_APPEND,
    )
    started = time.perf_counter()
    bq.load_table_from_file(data, target, job_config=config).result()  # resumable: no size
    loaded = time.perf_counter() - started
    rows = bq.get_table(table).num_rows
    assert rows == n, f"the load wrote {rows} rows, not {n}"
    bq.close()
    return table, loaded


# -- a reader, in its own process ---------------------------------------------------------------


def _text(value: Any) -> Any:
    """What a hand-written reader does with a cell: ``json.loads`` it when it is JSON text."""
    return json.loads(value) if isinstance(value, str) and value[:1] in ('"', "{", "[") else value


def _read(reader: str, table: str) -> int:
    """Read every row of the job's results as ``reader`` does; the rows seen."""
    if reader == "vertexbatch":
        import vertexbatch as vb

        with vb.Client.from_env() as client:
            job = client.find(JOB_ID)
            assert job is not None
            return sum(1 for result in client.results(job) if result.key)
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
        seen = 0
        for row in rows:
            cells = {name: _text(value) for name, value in row.items()}
            seen += bool(cells)
        return seen
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
    started = time.perf_counter()
    rows = _read(reader, table)
    seconds = time.perf_counter() - started
    peak = _peak()
    return {"rows": rows, "seconds": seconds, "peak": peak, "growth": peak - before, "reset": reset}


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
        table, loaded = _job_and_table(stack, bucket, n)
        env = stack.environment(bucket, prefix="bench")
        for repeat in range(repeats):
            order = READERS[repeat % len(READERS) :] + READERS[: repeat % len(READERS)]
            for reader in order:
                figures = _measured(reader, table, env, smoke)
                if figures["rows"] != n:
                    raise RuntimeError(f"reader {reader} saw {figures['rows']} rows, not {n}")
                rounds[reader].append(figures)
                _log(f"N={n:,} round {repeat + 1}: {reader} {figures['seconds']:.2f} s")
    return {"n": n, "repeats": repeats, "load_seconds": loaded, "rounds": rounds}


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
        f"Results of a {n:,}-row BigQuery output table (load job: "
        f"{figures['load_seconds']:.1f} s), medians of {figures['repeats']}, each reader in its "
        "own process:",
        "",
        "| reader | seconds | rows/s | peak RSS | RSS growth | vertexbatch time / this | "
        "vertexbatch peak / this |",
        "|---|---|---|---|---|---|---|",
    ]
    names = {
        "vertexbatch": "vertexbatch `client.results(job)` (Storage Read API, correlated)",
        "list_rows": "by hand: `list_rows`, `json.loads` per cell",
        "query": "by hand: a query, `json.loads` per cell",
    }
    for reader in READERS:
        seconds = median(reader, "seconds")
        lines.append(
            f"| {names[reader]} | {seconds:.2f} s | {n / seconds:,.0f} | "
            f"{median(reader, 'peak') / MB:.0f} MB | {median(reader, 'growth') / MB:.0f} MB | "
            f"{ratio(reader, 'seconds')} | {ratio(reader, 'peak')} |"
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
