"""The suite's CPU report (tests/cpu_report.py) counts a test's own CPU and its ended children's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import cpu_report
from tests.helpers import child_pytest

BUSY = """
import subprocess, sys

import pytest


@pytest.fixture(scope="session")
def server():
    child = subprocess.Popen([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"])
    yield child
    child.wait()  # a session's server, stopped after the last test


def test_uses_a_server(server):
    pass


def test_spins():
    sum(i * i for i in range(3_000_000))


def test_starts_a_child():
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)


def test_idle():
    pass
"""


@pytest.mark.processes
def test_each_test_gets_its_own_and_its_childrens_cpu(tmp_path: Path) -> None:
    (tmp_path / "test_busy.py").write_text(BUSY)
    report = tmp_path / "cpu.jsonl"
    done = child_pytest(
        tmp_path, "-p", "tests.cpu_report", "-p", "no:randomly", **{cpu_report.ENV: str(report)}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r["test"].split("::")[1]: r for r in map(json.loads, report.read_text().splitlines())}
    assert set(rows) == {"test_uses_a_server", "test_spins", "test_starts_a_child", "test_idle"}
    assert rows["test_spins"]["cpu"] > 0.05 and rows["test_spins"]["children"] == 0
    assert rows["test_starts_a_child"]["children"] > 0.05
    assert rows["test_idle"]["cpu"] < rows["test_spins"]["cpu"]
    assert all(r["wall"] >= r["cpu"] * 0.5 for r in rows.values())  # wall time kept too
    # The session's server ended in the last test's tear-down: kept apart, not that test's.
    assert rows["test_idle"]["servers"] > 0.05 and rows["test_idle"]["children"] < 0.05
    assert [name for name, r in rows.items() if "servers" in r] == ["test_idle"]
    text = cpu_report.summary(report)
    assert text.startswith("4 tests, ")
    assert "The session's servers" in text and "main, after " in text
    assert "CPU-s per folder:" in text and "Longest in wall time" in text
    assert "main: 4 tests, busy" in text  # the timeline: one worker when run without xdist


def test_the_timeline_shows_a_worker_idle_while_another_finishes(tmp_path: Path) -> None:
    rows = [
        {"test": "t.py::a", "cpu": 1, "children": 0, "wall": 10, "end": 110, "worker": "gw0"},
        {"test": "t.py::b", "cpu": 1, "children": 0, "wall": 100, "end": 200, "worker": "gw1"},
        {"test": "t.py::c", "cpu": 1, "children": 0, "wall": 90, "end": 100, "worker": "gw0"},
    ]
    report = tmp_path / "cpu.jsonl"
    report.write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = cpu_report.summary(report)
    assert "Workers (190 s from the first test's start" in text
    assert "gw0: 2 tests, busy 100 s, idle at the end 90 s" in text
    assert "gw1: 1 tests, busy 100 s, idle at the end 0 s" in text
