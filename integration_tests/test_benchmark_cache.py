"""Smoke run of the answer-cache benchmark, so it keeps working (no figure asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_cache_benchmark_prints_its_table() -> None:
    """`python -m benchmarks.run --only cache` at N=40, one repeat, prints every row with a
    figure."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--only", "cache", "--sizes", "40",
         "--repeats", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert out.startswith("# python -m benchmarks.run --only cache --sizes 40 --repeats 1")
    rows = [line for line in out.splitlines() if line.startswith("| ") and " s |" in line]
    assert len(rows) == 9, out
    assert "filled by 40 jobs" in out
    assert "lookup of N requests against N entries" in out and "target <= 1.0" in out
    assert "submit(dedupe=True), the same: 4 lines staged" in out
