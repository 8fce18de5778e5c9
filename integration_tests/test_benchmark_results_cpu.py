"""Smoke run of the results CPU benchmark, so it keeps working (no figure asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_results_cpu_prints_a_row_per_provider() -> None:
    """`python -m benchmarks.results_cpu` at N=20 prints each layer's CPU for both providers,
    each layer having read every row (it raises when one did not)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.results_cpu", "--n", "20", "--repeats", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "CPU seconds of one results pass of 20 rows (the least of the rounds)" in out
    rows = [line for line in out.splitlines() if line.startswith(("| claude", "| gemini"))]
    assert len(rows) == 2, out
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 9 and all(c.endswith("s") for c in cells[1:8]), row
        assert cells[8].endswith("x"), row


def test_results_cpu_refuses_a_bad_provider() -> None:
    """A provider it does not know is refused by name before any stack starts."""
    from benchmarks import results_cpu

    with pytest.raises(SystemExit):
        results_cpu.main(["--providers", "claude,mistral"])


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_results_ab_prints_a_row_per_provider() -> None:
    """`python -m benchmarks.results_ab --base .` (this tree against itself) prints
    a row per provider, each side having read every result (N=20, one round: base, then this)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.results_ab", "--base", str(ROOT), "--n", "20",
         "--rounds", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith(("| claude", "| gemini"))]
    assert len(rows) == 2, proc.stdout
    assert all(row.rstrip(" |").endswith("x") for row in rows), rows


def test_results_ab_refuses_a_base_without_the_package(tmp_path: Path) -> None:
    """A --base that holds no vertexbatch package is refused by name."""
    from benchmarks import results_ab

    with pytest.raises(SystemExit, match="no vertexbatch package"):
        results_ab.measure(tmp_path, "claude", 1, 1)
