"""Smoke run of the benchmark command, so it keeps working (not timed: no figure asserted).

The runs take ``--smoke`` (benchmarks/run.py): the same tables from the same code, each
measurement in the command's own process instead of a fresh child, the cold start without its
thrown-away round and each of its commands run in a fork of one process that imported their
libraries once (benchmarks/cold_start.py) instead of a fresh interpreter. The figures mean
nothing; the tables must be whole.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import cold_start, run, workload

ROOT = Path(__file__).resolve().parents[1]
PROVIDERS = ("claude", "gemini", "embeddings")
# Every column of each table, spelled out: a column left out of a table (its header and its
# cells) fails the test, where comparing with run.py's own lists would not.
STAGING = [
    "provider", "N", "input MB", "raw s", "vb s", "vb/raw", "raw CPU s", "vb CPU s", "CPU vb/raw",
    "raw RSS+ MB", "vb RSS+ MB", "target (<=1.3x, <=150 MB)",
]  # fmt: skip
RESULTS = [
    "provider", "N", "output MB", "raw s", "vb s", "raw lines/s", "vb lines/s", "vb/raw",
    "raw CPU s", "vb CPU s", "CPU vb/raw", "raw RSS+ MB", "vb RSS+ MB", "key map MB",
    "vb RSS+ beyond map MB", "target (<=2x, <=150 MB)",
]  # fmt: skip
NAIVE = [
    "provider", "N", "step", "naive s", "vb s", "vb/naive", "naive peak RSS MB",
    "vb peak RSS MB", "RSS vb/naive", "naive CPU s", "vb CPU s", "naive GCS CPU s",
    "vb GCS CPU s", "target", "verdict",
]  # fmt: skip
CALLS = ["provider", "N", "call", "Vertex", "GCS", "GCS by kind", "output read once"]
COLD = [
    "command", "wall s", "CPU s", "peak RSS MB", "wall / floor", "CPU / floor", "RSS / floor",
    "target", "verdict",
]  # fmt: skip


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _table(output: str, headers: list[str]) -> list[list[str]]:
    """The rows of the Markdown table whose header row is exactly ``headers``."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and _cells(line) == headers:
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append(_cells(row))
            return rows
    raise AssertionError(f"no table with columns {headers} in:\n{output}")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_benchmark_command_prints_every_table_and_column() -> None:
    """`python -m benchmarks.run --smoke` at N=20, one repeat, prints five tables, all cells
    filled, with a row for each provider: Claude, Gemini and embeddings (issue 41)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [
            sys.executable, "-m", "benchmarks.run",
            "--sizes", "20", "--repeats", "1", "--providers", ",".join(PROVIDERS),
            "--call-sizes", "",
            "--import-repeats", "1", "--smoke",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert out.startswith("# python -m benchmarks.run --sizes 20 --repeats 1")
    assert "--import-repeats 1 --smoke  (" in out.splitlines()[0]  # not to be taken as figures
    staging = _table(out, STAGING)
    results = _table(out, RESULTS)
    calls = _table(out, CALLS)
    naive = _table(out, NAIVE)
    assert [r[:3] for r in naive] == [
        [p, "20", step] for p in PROVIDERS for step in ("staging", "results")
    ]
    assert all(len(r) == len(NAIVE) and all(r) for r in naive)
    assert all(r[-1] in ("ok", "MISS") for r in naive)
    cpu = NAIVE.index("naive CPU s")
    if Path("/proc/self/stat").exists():  # the server's CPU is read from /proc
        assert all(0 <= float(cell) < 60 for r in naive for cell in r[cpu : cpu + 4]), naive
    assert [r[:2] for r in staging] == [[p, "20"] for p in PROVIDERS]
    assert [r[:2] for r in results] == [[p, "20"] for p in PROVIDERS]
    for row, headers in [(r, STAGING) for r in staging] + [(r, RESULTS) for r in results]:
        assert len(row) == len(headers) and all(row), row
        assert row[-1] in ("ok", "MISS")
    assert {(r[0], r[2]) for r in calls} == {
        (p, op) for p in PROVIDERS for op in ("submit", "status", "results")
    }
    status = [r for r in calls if r[2] == "status"]
    assert all(r[3].startswith("1 (get 1)") and r[4] == "0" for r in status)
    assert all(r[6].startswith("yes") for r in calls if r[2] == "results")
    cold = _table(out, COLD)
    assert [r[0] for r in cold] == [c.name for c in cold_start.COMMANDS]
    assert all(len(r) == len(COLD) and all(r) for r in cold)
    for row, command in zip(cold, cold_start.COMMANDS, strict=True):
        assert row[-1] in (("-",) if command.target is None else ("MET", "MISS"))


def test_the_default_providers_include_embeddings_and_cold_refuses_them() -> None:
    """Without --providers the command measures embeddings too; --only cold has no embeddings
    row and says so rather than failing mid-run; an unknown provider is named."""
    assert run.parse_args([]).providers == list(PROVIDERS)
    assert run.parse_args(["--providers", "embeddings"]).providers == ["embeddings"]
    assert run.parse_args(["--only", "cold"]).providers == ["claude", "gemini"]
    with pytest.raises(argparse.ArgumentTypeError, match="one or more of claude, gemini, emb"):
        run._providers("claude,mistral")
    with pytest.raises(SystemExit):
        run.parse_args(["--only", "cold", "--providers", "gemini,embeddings"])


def test_an_embeddings_pair_that_missed_vectors_is_an_error() -> None:
    """The results pair of an embeddings case must take out every vector on every side."""
    whole = 3 * workload.EMBEDDING_DIMENSIONS
    run._same_values(
        "embeddings", 3, {"results_vb": {"values": whole}, "results_naive": {"values": whole}}
    )
    with pytest.raises(RuntimeError, match="vector values"):
        run._same_values(
            "embeddings", 3, {"results_vb": {"values": whole}, "results_naive": {"values": 0}}
        )
    run._same_values("claude", 3, {"results_vb": {"values": 0}})  # chat rows carry none


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_only_import_prints_the_cold_start_alone() -> None:
    """`--only import` measures the cold start without starting a stack: one table."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.run",
            "--only",
            "import",
            "--import-repeats",
            "1",
            "--smoke",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith(
        "# python -m benchmarks.run --only import --import-repeats 1 --smoke  ("
    )
    assert len(_table(proc.stdout, COLD)) == len(cold_start.COMMANDS)
    assert "Staging" not in proc.stdout and "Local stack" not in proc.stdout


_FORKED = """
import sys
from benchmarks.cold_start import _run_once
checked = ("-c", "import sys; assert sys.argv == ['-c', 'a']", "a")
wall, cpu, rss = _run_once(checked, {}, forked=True)
assert wall > 0 and rss > 0, (wall, rss)
for code in ("1 / 0", "import sys; sys.exit(3)"):
    try:
        _run_once(("-c", code), {}, forked=True)
    except RuntimeError as error:
        print(str(error).splitlines()[-1])
    else:
        raise AssertionError(code)
"""


@pytest.mark.processes
@pytest.mark.timeout(60)
def test_a_smoke_cold_start_runs_each_command_in_a_fork_as_python_c_would() -> None:
    """`--smoke` runs each cold-start command's code in a fork of the measuring process with
    the command's arguments; one that raises or exits non-zero is an error, as it is in a fresh
    interpreter (the measuring process is a process of its own here, as in the benchmark)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", _FORKED], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == [
        "ZeroDivisionError: division by zero",  # its traceback's last line
        "python -c 'import sys; sys.exit(3)' failed:",  # its exit status, no traceback
    ], proc.stdout
