"""Smoke runs of the TLS benchmark, so it keeps working (no figure asserted)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _benchmark(module: str, *args: str) -> str:
    """Run ``python -m benchmarks.<module> args`` from the repository; its standard output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{module}", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_tls_benchmark_times_uploads_and_reads_over_https() -> None:
    """3,000 lines over fake-gcs-server's HTTPS, one round: the four steps, each timed."""
    out = _benchmark("tls", "--n", "3000", "--repeats", "1")
    assert out.startswith("TLS (fake-gcs-server -scheme https), N=3000 Claude lines"), out
    steps = re.findall(r"^\| ([a-z ,-]+) \| [\d.]+ \| [\d.]+ \|$", out, re.MULTILINE)
    assert steps == [
        "upload, naive", "upload, one create-only request", "read, naive", "read, ranges"
    ], out  # fmt: skip
