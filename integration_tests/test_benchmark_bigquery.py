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


def test_a_job_that_did_not_succeed_or_reports_no_table_is_refused() -> None:
    """The benchmark reads only the table a SUCCEEDED job reports (`outputInfo`): a cancelled
    job, or one without its table, stops it with the state named."""
    from benchmarks.bigquery_results import _reported_table

    info = {"bigqueryOutputDataset": "bq://p.d", "bigqueryOutputTable": "out"}
    assert _reported_table({"state": "JOB_STATE_SUCCEEDED", "outputInfo": info}) == "p.d.out"
    with pytest.raises(RuntimeError, match="ended JOB_STATE_CANCELLED"):
        _reported_table({"state": "JOB_STATE_CANCELLED", "outputInfo": info})
    with pytest.raises(RuntimeError, match="ended JOB_STATE_SUCCEEDED with outputInfo"):
        _reported_table({"state": "JOB_STATE_SUCCEEDED", "outputInfo": {"gcsOutputDirectory": ""}})


def test_every_reader_must_yield_n_answers_and_the_same_text() -> None:
    """A hand-written reader's answer is an answered row's text blocks; a reader with fewer
    answers than N, or other characters of text than the readers before it, stops the run."""
    from benchmarks.bigquery_results import _answer_text, _check

    response = {"content": [{"type": "text", "text": "ab"}, {"type": "tool_use"}]}
    assert _answer_text({"status": "", "response": response}) == "ab"
    assert _answer_text({"status": "error", "response": response}) == ""
    assert _answer_text({"status": "", "response": None}) == ""
    assert _check("vertexbatch", {"answers": 3, "chars": 9}, 3, None) == 9
    with pytest.raises(RuntimeError, match="reader vertexbatch yielded 0 answers, not 3"):
        _check("vertexbatch", {"answers": 0, "chars": 0}, 3, None)
    with pytest.raises(RuntimeError, match="read 8 characters of answer text, not 9"):
        _check("query", {"answers": 3, "chars": 8}, 3, 9)
