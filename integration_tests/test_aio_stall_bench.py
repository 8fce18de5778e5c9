"""Smoke run of `python -m benchmarks.run --only stall`, so it keeps working."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_stall_benchmark_prints_its_figures() -> None:
    """The stall benchmark at N=50 prints the longest gap of each phase against 100 ms."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--only", "stall", "--stall-size", "50"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "# python -m benchmarks.run --only stall --stall-size 50"
    assert re.fullmatch(
        r"Event loop \(client\.aio, N=50, 5 ms ticker\): longest gap [\d.]+ ms during submit "
        r"\([\d.]+ s\), [\d.]+ ms during results \(50 results, [\d.]+ s\); target 100 ms: "
        r"(MET|MISS)",
        lines[1],
    ), lines
