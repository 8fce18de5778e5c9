"""Smoke run of the BigQuery results benchmark, so it keeps working (no figure asserted).

The run takes ``--smoke`` (benchmarks/bigquery_results.py): every reader reads every row through
the same code, in the command's own process instead of a fresh child each.
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
    """`python -m benchmarks.run --only bigquery --smoke` at N=10: every reader saw all 10 rows
    (the benchmark refuses to print otherwise) and has its row of figures."""
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
    assert "Results of a 10-row BigQuery output table" in out
    rows = [line for line in out.splitlines() if line.startswith("| ") and " s |" in line]
    assert len(rows) == 3, out
    assert rows[0].startswith("| vertexbatch `client.results(job)`")
    assert all(" MB | " in row and row.endswith("x |") for row in rows)
