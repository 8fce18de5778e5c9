"""tests/schedule.py: under xdist the slow tests are shared among the workers, not queued on one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import child_pytest

# Four slow tests listed last in the file (the plugin runs them first) and 36 short ones; each
# worker records the tests it ran, in order.
SUITE = """
import os
import pytest

def _ran(name):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(os.environ["RAN_DIR"], worker), "a") as f:
        f.write(name + "\\n")

@pytest.mark.parametrize("n", range(36))
def test_short(n):
    _ran(f"short-{n}")

@pytest.mark.slow
@pytest.mark.parametrize("n", range(4))
def test_slow(n):
    _ran(f"slow-{n}")
"""


@pytest.mark.processes
def test_the_slow_tests_start_first_on_every_worker(tmp_path: Path) -> None:
    (tmp_path / "test_mixed.py").write_text(SUITE)
    ran = tmp_path / "ran"
    ran.mkdir()
    done = child_pytest(
        tmp_path,
        *("-p", "tests.schedule", "-n", "2", "-W", "ignore::pytest.PytestUnknownMarkWarning"),
        RAN_DIR=str(ran),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ran_by = {p.name: p.read_text().split() for p in ran.iterdir()}
    assert sorted(ran_by) == ["gw0", "gw1"]
    assert sum(len(names) for names in ran_by.values()) == 40
    # Each worker starts with two slow tests. xdist's default (a block of a quarter of each
    # worker's share) would give gw0 all four; the files' order would start them last.
    for names in ran_by.values():
        assert [name.split("-")[0] for name in names[:2]] == ["slow", "slow"], ran_by
