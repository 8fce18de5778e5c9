"""Smoke run of the cold-process benchmark, so it keeps working (no figure asserted).

The run takes ``--smoke`` (benchmarks/cold_process.py): every step and call of each provider,
the same work on each side, from the same code, but in one long-lived child a side and provider
(its imports measured first, while they are cold) instead of a fresh interpreter a measurement:
four interpreters where the full run starts eighteen.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import cold_process
from benchmarks.children import Served

ROOT = Path(__file__).resolve().parents[1]


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _table(output: str, headers: list[str]) -> list[list[str]]:
    """The rows of the Markdown table whose header row is exactly ``headers``."""
    lines = output.splitlines()
    found = [i for i, line in enumerate(lines) if line.startswith("|") and _cells(line) == headers]
    assert found, f"no table with columns {headers} in:\n{output}"
    rows = []
    for line in lines[found[0] + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(_cells(line))
    return rows


@pytest.mark.processes
@pytest.mark.timeout(900)
def test_only_cold_prints_every_step_and_call_of_each_provider() -> None:
    """`--only cold --smoke` at N=20, one round: a row per step (imports, staging, results) and
    per call (listing, manifest, key map), both providers, every cell filled."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--only", "cold", "--sizes", "20",
         "--repeats", "1", "--providers", "claude,gemini", "--line-bytes", "600", "--smoke"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert out.startswith(
        "# python -m benchmarks.run --only cold --sizes 20 --repeats 1 --providers claude,gemini "
        "--line-bytes 600 --smoke  ("
    )  # and says --smoke: not to be taken as figures
    steps = _table(out, cold_process.HEADERS)
    assert [r[:3] for r in steps] == [
        [p, "20", step]
        for p in ("claude", "gemini")
        for step in ("import + clients", "staging", "results")
    ]
    for row in steps:
        assert len(row) == len(cold_process.HEADERS) and all(row), row
        figures = [float(cell) for cell in row[3:12]]
        assert all(x > 0 for x in figures), row  # every time, CPU time and peak RSS measured
        assert row[-1] in (("-",) if row[2] == "import + clients" else ("ok", "MISS")), row
    calls = _table(out, cold_process.CALLS_HEADERS)
    assert [r[:4] for r in calls] == [
        [p, "20", call, step]
        for p in ("claude", "gemini")
        for call, step in (
            ("listing (an id's jobs)", "staging"),
            ("manifest read", "staging"),
            ("key map read", "results"),
        )
    ]
    assert all(len(r) == len(cold_process.CALLS_HEADERS) and all(r) for r in calls)
    assert all(float(r[4]) > 0 and float(r[5]) >= 0 for r in calls), calls


@pytest.mark.processes
def test_a_served_child_that_fails_is_an_error_with_its_stderr() -> None:
    """A smoke run's long-lived child that dies on a measurement is an error naming the
    measurement, its exit code and the tail of its stderr, not a wait or a silent row."""
    served = Served("benchmarks.cold_child", "cold measurement")
    try:
        with pytest.raises(RuntimeError, match=r"(?s)cold measurement nope \(N=3\) failed with "
                           r"exit code 1:\n.*KeyError: 'nope'"):  # fmt: skip
            served({"op": "nope", "n": 3, "line_bytes": 600})
    finally:
        served.close()
