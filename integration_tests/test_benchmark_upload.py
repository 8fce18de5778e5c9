"""Smoke runs of the upload-chunk and TLS benchmarks, so they keep working (no figure asserted)."""

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
def test_upload_chunk_benchmark_times_each_chunk() -> None:
    """12,000 Claude requests (about 19 MB) in 4 MiB chunks: each timed, the re-checksum fitted."""
    out = _benchmark("upload_chunks", "--n", "12000", "--repeats", "1", "--chunk-mib", "4")
    assert out.startswith("claude N=12000, 4 MiB chunks"), out
    summary = re.search(
        r"input: (\d+) chunk requests, [\d.]+ s in all \(the last [\d.]+ s\), against [\d.]+ s "
        r"for the same bytes by upload_from_string \((\d+) request\(s\)\)",
        out,
    )
    assert summary, out
    chunks = re.findall(r"input\.jsonl +at +[\d.]+ s: [\d.]+ s for +([\d.]+) MiB", out)
    assert len(chunks) == int(summary.group(1)) == 5, out
    assert chunks[:4] == ["4.0"] * 4, out
    assert summary.group(2) == "1", out  # under 100 MiB: google-cloud-storage's one request
    assert re.search(r"re-checksum: -?[\d.]+ s per GiB already stored, per chunk", out), out


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_tls_benchmark_times_uploads_and_reads_over_https() -> None:
    """3,000 lines over fake-gcs-server's HTTPS, one round: the five steps, each timed."""
    out = _benchmark("tls", "--n", "3000", "--repeats", "1")
    assert out.startswith("TLS (fake-gcs-server -scheme https), N=3000 Claude lines"), out
    steps = re.findall(r"^\| ([a-z ,]+) \| [\d.]+ \| [\d.]+ \|$", out, re.MULTILINE)
    assert steps == [
        "upload, naive", "upload, writer yields", "upload, no yield", "read, naive", "read, ranges"
    ], out  # fmt: skip
