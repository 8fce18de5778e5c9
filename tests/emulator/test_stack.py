"""LocalStack start and stop, the foreground runner, and the stack's helpers."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from google.cloud import aiplatform_v1, storage

from vertexbatch.emulator import LocalStack, run_foreground


def refuses(endpoint: str) -> bool:
    """Whether nothing listens at http://host:port any more."""
    parts = urlsplit(endpoint)
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((parts.hostname or "", parts.port or 0)) != 0


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_start_and_stop_leave_nothing_behind() -> None:
    """A stack serves on loopback, and stopping it leaves no process or port behind.

    How long starting and stopping take is measured by the benchmark command, not here.
    """
    with LocalStack() as stack:
        vertex, gcs, pid = stack.vertex_endpoint, stack.storage_endpoint, stack.gcs_pid
        assert vertex.startswith("http://127.0.0.1:") and gcs.startswith("http://127.0.0.1:")
        stack.create_bucket("quick-bucket")
    assert gone(pid) and refuses(vertex) and refuses(gcs)


def test_stop_when_the_body_raises() -> None:
    """Leaving the with block by an exception still stops both servers."""
    with pytest.raises(RuntimeError, match="boom"), LocalStack() as stack:
        pid, vertex, gcs = stack.gcs_pid, stack.vertex_endpoint, stack.storage_endpoint
        raise RuntimeError("boom")
    assert gone(pid) and refuses(vertex) and refuses(gcs)
    with pytest.raises(RuntimeError, match="not started"):
        stack.vertex_endpoint  # noqa: B018


def test_stop_with_held_and_running_jobs(lab_factory: Any) -> None:
    """Stopping with jobs held or mid-run is quick and raises nothing in their threads."""
    with LocalStack() as stack:
        stack.create_bucket("busy-bucket")
        lab = lab_factory(stack, "busy-bucket")
        stack.faults.hold(state="PENDING")
        lab.create()
        stack.faults.reset()
        stack.faults.hold(state="RUNNING", after_rows=1)
        lab.create([lab.gemini_line("a"), lab.gemini_line("b")])
        pid = stack.gcs_pid
    assert gone(pid)


def test_clients_and_helpers(lab: Any, tmp_path: Path) -> None:
    """jobs_client/storage_client are the real clients; create_bucket is idempotent."""
    stack = lab.stack
    assert isinstance(stack.jobs_client(), aiplatform_v1.JobServiceClient)
    assert isinstance(stack.storage_client(), storage.Client)
    stack.create_bucket(lab.bucket)
    assert stack.storage_client().lookup_bucket(lab.bucket) is not None
    assert (stack.project, stack.location) == ("local-project", "us-central1")
    with pytest.raises(KeyError):
        stack.wait_job("1234567890123456789")
    stack.faults.hold(state="PENDING")
    job = lab.create()
    with pytest.raises(TimeoutError):
        stack.wait_job(job.name, timeout=0.05)
    stack.reset_calls()
    lab.jobs.get_batch_prediction_job(name=job.name)
    assert stack.calls() == {"get": 1}
    stack.reset_calls()
    assert stack.calls() == {}
    assert any(j["name"] == job.name for j in stack.jobs())


def test_log_dir(tmp_path: Path) -> None:
    """log_dir receives fake-gcs-server's log file and is kept after stop."""
    with LocalStack(log_dir=tmp_path / "logs"):
        pass
    assert (tmp_path / "logs" / "fake-gcs-server.log").exists()


def test_client_smoke(lab: Any) -> None:
    """stack.client() builds a vertexbatch.Client when the library has one."""
    import vertexbatch

    if not hasattr(vertexbatch, "Client"):
        pytest.skip("vertexbatch.Client does not exist yet")
    client = lab.stack.client(bucket=lab.bucket, prefix="jobs")
    assert client is not None


class FlushedOutput(io.StringIO):
    """An output that signals its first flush (run_foreground flushes after the exports)."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed = threading.Event()

    def flush(self) -> None:
        super().flush()
        self.flushed.set()


def test_run_foreground_in_a_thread() -> None:
    """run_foreground prints the environment and stops when asked."""
    out = FlushedOutput()
    stop = threading.Event()
    runner = threading.Thread(target=run_foreground, kwargs={"out": out, "stop": stop})
    runner.start()
    try:
        assert out.flushed.wait(10)
    finally:
        stop.set()
        runner.join(10)
    assert not runner.is_alive()
    lines = out.getvalue().splitlines()
    assert [line.split("=")[0] for line in lines] == [
        "export STORAGE_EMULATOR_HOST",
        "export VERTEXBATCH_VERTEX_ENDPOINT",
        "export GOOGLE_CLOUD_PROJECT",
        "export GOOGLE_CLOUD_LOCATION",
        "export VERTEXBATCH_BUCKET",
    ]
    assert refuses(lines[0].split("=", 1)[1]) and refuses(lines[1].split("=", 1)[1])


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
            credentials=__import__(
                "google.auth.credentials"
            ).auth.credentials.AnonymousCredentials(),
            client_options={"api_endpoint": env["STORAGE_EMULATOR_HOST"]},
        )
        assert gcs.lookup_bucket("fg-bucket") is not None
        jobs = aiplatform_v1.JobServiceClient(
            transport="rest",
            credentials=__import__(
                "google.auth.credentials"
            ).auth.credentials.AnonymousCredentials(),
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


def test_timing_is_validated() -> None:
    """Negative timings are refused."""
    from vertexbatch.emulator import Timing

    for bad in (
        {"pending_seconds": -1},
        {"row_seconds": -1},
        {"expire_seconds": -1},
        {"incremental_every": -1},
    ):
        with pytest.raises(ValueError):
            Timing(**bad)  # type: ignore[arg-type]
