"""Smoke run of the tasks benchmark, so it keeps working (not timed: no figure asserted).

The run takes ``--smoke`` (benchmarks/run_tasks.py): the same staging from 1 and 2 task
processes, forked from one forkserver that imported the client's libraries once instead of
three spawned interpreters that each import them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import run_tasks

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_tasks_benchmark_prints_one_row_per_task_count() -> None:
    """`python -m benchmarks.run --only tasks --sizes 20 --smoke` prints the 1 and 2 task rows."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--only", "tasks", "--sizes", "20",
         "--repeats", "1", "--smoke"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("# python -m benchmarks.run_tasks --n 20 --tasks 1,2")
    assert " --smoke  (" in lines[0]  # not to be taken as figures
    header = lines.index("| " + " | ".join(run_tasks.HEADERS) + " |")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[header + 2 :]]
    assert [r[:2] for r in rows] == [["1", "20"], ["2", "20"]]
    assert all(cell for r in rows for cell in r) and rows[0][5] == "1.00x"
