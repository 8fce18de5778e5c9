"""The installed ``vertexbatch`` script and ``python -m vertexbatch.emulator``, as processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1, storage

from tests.helpers import CLAUDE, refuses, request_line, write_lines


def _script() -> str:
    found = Path(sys.executable).with_name("vertexbatch")
    return str(found) if found.exists() else str(shutil.which("vertexbatch"))


@pytest.fixture
def emulator_process(tmp_path: Path) -> Iterator[dict[str, str]]:
    """`vertexbatch emulator` in a subprocess; yields the environment it printed."""
    with (
        open(tmp_path / "emulator.err", "w") as errors,
        subprocess.Popen(
            [_script(), "emulator", "--bucket", "e2e-bucket", "--row-seconds", "0"],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        ) as process,
    ):
        try:
            assert process.stdout is not None
            exported = {}
            for _ in range(5):
                line = process.stdout.readline()
                name, _, value = line.strip().removeprefix("export ").partition("=")
                exported[name] = value
            yield exported
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=20) == 0, (tmp_path / "emulator.err").read_text()


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_installed_script_end_to_end(emulator_process: dict[str, str], tmp_path: Path) -> None:
    """The installed script: emulator, then submit, watch and results, each a new process."""
    env = {**os.environ, **emulator_process}
    assert set(emulator_process) >= {"STORAGE_EMULATOR_HOST", "VERTEXBATCH_VERTEX_ENDPOINT"}
    path = write_lines(tmp_path / "in.jsonl", [request_line("a"), request_line("b", "[[vb:drop]]")])

    def script(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [_script(), *args], env=env, capture_output=True, text=True, timeout=60
        )

    submitted = script(
        "submit", "--provider", "claude", "--model", CLAUDE, "--id", "e2e-1", "--json", str(path)
    )
    assert submitted.returncode == 0, submitted.stderr
    assert (
        json.loads(submitted.stdout)["input_uri"] == "gs://e2e-bucket/vertexbatch/e2e-1/input.jsonl"
    )
    watched = script("watch", "e2e-1", "--floor", "0.05")
    assert watched.returncode == 0, watched.stderr
    results = script("results", "e2e-1")
    assert results.returncode == 0, results.stderr
    outcomes = {
        json.loads(line)["key"]: json.loads(line)["outcome"] for line in results.stdout.splitlines()
    }
    assert outcomes == {"a": "ok", "b": "missing"}
    assert "ok 1, refused 0, truncated 0, retryable 0, failed 0, missing 1" in results.stderr


@pytest.mark.slow
def test_python_m_emulator_runs_until_sigterm() -> None:
    """`python -m vertexbatch.emulator` prints exports, serves, and exits cleanly on SIGTERM."""
    process = subprocess.Popen(
        [sys.executable, "-m", "vertexbatch.emulator", "--bucket", "fg-bucket"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        env = dict(
            line.removeprefix("export ").strip().split("=", 1)
            for line in (process.stdout.readline() for _ in range(5))
        )
        assert env["GOOGLE_CLOUD_PROJECT"] == "local-project"
        assert env["GOOGLE_CLOUD_LOCATION"] == "us-central1"
        assert env["VERTEXBATCH_BUCKET"] == "fg-bucket"
        gcs = storage.Client(
            project="local-project",
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": env["STORAGE_EMULATOR_HOST"]},
        )
        assert gcs.lookup_bucket("fg-bucket") is not None
        jobs = aiplatform_v1.JobServiceClient(
            transport="rest",
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": env["VERTEXBATCH_VERTEX_ENDPOINT"]},
        )
        parent = "projects/local-project/locations/us-central1"
        assert list(jobs.list_batch_prediction_jobs(parent=parent)) == []
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    assert refuses(env["STORAGE_EMULATOR_HOST"]) and refuses(env["VERTEXBATCH_VERTEX_ENDPOINT"])
