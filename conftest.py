"""Fixtures of the whole suite (tests/ and integration_tests/): one local stack per session.

``local_stack``, ``stack`` and ``bucket`` are the ones docs/testing.md tells users to copy
(``docs/examples/testing/conftest.py``), imported from there so the page shows what the suite
runs: each test gets the stack with its faults, job options and call counts reset, and a fresh
bucket; afterwards its faults are reset again and every job settles. This file adds the client
under the prefix ``jobs``, ``stack_env``, ``bigquery_local`` (a second stack, with BigQuery) and
``docs_site`` (the docs site, built once a session for the tests that check it).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

import vertexbatch as vb
from vertexbatch.emulator import LocalStack

# google-cloud-storage 3.17 looks a bucket up in a background thread after a cache miss and after
# a 404 (its App-centric Observability span attributes): requests vertexbatch never made, whose
# number follows thread timing. Tests that count a step's GCS requests count vertexbatch's, so the
# suite (and the processes it starts) turns the lookups off; docs/platform-facts.md says how.
os.environ.setdefault("DISABLE_GCS_PYTHON_CLIENT_OTEL_BUCKET_METADATA", "true")

# The suite starts hundreds of interpreters (the stacks, the command, examples, benchmarks) and
# four xdist workers that each collect every test module. Where the environment sets
# PYTHONDONTWRITEBYTECODE (this team's machines do), each of them compiled vertexbatch from source
# and each worker rewrote every test module's asserts again: about a tenth of the suite's CPU.
# The suite caches bytecode (in the checkout's gitignored __pycache__ folders) whatever it says.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

if TYPE_CHECKING:
    from tools.check_diagrams import Built

_spec = importlib.util.spec_from_file_location(
    "vertexbatch_docs_testing_conftest",
    Path(__file__).parent / "docs" / "examples" / "testing" / "conftest.py",
)
assert _spec is not None and _spec.loader is not None
_shown = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shown)

# The fast tier: a test that reaches neither stack (directly or through another fixture), is
# not marked slow and starts no process of its own is marked ``fast``; `pytest -m fast` runs
# them alone (README.md, "Develop"). A test that starts a process anyway fails in the fast tier
# and is marked ``processes``, so the marker keeps telling the truth.
SERVERS = {"local_stack", "bigquery_local"}

# tests.schedule: the order tests run in and how xdist shares them (heaviest first, one at a time);
# tests.cpu_report: VERTEXBATCH_CPU_REPORT=FILE records each test's CPU (where the time goes);
# tests.install_fixtures: the install tests' wheel and venv, built once a run for all workers.
pytest_plugins = ("tests.cpu_report", "tests.install_fixtures", "tests.schedule")


# Property tests (hypothesis): how many examples each draws is ``tests.helpers.examples``, set
# here from the run. The test command draws a tenth of each test's full count, the fast tier a
# fiftieth, both derandomized (the same examples every run: a red run is a change, never a
# draw); `--deep` (a scheduled run) draws the full counts, random, and keeps what fails in
# .hypothesis/ to replay first next time. No deadline: the machine is shared, and a deadline
# would fail a test on its load.
settings.register_profile("vertexbatch", deadline=None, derandomize=True, print_blob=True)
settings.register_profile("vertexbatch-deep", deadline=None, print_blob=True)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--deep",
        action="store_true",
        help="property tests draw their full counts, random (tests.helpers.examples)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """The property tests' profile: deep, the fast tier's or the test command's."""
    from tests import helpers

    if config.getoption("deep"):
        helpers.PROFILE = "deep"
    elif config.getoption("markexpr", "") == "fast":
        helpers.PROFILE = "fast"
    settings.load_profile("vertexbatch-deep" if helpers.PROFILE == "deep" else "vertexbatch")


def pytest_sessionfinish() -> None:
    """The server the tests' child processes fork from (``tests.helpers.child_processes``) is
    stopped and reaped before the worker ends: its CPU is counted in the run's (``time``, a
    CI's)."""
    from tests.helpers import stop_child_processes

    stop_child_processes()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & SERVERS or any(item.iter_markers("slow")):
            continue
        if not any(item.iter_markers("processes")):
            item.add_marker(pytest.mark.fast)


@pytest.fixture(autouse=True)
def _fast_tests_start_no_process(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within a fast-marked test, starting a process fails, naming the marker to use."""
    if request.node.get_closest_marker("fast") is None:
        return

    def refuse(self: object, *args: object, **kwargs: object) -> None:
        raise AssertionError(
            f"{request.node.nodeid} starts a process: mark it @pytest.mark.processes, "
            "as it cannot be in the fast tier"
        )

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)


local_stack = _shown.local_stack
stack = _shown.stack
bucket = _shown.bucket


@pytest.fixture(scope="session")
def bigquery_local() -> Iterator[LocalStack]:
    """One stack with BigQuery (bqemulator) for the session's BigQuery tests (tests/emulator/,
    tests/bigquery/); the default ``stack`` starts none."""
    with LocalStack(bigquery=True) as stack:
        yield stack


@pytest.fixture
def counted(stack: LocalStack, bucket: str) -> Iterator[tuple[vb.Client, list[str]]]:
    """A client of the local stack whose GCS requests pass a gate that records each one
    ("METHOD path"): a test shows that nothing reached GCS (before any cloud call)."""
    from email.message import Message

    from tests.gcs_gate import Spoil, gate
    from tests.helpers import local_client

    seen: list[str] = []

    def record(method: str, path: str, headers: Message) -> Spoil | None:
        seen.append(f"{method} {path}")
        return None

    with gate(stack.storage_endpoint, record) as url:
        yield local_client(stack, bucket, storage_endpoint=url), seen


@pytest.fixture
def client(stack: LocalStack, bucket: str) -> vb.Client:
    """A vertexbatch client on the stack and this test's bucket, retrying without waiting."""
    return stack.client(bucket=bucket, prefix="jobs", retry=vb.RetryPolicy.no_wait())


@pytest.fixture
def stack_env(stack: LocalStack, bucket: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point the environment at the stack and this test's bucket; returns the bucket."""
    for name, value in stack.environment(bucket, prefix="jobs").items():
        monkeypatch.setenv(name, value)
    return bucket


@pytest.fixture(scope="session")
def docs_site(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The docs site, built once a session by `mkdocs build --strict` in a process of its own,
    with its exit status and log: integration_tests/test_docs_build.py checks the build and the
    pages, tests/docs/test_docs_diagrams.py the diagrams on the same pages (a build takes seconds,
    most of them mkdocstrings rendering the API reference)."""
    from tools.check_diagrams import build_site

    # Within the 120 s the build's own test allows, whichever test builds it first.
    return build_site(tmp_path_factory.mktemp("docs") / "site", timeout=110)
