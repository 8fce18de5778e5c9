"""Smoke run of the run-step calls benchmark, so it keeps working."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import run_calls
from integration_tests.test_benchmarks import _table

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_run_calls_benchmark_prints_the_same_calls_at_every_size() -> None:
    """`python -m benchmarks.run_calls --sizes 10,30` prints every step at both sizes, each
    step making the same Vertex calls at both."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.run_calls", "--sizes", "10,30"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("# python -m benchmarks.run_calls --sizes 10,30")
    rows = _table(proc.stdout, run_calls.HEADERS)
    assert [r[0] for r in rows] == ["10"] * 5 + ["30"] * 5
    assert all(len(r) == len(run_calls.HEADERS) and all(r) for r in rows)
    assert [r[1:4] for r in rows[:5]] == [r[1:4] for r in rows[5:]]
    assert rows[0][3] == "list 1"
