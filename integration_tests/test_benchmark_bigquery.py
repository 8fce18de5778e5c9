"""Smoke run of the BigQuery results benchmark, so it keeps working (no figure asserted).

The run takes ``--smoke`` (benchmarks/bigquery_results.py): every reader reads every row through
the same code, in the command's own process instead of a fresh child each. The stack runs the
job to SUCCEEDED and it reports its output table; the benchmark stops unless every reader yields
every answer with the same text, so a vertexbatch side that reads no row fails this test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_bigquery_benchmark_prints_a_row_per_reader() -> None:
    """`python -m benchmarks.run --only bigquery --smoke` at N=10: every reader yielded all 10
    answers with the same characters of text (the benchmark refuses to print otherwise) and
    has its row of figures."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--only", "bigquery", "--sizes", "10",
         "--repeats", "1", "--smoke"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert out.startswith("# python -m benchmarks.run --only bigquery --sizes 10 --repeats 1")
    assert " --smoke  (" in out.splitlines()[0]  # not to be taken as figures
    assert "Results of a 10-row BigQuery output table (the stack's job, staged, run and" in out
    assert "every reader yielded 10 answers, " in out
    rows = [line for line in out.splitlines() if line.startswith("| ") and " s |" in line]
    assert len(rows) == 3, out
    assert rows[0].startswith("| vertexbatch `client.results(job)`")
    assert all(" MB | " in row and row.endswith("x |") for row in rows)
    assert all(row.count(" s | ") == 2 for row in rows)  # wall and CPU seconds
